#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
# jobctl.py: drive an interactive bash on a pseudo-terminal as a user
# would: run pglock on a command, press Ctrl-Z, check that the shell shows
# the job stopped while the lock stays held, then `fg` it to the end.
# With --no-shell, pglock itself leads the terminal's session, as under
# ssh -t or tmux: no job control, so Ctrl-Z must not stop anything for good.
#   usage: jobctl.py PGLOCK KEY ID [--no-shell]
# Prints what it saw; exits 0 if every step happened, 1 if not.
import os
import pty
import select
import subprocess
import sys
import time

pglock, key, lock_id = sys.argv[1:4]
seen = b""


def expect(what, timeout=15):
    global seen
    deadline = time.monotonic() + timeout
    while what.encode() not in seen:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            ps = subprocess.run(["ps", "-o", "pid,ppid,pgid,tpgid,stat,args",
                                 "-s", str(pid)], capture_output=True,
                                text=True).stdout
            sys.exit("jobctl: no %r in %r; the session's processes:\n%s"
                     % (what, seen.decode(errors="replace"), ps))
        try:
            seen += os.read(fd, 4096)
        except OSError:
            sys.exit("jobctl: the shell went away: %r" % seen)
    seen = seen.split(what.encode(), 1)[1]


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
os.write(fd, ("%s %s sh -c 'echo ST\"\"ARTED; read x; echo FIN\"\"ISHED $x'\n"
              % (pglock, key)).encode())
expect("STARTED")
os.write(fd, b"\x1a")
expect("Stopped")
expect("$ ")
if not held():
    sys.exit("jobctl: the lock was not held while the job was stopped")
print("stopped, lock held")
os.write(fd, b"fg\n")
os.write(fd, b"go\n")
expect("FINISHED go")
expect("$ ")
os.write(fd, b"echo STATUS=$?\n")
expect("STATUS=0")
print("continued, finished, status 0")
os.write(fd, b"exit\n")
os.waitpid(pid, 0)
