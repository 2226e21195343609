#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
# report.py: turns the raw rows of bench/run.sh (bench/results/*.tsv) into
# bench/results.md, the targets with PASS or MISS, and bench/results.png
# (gnuplot, where installed). It measures nothing; run it again to redo
# the report from the same rows:  bench/report.py [RESULTS-DIR]
import csv
import os
import random
import shutil
import statistics
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
RAW = sys.argv[1] if len(sys.argv) > 1 else os.path.join(BENCH, "results")
UNIX_BASE = ("pglock unix", "floor unix", "flock", "psql wrapper")


def rows(name):
    """The rows of RAW/name as dicts; none if it was not written."""
    path = os.path.join(RAW, name)
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def median_p99(xs):
    """The median and the 99th percentile (nearest rank) of xs."""
    if not xs:
        return float("nan"), float("nan")
    xs = sorted(xs)
    return statistics.median(xs), xs[-(-len(xs) * 99 // 100) - 1]


def median_ratio_interval(a, b, rng, n=2000):
    """A 95% bootstrap interval of median(a) / median(b)."""
    rs = sorted(statistics.median(rng.choices(a, k=len(a))) /
                statistics.median(rng.choices(b, k=len(b))) for _ in range(n))
    return rs[int(n * 0.025)], rs[int(n * 0.975) - 1]


def tools(name):
    """The tool names of a *-tools.tsv, in the order the tables list them."""
    path = os.path.join(RAW, name)
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [line.split("\t", 1)[0] for line in f]


def base_of(tool):
    return "floor unix" if tool in UNIX_BASE else "floor tcp"


# --- the rows ----------------------------------------------------------------

info = {r["key"]: r["value"] for r in rows("info.tsv")}
unavailable = {r["tool"]: r["reason"] for r in rows("unavailable.tsv")}

# 1. uncontended: every run of every tool, in the tools' order.
walls = {t: [] for t in tools("uncontended-tools.tsv")}
for r in rows("uncontended.tsv"):
    walls[r["tool"]].append(float(r["ms"]))
walls = {t: w for t, w in walls.items() if w}
unc = {t: statistics.median(w) for t, w in walls.items()}
rss = {}
for r in rows("rss.tsv"):
    rss.setdefault(r["tool"], []).append(int(r["kib"]))
peak = {t: statistics.median(k) for t, k in rss.items()}

# 2-3. contended: rounds summed per tool.
con = {t: dict(ms=0.0, done=0, counter=0, failed=0, overlaps=0, handoffs=[])
       for t in tools("contended-tools.tsv")}
for r in rows("contended.tsv"):
    c = con[r["tool"]]
    c["ms"] += float(r["ms"])
    c["done"] += int(r["workers"]) * int(r["runs"])
    c["counter"] += int(r["counter"])
    c["failed"] += int(r["failed"])
    c["overlaps"] += int(r["overlaps"])
for r in rows("handoffs.tsv"):
    con[r["tool"]]["handoffs"].append(float(r["ms"]))
con = {t: c for t, c in con.items() if c["ms"]}
for t, c in con.items():
    c["rate"] = c["done"] / (c["ms"] / 1000)
    c["ok"] = c["counter"] == c["done"] and not c["failed"] and not c["overlaps"]
    c["check"] = ("ok: counter %d = %d runs" % (c["counter"], c["done"])
                  if c["ok"] else
                  "FAILED: counter %d, want %d; %d failed runs; %d overlaps" %
                  (c["counter"], c["done"], c["failed"], c["overlaps"]))

cpu = {r["tool"]: (int(r["client_ms"]) / int(r["runs"]),
                   int(r["server_ms"]) / int(r["runs"]), int(r["runs"]))
       for r in rows("cpu.tsv")}
wait = {(r["process"], r["metric"]): r["value"] for r in rows("waiting.tsv")}
counter = rows("counter.tsv")

# --- targets -----------------------------------------------------------------

targets, misses = [], []


def target(label, measured, value, ok):
    """One row of the targets table; n/a where a side was not measured."""
    verdict = "n/a" if value is None else ("PASS" if ok(value) else "MISS")
    if verdict == "MISS":
        misses.append(label)
    targets.append("| %s | %s | %s |" % (label, measured, verdict))


def ms(tool):
    return "%.2f" % unc[tool] if tool in unc else "n/a"


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(x, digits=2):
    return "n/a" if x is None else "%.*f" % (digits, x)


rng = random.Random(13)
intervals = {}
for a, b in (("pglock unix", "floor unix"), ("pglock tcp", "floor tcp")):
    if a in walls and b in walls:
        intervals[a] = median_ratio_interval(walls[a], walls[b], rng)
for tool, where in (("pglock unix", "Unix socket, direct"), ("pglock tcp", "TCP")):
    base = base_of(tool)
    r = ratio(unc.get(tool), unc.get(base))
    ci = intervals.get(tool)
    target("uncontended pglock <= 1.10 x floor (%s)" % where,
           "%s / %s ms = %s x%s" % (ms(tool), ms(base), fmt(r),
                                    " (95%% interval %.2f-%.2f)" % ci if ci else ""),
           r, lambda x: x <= 1.10)
rate = {t: c["rate"] for t, c in con.items()}
r = ratio(rate.get("pglock unix"), rate.get("floor unix"))
target("contended throughput >= 0.90 x floor",
       "%s / %s handoffs/s = %s x" % (fmt(rate.get("pglock unix"), 1),
                                      fmt(rate.get("floor unix"), 1), fmt(r)),
       r, lambda x: x >= 0.90)
r = ratio(unc.get("psql wrapper"), unc.get("pglock unix"))
target(">= 2 x faster than the psql wrapper (Unix socket)",
       "%s / %s ms = %s x" % (ms("psql wrapper"), ms("pglock unix"), fmt(r)),
       r, lambda x: x >= 2)
r = ratio(unc.get("etcdctl lock"), unc.get("pglock tcp"))
target(">= 1.5 x faster than etcdctl lock, uncontended (TCP)",
       "%s / %s ms = %s x" % (ms("etcdctl lock"), ms("pglock tcp"), fmt(r)),
       r, lambda x: x >= 1.5)
r = ratio(rate.get("pglock unix"), rate.get("etcdctl lock"))
target(">= 1.5 x faster than etcdctl lock, contended",
       "%s / %s handoffs/s = %s x" % (fmt(rate.get("pglock unix"), 1),
                                      fmt(rate.get("etcdctl lock"), 1), fmt(r)),
       r, lambda x: x >= 1.5)
secs = wait.get(("pglock", "seconds"), "n/a")
for metric, how, digits in (("stat_ms", "/proc/PID/stat", 1),
                            ("sched_ms", "/proc/PID/schedstat", 3)):
    v = wait.get(("pglock", metric))
    v = None if v is None else float(v)
    target("waiting CPU < 10 ms over %s s (%s)" % (secs, how),
           "%s ms" % fmt(v, digits), v, lambda x: x < 10)
d = (peak["pglock unix"] - peak["floor unix"]
     if "pglock unix" in peak and "floor unix" in peak else None)
target("peak RSS <= floor + 1024 KiB",
       "%s - %s KiB = %s KiB" % (fmt(peak.get("pglock unix"), 0),
                                 fmt(peak.get("floor unix"), 0), fmt(d, 0)),
       d, lambda x: x <= 1024)
misses += ["%s: contended counter check" % t for t, c in con.items() if not c["ok"]]
misses += ["version counter %s" % r["case"] for r in counter if r["check"] != "ok"]

# --- results.md --------------------------------------------------------------

out = []
w = out.append
runs = info.get("runs", "?")
w("# pglock benchmark results\n")
w("Written by `bench/report.py` from the rows `bench/run.sh` (`make bench`) "
  "leaves in bench/results/; do not edit by hand.\n")
w("- date: %s" % info.get("date", "n/a"))
w("- machine: %s" % info.get("machine", "n/a"))
w("- load average: %s at the start, %s at the end" %
  (info.get("load_start", "n/a"), info.get("load_end", "n/a")))
w("- PostgreSQL %s (private, fsync off, Unix socket and 127.0.0.1); etcd %s "
  "(private, 127.0.0.1, data on tmpfs); advisory-lock %s; %s, tree %s" %
  tuple(info.get(k, "n/a") for k in ("pg_version", "etcd_version",
                                     "lock_version", "pglock_version", "tree")))
w("- uncontended: BENCH_RUNS=%s rounds, each running every tool once in a new "
  "random order (`bench/ab.py`), no warm-up, medians of all runs; contended: "
  "%s rounds x %s workers x %s runs per tool, the tools in a new random order "
  "each round\n" % (runs, info.get("contended_rounds", "?"),
                    info.get("workers", "?"), info.get("contended_runs", "?")))
w("## Targets\n")
w("| target | measured | result |")
w("|---|---|---|")
out += targets
w("\nThe interval is the 2.5th to 97.5th percentile of the ratio of medians "
  "over 2,000 bootstrap resamples of the runs: how far this one run could "
  "have landed by chance.\n")

w("## 1. Uncontended: `TOOL KEY true`, wall time\n")
w("| tool | median ms | x floor (same transport) | peak RSS KiB | runs |")
w("|---|---:|---:|---:|---:|")
for t in walls:
    w("| %s | %.2f | %s | %s | %d |" % (t, unc[t], fmt(ratio(unc[t], unc.get(base_of(t)))),
                                      fmt(peak.get(t), 0), len(walls[t])))
for t, why in unavailable.items():
    w("| %s | not available: %s | | | |" % (t, why))
w("\nflock and the psql wrapper are compared with the floor over the Unix "
  "socket; etcdctl lock and withlock (both TCP clients) with the floor over "
  "TCP. Wall time from spawn to reaped exit. Peak RSS: GNU time's %M, "
  "median of 5 runs apart from the timed ones.\n")

w("## 2-3. Contended: %s workers, one key, non-atomic read-increment-write\n"
  % info.get("workers", "?"))
w("| tool | handoffs/s | x floor | handoff median ms | handoff p99 ms | check |")
w("|---|---:|---:|---:|---:|---|")
for t, c in con.items():
    w("| %s | %.1f | %s | %.2f | %.2f | %s |" % (
        (t, c["rate"], fmt(ratio(c["rate"], rate.get("floor unix"))))
        + median_p99(c["handoffs"]) + (c["check"],)))
w("\nHandoff: from the holder's command writing its last timestamp to the "
  "next holder's command reading its first (CLOCK_MONOTONIC, `bench/rmw`).\n")
n = next(iter(cpu.values()))[2] if cpu else 0
w("CPU per run (`TOOL KEY true`, Unix socket, %d runs), which bounds the "
  "contended rate on %s CPUs:\n" % (n, info.get("cpus", "?")))
w("| tool | client CPU ms/run | server CPU ms/run | total |")
w("|---|---:|---:|---:|")
for t, (c, s, _) in cpu.items():
    w("| %s | %.2f | %.2f | %.2f |" % (t, c, s, c + s))
w("\nClient: the tool, its `true` and the fork from bash; server: the backend "
  "of each run, from the postmaster's reaped-children time.\n")

w("## 4. Waiting %s s behind a holder\n" % secs)
w("| process | CPU while waiting, /proc/PID/stat | CPU while waiting, schedstat | VmHWM KiB |")
w("|---|---:|---:|---:|")


def g(process, metric):
    return wait.get((process, metric), "n/a")


w("| pglock | %s ms (%s ms since start) | %s ms (%s ms since start) | %s |" % (
    g("pglock", "stat_ms"), g("pglock", "stat_total_ms"), g("pglock", "sched_ms"),
    g("pglock", "sched_total_ms"), g("pglock", "vmhwm_kib")))
w("| floor | %s ms | %s ms | %s |" % (g("floor", "stat_ms"), g("floor", "sched_ms"),
                                    g("floor", "vmhwm_kib")))
w("\n/proc/PID/stat counts in ticks of %s ms. Both waiters take the lock with "
  "a raw id (`--id`), so no key hashing is in their VmHWM.\n" % g("clock", "tick_ms"))

w("## 5. Version counter\n")
if counter:
    w("| tenants x clients | allocations/s | check |")
    w("|---|---:|---|")
    for r in counter:
        allocs = int(r["tenants"]) * int(r["clients"]) * int(r["each"])
        w("| %s | %.1f | %s |" % (r["case"], allocs / (float(r["ms"]) / 1000),
                                  r["check"]))
else:
    w("not measured")
w("\n**Every target met.**" if not misses else "\n**Missed:** %s." % "; ".join(misses))
w("\n![pglock benchmark](results.png)")
with open(os.path.join(BENCH, "results.md"), "w", encoding="utf-8") as f:
    f.write("\n".join(out) + "\n")

# --- results.png -------------------------------------------------------------


def colour(tool):
    """pglock stands out, the floor is grey, the peers blue."""
    return 0xee7733 if tool.startswith("pglock") else \
        0x999999 if tool.startswith("floor") else 0x4477aa


def plot():
    data = {}
    for name, values in (("unc", unc), ("con", rate)):
        data[name] = os.path.join(RAW, name + ".dat")
        with open(data[name], "w", encoding="utf-8") as f:
            for t, v in values.items():
                f.write('"%s" %f %d\n' % (t, v, colour(t)))
    term = "pngcairo" if "pngcairo" in subprocess.run(
        ["gnuplot", "-e", "set terminal"], capture_output=True, text=True).stderr else "png"
    settings = dict(
        out=os.path.join(BENCH, "results.png"), term=term, **data,
        heading="pglock vs the floor and its peers (%s CPUs, %s)" % (
            info.get("cpus", "?"), info.get("date", "")[:10]),
        con_title="2. contended: %s workers on one key, handoffs per second" %
        info.get("workers", "?"))
    # Strings for gnuplot's -e, in single quotes: none of them holds one.
    e = "; ".join("%s = '%s'" % kv for kv in settings.items())
    subprocess.run(["gnuplot", "-e", e, os.path.join(BENCH, "plot.gp")],
                   check=True, timeout=60)


if shutil.which("gnuplot") and unc and rate:
    plot()
else:
    print("report.py: no gnuplot or no rows: no chart", file=sys.stderr)
print("\n".join(out))
print("report.py: wrote %s%s" % (os.path.join(BENCH, "results.md"),
                                 " (targets missed: %d)" % len(misses) if misses else ""),
      file=sys.stderr)
