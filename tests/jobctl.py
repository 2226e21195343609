#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
# jobctl.py: drive an interactive bash on a pseudo-terminal as a user
# would: run pglock on a command, press Ctrl-Z, check that the shell shows
# the job stopped while the lock stays held, then `fg` it to the end.
# With --no-shell, pglock itself leads the terminal's session, as under
# ssh -t or tmux: no job control, so Ctrl-Z must not stop anything for good.
# With --past-lease, the job stays stopped past its lease (--check-interval
# 0.5: 2 s): the command must be KILLed by then, and fg then ends in 75.
#   usage: jobctl.py PGLOCK KEY ID [--no-shell | --past-lease]
# Prints what it saw; exits 0 if every step happened, 1 if not.
import os
import pty
import select
import subprocess
import sys
import time

pglock, key, lock_id = sys.argv[1:4]
seen = b""


def session_ps():
    """The terminal session's processes, for a failure's message."""
    return subprocess.run(["ps", "-o", "pid,ppid,pgid,tpgid,stat,args", "-s",
                           str(pid)], capture_output=True, text=True).stdout


def fg_to_end(typed, status, said):
    """fg the job, type typed (the command's line, if any) and see its
    status; print said."""
    os.write(fd, b"fg\n" + typed)
    if typed:
        expect("FINISHED go")
    expect("$ ")
    os.write(fd, b"echo STATUS=$?\n")
    expect("STATUS=%d" % status)
    print(said)
    os.write(fd, b"exit\n")
    os.waitpid(pid, 0)


def expect(what, timeout=15):
    """Wait for what on the terminal: the text before it."""
    global seen
    deadline = time.monotonic() + timeout
    while what.encode() not in seen:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            sys.exit("jobctl: no %r in %r; the session's processes:\n%s"
                     % (what, seen.decode(errors="replace"), session_ps()))
        try:
            seen += os.read(fd, 4096)
        except OSError:
            sys.exit("jobctl: the shell went away: %r" % seen)
    before, seen = seen.split(what.encode(), 1)
    return before.decode(errors="replace")


def held():
    q = ("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
         " AND ((classid::bigint << 32) | objid::bigint) = %s" % lock_id)
    return subprocess.run(["psql", "-XAtqc", q], capture_output=True,
                          text=True).stdout.strip() == "1"


CMD = "echo ST\"\"ARTED; read x; echo FIN\"\"ISHED $x"
if sys.argv[4:] == ["--no-shell"]:
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(pglock, [pglock, key, "sh", "-c", CMD])
    expect("STARTED")
    os.write(fd, b"\x1a")
    time.sleep(0.5)
    os.write(fd, b"go\n")
    expect("FINISHED go")
    _, st = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(st) != 0:
        sys.exit("jobctl: pglock exited %d" % os.waitstatus_to_exitcode(st))
    print("no job control: Ctrl-Z passed, finished, status 0")
    sys.exit(0)

pid, fd = pty.fork()
if pid == 0:
    os.environ["PS1"] = "$ "
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
expect("$ ")
# The quotes keep the echo of the typed line from matching the output. The
# command forks nothing (dash's vfork child cannot stop cleanly) and reads
# the terminal after fg, so it must have been handed the terminal again.
past = sys.argv[4:] == ["--past-lease"]
os.write(fd, ("%s %s%s sh -c 'echo ST\"\"ARTED $$.; read x; "
              "echo FIN\"\"ISHED $x'\n" % (pglock, "--check-interval 0.5 "
                                          if past else "", key)).encode())
expect("STARTED ")
cmd = int(expect("."))
os.write(fd, b"\x1a")
expect("Stopped")
expect("$ ")
if not held():
    sys.exit("jobctl: the lock was not held while the job was stopped")
print("stopped, lock held")


def alive(p):
    """p has not exited (a zombie has)."""
    try:
        with open("/proc/%d/stat" % p) as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except OSError:
        return False


if past:
    deadline = time.monotonic() + 10
    while alive(cmd) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(cmd):
        sys.exit("jobctl: the stopped command outlived its lease:\n" +
                 session_ps())
    print("stopped past the lease: the command is gone")
    fg_to_end(b"", 75, "continued: 75")
else:
    fg_to_end(b"go\n", 0, "continued, finished, status 0")
