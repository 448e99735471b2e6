#!/usr/bin/env python3
"""tests/bench/cpu_ab.py: CPU time of builds of stepcast side by side.

    python3 tests/bench/cpu_ab.py RUNS PROG[,PROG...] ARG...

Runs each PROG with ARG... RUNS times, the programs in turn (a busy
stretch of a shared machine hits each alike), and prints for each the
least and the median of its CPU time (user + system, its threads too, from
wait4): the before and after of a change, a build of each commit. Output
of the programs is discarded; a failing run stops it."""
import os, statistics, subprocess, sys


def cpu_ms(argv):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit("cpu_ab: %s failed" % " ".join(argv))
    return (ru.ru_utime + ru.ru_stime) * 1000


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__.split("\n\n")[1])
    runs, progs, args = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3:]
    ms = {p: [] for p in progs}
    for _ in range(runs):
        for p in progs:
            ms[p].append(cpu_ms([p] + args))
    for p in progs:
        print("%-32s least %7.1f ms  median %7.1f ms CPU" % (p, min(ms[p]), statistics.median(ms[p])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
