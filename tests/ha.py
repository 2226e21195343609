#!/usr/bin/python3
# SPDX-License-Identifier: ISC
"""ha.py: pglock across a real Patroni cluster (make ha; not make check).

One etcd, three Patroni nodes running PostgreSQL on loopback ports, one
HAProxy in front with Patroni's template (GET /primary, inter 3s fall 3
rise 2), listening twice: with and without on-marked-down
shutdown-sessions. pglock reaches the leader through either listener or
through a libpq multi-host URI. Every process is started here, ended by
its pid, and every wait is bounded.

  tests/ha.py [-n RUNS] [-p PATH,...] [SCENARIO ...]

PATHS (default: all): haproxy-shut, haproxy-keep, uri.

Scenarios (default: all), each run RUNS times on each path (by default
three times where the issue sets a figure, switchover and stale with
synchronous mode, else once):
  switchover  three "machines" run pglock --once-per 10s every second
              across a planned switchover: exits 69, slots run twice (and
              missed: one may pass in the new leader's lock-delay)
  kill9       a holder and a waiter (-w 120) across kill -9 of the
              leader's postmaster, its Patroni, or both: the holder's exit,
              when the waiter's command starts, overlap
  stale       a frozen leader (SIGSTOP): its Patroni while its PostgreSQL
              keeps serving, with synchronous_mode (strict) on and off;
              with synchronous mode also its Patroni and postmaster (new
              connections hang: "blocked") and the whole node: a holder,
              a -w 120 waiter and a new holder every second, all with
              --fence: overlapping commands, fences given twice, the
              waiter's exit and the node it ran on (stale-sync: synchronous
              mode only; stale-patroni, stale-blocked, stale-whole: one
              kind, synchronous)
  counter     --version-counter allocations in two loops across kill -9 of
              the leader, synchronous_mode on and off: numbers given twice
              to commands that exited 0

Each command is a TERM-ignoring loop that logs a heartbeat every 50 ms;
overlap is measured from those heartbeats (a lower bound by at most 50 ms).
Prints one table row per run and a summary; exits 1 if an acceptance
figure (overlap or repeat with synchronous mode, an exit 69 at a
switchover through HAProxy, a waiter that never ran) is missed. A frozen
leader's run whose old leader took the leader key back once it resumed is
void, not missed: Patroni 3.0.2 (Debian 12's) overwrites the key from its
stale view of etcd, its promoted successor demotes itself and the commits
that successor confirmed are dropped (fixed in Patroni 3.0.3,
patroni/patroni#2689); what a client then sees measures Patroni.
"""

from datetime import datetime
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

PGLOCK = os.path.abspath(os.environ.get("PGLOCK", "pglock"))
BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
BASE = int(os.environ.get("HA_PORT", "25400"))
ETCD, PEER = BASE, BASE + 1
HA_SHUT, HA_KEEP = BASE + 30, BASE + 31
NODES = ("n1", "n2", "n3")
TTL = 20


def pg_port(n):
    return BASE + 10 + NODES.index(n)


def rest_port(n):
    return BASE + 20 + NODES.index(n)


PATHS = {
    "haproxy-shut": "host=127.0.0.1 port=%d user=postgres dbname=postgres" % HA_SHUT,
    "haproxy-keep": "host=127.0.0.1 port=%d user=postgres dbname=postgres" % HA_KEEP,
    "uri": "postgresql://postgres@" + ",".join(
        "127.0.0.1:%d" % pg_port(n) for n in NODES) + "/postgres",
}

D = None          # the run's directory
PROCS = {}        # name -> Popen of etcd, haproxy and each node's Patroni


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def now():
    return time.monotonic()


def until(what, secs, step=0.25):
    """Poll what() until it is true, for at most secs; its last value."""
    end = now() + secs
    while True:
        v = what()
        if v or now() >= end:
            return v
        time.sleep(step)


def rest(n, path, method="GET", body=None, timeout=2):
    """Patroni's REST API of node n: (status, parsed body) or (0, None)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (rest_port(n), path),
                                 data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            code = r.status
    except urllib.error.HTTPError as e:
        raw, code = e.read(), e.code
    except OSError:
        return 0, None
    try:
        return code, json.loads(raw)
    except ValueError:
        return code, raw.decode(errors="replace")


def as_postgres():
    return ["setpriv", "--reuid=postgres", "--regid=postgres",
            "--init-groups", "--"]


def start(name, argv, env=None):
    out = open(os.path.join(D, name + ".log"), "ab")
    PROCS[name] = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env,
                                   cwd=D, start_new_session=True)


def node_config(n):
    hba = ["local all all trust", "host all all 127.0.0.1/32 trust",
           "host replication all 127.0.0.1/32 trust"]
    return {
        "scope": "pglockha", "name": n,
        "restapi": {"listen": "127.0.0.1:%d" % rest_port(n),
                    "connect_address": "127.0.0.1:%d" % rest_port(n)},
        "etcd3": {"hosts": ["127.0.0.1:%d" % ETCD]},
        "bootstrap": {
            "dcs": {"ttl": TTL, "loop_wait": 2, "retry_timeout": 5,
                    "maximum_lag_on_failover": 1048576,
                    "postgresql": {"use_pg_rewind": True, "parameters": {
                        "wal_log_hints": "on", "max_wal_senders": 10,
                        "max_replication_slots": 10}}},
            "initdb": [{"encoding": "UTF8"}],
            "pg_hba": hba},
        "postgresql": {
            "listen": "127.0.0.1:%d" % pg_port(n),
            "connect_address": "127.0.0.1:%d" % pg_port(n),
            "data_dir": os.path.join(D, n), "bin_dir": BIN,
            "pgpass": os.path.join(D, n + ".pgpass"),
            "authentication": {
                "superuser": {"username": "postgres", "password": "ha"},
                "replication": {"username": "replicator", "password": "ha"}},
            "parameters": {"unix_socket_directories": D},
            "pg_hba": hba},
        "watchdog": {"mode": "off"},
    }


def start_node(n):
    cfg = os.path.join(D, n + ".yml")
    with open(cfg, "w") as f:       # YAML is a superset of JSON
        json.dump(node_config(n), f)
    env = dict(os.environ, HOME=D, PATH="/usr/bin:/bin:/usr/sbin:/sbin")
    start(n, as_postgres() + ["/usr/bin/patroni", cfg], env)


def haproxy_config():
    lines = ["global", "  maxconn 400", "defaults", "  mode tcp",
             "  timeout connect 4s", "  timeout client 30m",
             "  timeout server 30m", "  timeout check 2s"]
    for name, port, extra in (("shut", HA_SHUT, " on-marked-down shutdown-sessions"),
                              ("keep", HA_KEEP, "")):
        lines += ["listen pg_" + name, "  bind 127.0.0.1:%d" % port,
                  "  option httpchk GET /primary",
                  "  http-check expect status 200",
                  "  default-server inter 3s fall 3 rise 2" + extra]
        lines += ["  server %s 127.0.0.1:%d maxconn 100 check port %d"
                  % (n, pg_port(n), rest_port(n)) for n in NODES]
    path = os.path.join(D, "haproxy.cfg")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def cluster():
    code, body = rest("n1", "/cluster")
    if code != 200:
        for n in NODES[1:]:
            code, body = rest(n, "/cluster")
            if code == 200:
                break
    return body if code == 200 and isinstance(body, dict) else {"members": []}


def leader():
    for m in cluster()["members"]:
        if m.get("role") == "leader" and m.get("state") == "running":
            return m["name"]
    return None


def healthy(sync=None):
    """One leader, every other node streaming with no lag (and a sync
    standby when sync): the cluster is ready for the next run."""
    ms = cluster()["members"]
    if len(ms) != 3 or sum(m.get("role") == "leader" for m in ms) != 1:
        return False
    for m in ms:
        if m.get("state") not in ("running", "streaming"):
            return False
        if m.get("role") != "leader" and m.get("lag", 1) not in (0, "0"):
            return False
    if sync is not None and any(m.get("role") == "sync_standby" for m in ms) != sync:
        return False
    # HAProxy has marked the leader up on both listeners (3 s checks).
    return leader() is not None


def postmaster_pid(n):
    try:
        with open(os.path.join(D, n, "postmaster.pid")) as f:
            return int(f.readline())
    except (OSError, ValueError):
        return None


def set_sync(sync):
    # Strict: without it Patroni empties synchronous_standby_names on a
    # primary whose standby is gone, a frozen leader's too once it resumes
    # (on its stale view), and its waiting commits return as confirmed.
    code, _ = rest(leader() or "n1", "/config", "PATCH",
                   {"synchronous_mode": sync,
                    "synchronous_mode_strict": sync})
    if code != 200:
        raise SystemExit("ha.py: PATCH /config synchronous_mode: %s" % code)
    if not until(lambda: healthy(sync), 60):
        raise SystemExit("ha.py: synchronous_mode %s not in effect in 60 s" % sync)


def mend(sync):
    """After a run: every node's Patroni alive and running (a frozen one
    continued, a killed one started again), the cluster healthy again."""
    for n in NODES:
        p = PROCS.get(n)
        if p is not None and p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
        else:
            start_node(n)
    if until(lambda: healthy(sync), 90):
        return
    for m in cluster()["members"]:     # a node that could not rejoin
        if m.get("role") != "leader" and m.get("state") not in ("running", "streaming"):
            log("ha.py: reinitialising", m["name"])
            rest(m["name"], "/reinitialize", "POST", {"force": True}, timeout=10)
    if not until(lambda: healthy(sync), 120):
        raise SystemExit("ha.py: the cluster did not recover: %s" % cluster())
    time.sleep(7)  # HAProxy: the leader up (rise 2 x inter 3s)


def up():
    global D, PGLOCK
    D = tempfile.mkdtemp(prefix="pglock-ha.")
    os.chmod(D, 0o755)
    shutil.chown(D, "postgres", "postgres")
    # a copy: a rebuild while the scenarios run does not change what runs
    PGLOCK = shutil.copy(PGLOCK, os.path.join(D, "pglock"))
    start("etcd", ["etcd", "--name", "e", "--data-dir", os.path.join(D, "etcd"),
                   "--listen-client-urls", "http://127.0.0.1:%d" % ETCD,
                   "--advertise-client-urls", "http://127.0.0.1:%d" % ETCD,
                   "--listen-peer-urls", "http://127.0.0.1:%d" % PEER,
                   "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % PEER,
                   "--initial-cluster", "e=http://127.0.0.1:%d" % PEER])
    start("haproxy", ["haproxy", "-db", "-f", haproxy_config()])
    start_node("n1")
    if not until(lambda: rest("n1", "/primary")[0] == 200, 90):
        raise SystemExit("ha.py: n1 did not become the leader in 90 s; see " + D)
    for n in NODES[1:]:
        start_node(n)
    if not until(lambda: healthy(False), 120):
        raise SystemExit("ha.py: the replicas did not stream in 120 s; see " + D)
    time.sleep(7)


def down():
    for name, p in PROCS.items():
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGCONT)
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for name, p in PROCS.items():
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
    for n in NODES:        # a postmaster orphaned by a killed Patroni
        pid = postmaster_pid(n)
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if os.environ.get("HA_KEEP_DIR"):
        log("ha.py: kept", D)
    else:
        shutil.rmtree(D, ignore_errors=True)


# ---- the commands pglock runs, and what they leave behind ----

# A heartbeat every 50 ms, TERM ignored: the adversary a lease must stop.
# $1 is the run's id, $2 how many beats (0: forever).
# The server its lock is on: its server process's directory, once.
BEAT = ('trap "" TERM; [ -z "${PGLOCK_BACKEND_PID:-}" ] || echo "$1 $(readlink '
        '/proc/$PGLOCK_BACKEND_PID/cwd)" >>"$HB.srv"; '
        'i=0; while [ "$2" = 0 ] || [ $i -lt "$2" ]; do '
        'echo "$1 ${PGLOCK_FENCE:-${PGLOCK_VERSION:-${PGLOCK_SLOT_START:--}}} '
        '$(date +%s.%N)" >>"$HB"; i=$((i+1)); sleep 0.05; done')


class Runs:
    """pglock processes of one run, each with an id, its exit status and
    when it ended; the heartbeats their commands wrote."""

    def __init__(self, name):
        self.hb = os.path.join(D, name + ".hb")
        open(self.hb, "w").close()
        self.procs = []
        self.n = 0

    def spawn(self, path, args, beats, tag=""):
        self.n += 1
        rid = "%s%d" % (tag, self.n)
        env = dict(os.environ, HB=self.hb)
        err = open(os.path.join(D, "pglock.err"), "ab")
        p = subprocess.Popen([PGLOCK, "-d", PATHS[path]] + args +
                             ["sh", "-c", BEAT, "beat", rid, str(beats)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=err, env=env)
        p.rid, p.began, p.ended = rid, now(), None
        self.procs.append(p)
        return p

    def holder(self, path, key):
        """A holder with --fence whose command runs until it is killed."""
        p = self.spawn(path, ["--fence", key], 0, "h")
        if not until(self.beats, 15):
            raise SystemExit("ha.py: the holder never ran; see " + D)
        return p

    def reap(self):
        for p in self.procs:
            if p.ended is None and p.poll() is not None:
                p.ended = now()

    def finish(self, secs=60):
        end = now() + secs
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, end - now()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.reap()

    def codes(self):
        out = {}
        for p in self.procs:
            out[p.returncode] = out.get(p.returncode, 0) + 1
        return out

    def beats(self):
        """{id: (first, last, value)} from the heartbeats (wall clock)."""
        seen = {}
        with open(self.hb) as f:
            for line in f:
                parts = line.split()
                if len(parts) != 3:
                    continue
                rid, val, t = parts[0], parts[1], float(parts[2])
                a = seen.get(rid)
                seen[rid] = (t, t, val) if a is None else (a[0], t, val)
        return seen

    def servers(self):
        """{id: node} whose server held each command's lock."""
        seen = {}
        try:
            with open(self.hb + ".srv") as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 2:
                        seen[parts[0]] = os.path.basename(parts[1])
        except OSError:
            pass
        return seen

    def overlap(self):
        """The longest time two commands ran together, and how many pairs."""
        iv = sorted(self.beats().values())
        worst, pairs = 0.0, 0
        for i, a in enumerate(iv):
            for b in iv[i + 1:]:
                if b[0] >= a[1]:
                    continue
                pairs += 1
                worst = max(worst, min(a[1], b[1]) - b[0])
        return worst, pairs

    def repeats(self, ok_only=False):
        """Values (fence or version) that more than one command got."""
        codes = {p.rid: p.returncode for p in self.procs}
        count = {}
        for rid, (_, _, val) in self.beats().items():
            if val == "-" or (ok_only and codes.get(rid) != 0):
                continue
            count[val] = count.get(val, 0) + 1
        return sorted(v for v, c in count.items() if c > 1)


# ---- scenarios: each returns a row (dict) and whether it met its mark ----

def run_switchover(path, sync, k):
    r = Runs("switchover-%s-%d" % (path, k))
    key = "ha-cron-%s-%d" % (path, k)
    old = leader()
    new = next(n for n in NODES if n != old)
    t0 = now()
    switched = None
    while now() - t0 < 45:
        for m in range(3):     # three machines, each once a second
            r.spawn(path, ["--once-per", "10s", key], 10, "m%d-" % m)
        if switched is None and now() - t0 >= 12:
            code, body = rest(old, "/switchover", "POST",
                              {"leader": old, "candidate": new}, timeout=30)
            switched = now() - t0
            if code != 200:
                log("ha.py: switchover refused:", code, body)
        r.reap()
        time.sleep(1)
    r.finish()
    slots = {}
    for rid, (_, _, val) in r.beats().items():
        slots[val] = slots.get(val, 0) + 1
    ran = sorted(slots)
    twice = sum(c > 1 for c in slots.values())
    # a slot is missed if none ran in it between the first and last slot
    missed = 0
    if ran:
        seen = {int(datetime.fromisoformat(s).timestamp()) for s in ran}
        missed = sum(1 for s in range(min(seen), max(seen) + 1, 10)
                     if s not in seen)
    codes = r.codes()
    row = {"scenario": "switchover", "path": path, "run": k,
           "invocations": len(r.procs), "exit69": codes.get(69, 0),
           "slots": len(ran), "twice": twice, "missed": missed,
           "codes": codes, "leader": "%s->%s" % (old, leader())}
    # A slot shorter than the lock-delay (S, 20 s) may pass in it: missed
    # is a figure, not a mark.
    return row, row["exit69"] == 0 and twice == 0


def run_kill9(path, sync, k, what):
    r = Runs("kill9-%s-%s-%d" % (what, path, k))
    key = "ha-kill-%s-%s-%d" % (what, path, k)
    old = leader()
    holder = r.holder(path, key)
    waiter = r.spawn(path, ["-w", "120", "--fence", key], 40, "w")
    time.sleep(3)
    t_kill = now()
    wall_kill = time.time()
    if what in ("patroni", "both"):
        os.kill(PROCS[old].pid, signal.SIGKILL)
    if what in ("postmaster", "both"):
        os.kill(postmaster_pid(old), signal.SIGKILL)
    until(lambda: holder.poll() is not None, 60)
    r.reap()
    until(lambda: waiter.poll() is not None, 150)
    r.finish(10)
    b = r.beats()
    w = b.get(waiter.rid)
    row = {"scenario": "kill9-" + what, "path": path, "run": k,
           "holder_exit": holder.returncode,
           "holder_after": round((holder.ended or now()) - t_kill, 1),
           "waiter_exit": waiter.returncode,
           "waiter_ran_after": round(w[0] - wall_kill, 1) if w else None,
           "overlap": round(r.overlap()[0], 2),
           "fence_twice": r.repeats(),
           "leader": "%s->%s" % (old, leader())}
    ok = w is not None and waiter.returncode == 0 and row["overlap"] <= 0
    if what == "patroni":      # a stale primary: no mark without sync
        ok = ok or not sync
    return row, ok


def children(pid):
    """The processes whose parent is pid (/proc; no procps needed)."""
    out = []
    for d in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(d.split("/")[2]))
    return out


def freeze(old, how, sig):
    """Stop (SIGSTOP) or continue (SIGCONT) what a frozen leader stops:
    its Patroni; with its postmaster (new connections hang: "blocked");
    or with its postmaster and every server process (the whole node)."""
    pids = [PROCS[old].pid]
    pm = postmaster_pid(old)
    if how in ("blocked", "whole") and pm:
        pids.append(pm)
    if how == "whole" and pm:
        pids += children(pm)
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def run_stale(path, sync, k, how):
    r = Runs("stale-%s-%s-%s-%d" % (how, path, sync, k))
    key = "ha-stale-%s-%s-%s-%d" % (how, path, sync, k)
    old = leader()
    holder = r.holder(path, key)
    waiter = r.spawn(path, ["-w", "120", "--fence", key], 40, "w")
    time.sleep(1)
    freeze(old, how, signal.SIGSTOP)
    t_stop = now()
    wall_stop = time.time()
    promoted = None
    # a new holder every second, each with a bounded wait and a short run
    while now() - t_stop < TTL + 35:
        r.spawn(path, ["-w", "3", "--fence", key], 20, "c")
        if promoted is None:
            ms = [m for m in cluster_from_others(old) if m.get("role") == "leader"]
            if ms and ms[0]["name"] != old:
                promoted = round(now() - t_stop, 1)
        r.reap()
        time.sleep(1)
    freeze(old, how, signal.SIGCONT)
    r.finish(90)
    codes = r.codes()
    worst, pairs = r.overlap()
    w = r.beats().get(waiter.rid)
    # Patroni gave the leader key back to the old leader once it resumed
    # (its promoted successor demoted, that timeline's commits dropped).
    back = promoted is not None and leader() == old
    row = {"scenario": "stale-" + how, "path": path, "sync": sync, "run": k,
           "promoted_after": promoted, "holder_exit": holder.returncode,
           "holder_after": round((holder.ended or now()) - t_stop, 1),
           "waiter_exit": waiter.returncode,
           "waiter_ran_after": round(w[0] - wall_stop, 1) if w else None,
           "waiter_on": r.servers().get(waiter.rid),
           "old_leader": old, "old_leader_back": back,
           "ran": len(r.beats()), "overlap": round(worst, 2),
           "overlap_pairs": pairs, "fence_twice": r.repeats(),
           "codes": codes}
    # With synchronous mode: no overlap, no fence twice, and the -w 120
    # waiter ran (0) on the new leader, not dropped (69) by the failover.
    # A run whose old leader took the key back measures Patroni, not pglock
    # (the new leader's confirmed commits were dropped): void.
    ok = (worst <= 0 and not row["fence_twice"] and waiter.returncode == 0
          and row["waiter_on"] not in (None, old)) if sync else True
    return row, "void" if back and not ok else ok


def cluster_from_others(old):
    for n in NODES:
        if n != old:
            code, body = rest(n, "/cluster")
            if code == 200 and isinstance(body, dict):
                return body["members"]
    return []


def run_counter(path, sync, k):
    r = Runs("counter-%s-%s-%d" % (path, sync, k))
    tenant = "ha-counter-%s-%s-%d" % (path, sync, k)
    old = leader()
    t0 = now()
    loops = [None, None]
    killed = False
    while now() - t0 < 50:
        for i, p in enumerate(loops):
            if p is None or p.poll() is not None:
                loops[i] = r.spawn(path, ["-w", "60", "--version-counter", tenant],
                                   1, "v")
        if not killed and now() - t0 >= 8:
            os.kill(PROCS[old].pid, signal.SIGKILL)
            os.kill(postmaster_pid(old), signal.SIGKILL)
            killed = True
        r.reap()
        time.sleep(0.02)
    r.finish(90)
    twice = r.repeats(ok_only=True)
    codes = r.codes()
    row = {"scenario": "counter", "path": path, "sync": sync, "run": k,
           "allocations": len(r.procs), "ok": codes.get(0, 0),
           "given_twice_ok": twice, "codes": codes,
           "leader": "%s->%s" % (old, leader())}
    return row, (not twice) if sync else True


def main():
    args = sys.argv[1:]
    runs, paths = None, None
    while args[:1] in (["-n"], ["-p"]):
        if args[0] == "-n":
            runs = int(args[1])
        else:
            paths = args[1].split(",")
            if not set(paths) <= set(PATHS):
                raise SystemExit("ha.py: -p: the paths are " + ",".join(PATHS))
        args = args[2:]
    chosen = args or ["switchover", "kill9", "stale", "counter"]
    # (synchronous mode, scenario, path, its arguments, runs by default):
    # three of each that has an acceptance figure, one of the rest.
    plan = []
    for s in chosen:
        if s == "switchover":
            plan += [(False, run_switchover, p, (), 3)
                     for p in ("haproxy-shut", "haproxy-keep", "uri")]
        elif s == "kill9":
            plan += [(False, run_kill9, p, (w,), 1)
                     for w in ("postmaster", "patroni", "both")
                     for p in ("haproxy-shut", "uri")]
        elif s in ("stale", "stale-sync"):
            plan += [(sync, run_stale, p, (how,), 3 if sync else 1)
                     for sync in (True, False)[:1 if s == "stale-sync" else 2]
                     for how in ("patroni", "blocked", "whole")[:1 if not sync else 3]
                     for p in ("haproxy-shut", "haproxy-keep", "uri")]
        elif s in ("stale-patroni", "stale-blocked", "stale-whole"):
            plan += [(True, run_stale, p, (s[6:],), 3)
                     for p in ("haproxy-shut", "haproxy-keep", "uri")]
        elif s == "counter":
            plan += [(sync, run_counter, p, (), 1) for sync in (False, True)
                     for p in ("haproxy-shut", "uri")]
        else:
            raise SystemExit("ha.py: no scenario " + s)
    if paths is not None:
        plan = [p for p in plan if p[2] in paths]
    up()
    rows = []
    sync_now = False
    try:
        for sync, fn, path, extra, n in plan:
            if sync != sync_now:
                set_sync(sync)
                sync_now = sync
            for k in range(1, (runs or n) + 1):
                row, ok = fn(path, sync, k, *extra)
                row["mark"] = ok if ok == "void" else "ok" if ok else "MISSED"
                rows.append(row)
                print(json.dumps(row), flush=True)
                mend(sync)
    finally:
        down()
    summary(rows)
    sys.exit(1 if any(r["mark"] == "MISSED" for r in rows) else 0)


def summary(rows):
    """One line per scenario, path and synchronous mode: the runs' worst."""
    groups = {}
    for r in rows:
        groups.setdefault((r["scenario"], r["path"], r.get("sync", False)),
                          []).append(r)
    print("\nscenario path sync runs: figures (worst of the runs)")
    for (scen, path, sync), rs in groups.items():
        fig = []
        for name in ("exit69", "twice", "missed", "overlap", "holder_after",
                     "waiter_ran_after", "promoted_after"):
            vals = [r[name] for r in rs if r.get(name) is not None]
            if vals:
                fig.append("%s %s" % (name, max(vals)))
        if "waiter_on" in rs[0]:
            fig.append("waiter exits %s on %s (old leader %s)" % (
                "/".join(str(r["waiter_exit"]) for r in rs),
                "/".join(str(r["waiter_on"]) for r in rs),
                "/".join(r["old_leader"] for r in rs)))
            back = sum(r["old_leader_back"] for r in rs)
            if back:
                fig.append("the old leader took the key back in %d" % back)
        for name in ("fence_twice", "given_twice_ok"):
            if name in rs[0]:
                fig.append("%s %d" % (name, sum(len(r[name]) for r in rs)))
        bad = sum(r["mark"] == "MISSED" for r in rs)
        void = sum(r["mark"] == "void" for r in rs)
        print("%s %s %s %d: %s%s%s" % (scen, path, "on" if sync else "off",
                                       len(rs), ", ".join(fig),
                                       " (%d MISSED)" % bad if bad else "",
                                       " (%d void: Patroni's)" % void if void else ""))


if __name__ == "__main__":
    main()
