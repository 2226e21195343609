#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
# ab.py: interleaved timing of whole commands on a noisy machine. Each round
# runs every command once, in a new random order, so that drift and position
# favour none of them; no warm-up, no outlier dropped.
#
#   bench/ab.py ROUNDS 'CMD ARGS...' 'CMD ARGS...' ...
#       A quick A/B: a command is split on spaces (no quoting), its first
#       word a path or a name in PATH, leading NAME=VALUE words go to its environment. Prints
#       medians and ratios to the first command.
#   bench/ab.py --tools TOOLS.tsv ROUNDS >ROWS.tsv
#       The uncontended benchmark (bench/run.sh): TOOLS.tsv holds one
#       command a line, NAME<TAB>PATH<TAB>ARG..., run with the environment
#       as it is. Writes one row per run: round, tool, wall ms.
#
# The commands' output goes to /dev/null; any non-zero exit stops the run.
import os
import random
import statistics
import sys
import time


def parse(text):
    """One quick-mode command string: (name, words, environment)."""
    words, env = text.split(), dict(os.environ)
    while words and "=" in words[0] and not words[0].startswith("/"):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    return text, words, env


def read_tools(path):
    """TOOLS.tsv: (name, words, environment) a line."""
    tools = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 2:
                tools.append((fields[0], fields[1:], dict(os.environ)))
    return tools


def run_once(words, env):
    """Wall ms of one run of words, from spawn to reaped exit."""
    start = time.perf_counter()
    pid = os.posix_spawnp(words[0], words, env, file_actions=[
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
    _, status = os.waitpid(pid, 0)
    wall = (time.perf_counter() - start) * 1000
    if status != 0:
        sys.exit("ab.py: %s: exit status %d" % (" ".join(words), status))
    return wall


def main():
    args = sys.argv[1:]
    tools_file = None
    if args[:1] == ["--tools"] and len(args) >= 2:
        tools_file, args = args[1], args[2:]
    if len(args) < (1 if tools_file else 2) or not args[0].isdigit():
        sys.exit("usage: ab.py ROUNDS 'CMD ARGS...' ...\n"
                 "       ab.py --tools TOOLS.tsv ROUNDS")
    rounds = int(args[0])
    tools = read_tools(tools_file) if tools_file else [parse(a) for a in args[1:]]
    if not tools:
        sys.exit("ab.py: no commands")

    rows = []
    for r in range(rounds):
        order = list(range(len(tools)))
        random.shuffle(order)
        for i in order:
            name, words, env = tools[i]
            rows.append((r, name, run_once(words, env)))

    if tools_file:
        out = sys.stdout
        out.write("round\ttool\tms\n")
        for r, name, wall in rows:
            out.write("%d\t%s\t%.4f\n" % (r, name, wall))
        return
    medians = [statistics.median(w for _, n, w in rows if n == name)
               for name, _, _ in tools]
    for (name, _, _), m in zip(tools, medians):
        print("%8.3f ms  %5.3f x  %s" % (m, m / medians[0], name))


if __name__ == "__main__":
    main()
