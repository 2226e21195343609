#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
# ab.py: interleaved A/B timing of whole commands, for comparing two builds
# of pglock (or pglock and bench/floor) on a noisy machine. Each round runs
# every command once, in a new random order; medians, ratios to the first.
#
#   bench/ab.py ROUNDS 'CMD ARGS...' 'CMD ARGS...' ...
#
# A command is split on spaces (no quoting); its first word must be a path.
# Leading NAME=VALUE words go to its environment. Any non-zero exit stops.
import os
import random
import statistics
import sys
import time


def parse(text):
    words, env = text.split(), dict(os.environ)
    while words and "=" in words[0] and not words[0].startswith("/"):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    return words, env


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: ab.py ROUNDS 'CMD ARGS...' ...")
    rounds = int(sys.argv[1])
    cmds = [parse(c) for c in sys.argv[2:]]
    times = [[] for _ in cmds]
    for _ in range(rounds):
        order = list(range(len(cmds)))
        random.shuffle(order)
        for i in order:
            words, env = cmds[i]
            start = time.perf_counter()
            pid = os.posix_spawn(words[0], words, env)
            _, status = os.waitpid(pid, 0)
            times[i].append((time.perf_counter() - start) * 1000)
            if status != 0:
                sys.exit("ab.py: %s: exit status %d" % (sys.argv[2 + i], status))
    base = statistics.median(times[0])
    for text, t in zip(sys.argv[2:], times):
        m = statistics.median(t)
        print("%8.3f ms  %5.3f x  %s" % (m, m / base, text))


if __name__ == "__main__":
    main()
