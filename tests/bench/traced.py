#!/usr/bin/env python3
"""tests/bench/traced.py: the commands that build a traced model (its graph
and its kept collectives' split, estimator/traced.h) and read it: on each
shared trace with steps, `stepcast replay --json`, `critical-path --json`
and `opportunities --json`, and `diff --json` of HTA's control/test pair,
each the median of 5 runs (wall ms) with its peak RSS (wait4).

STEPCAST names the binary (default build/stepcast), so a build from
before a change can be timed by the same script."""
import os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from accuracy import HTA, ROOT, SHARED, TRACES  # noqa: E402

STEPCAST = os.environ.get("STEPCAST", os.path.join(ROOT, "build", "stepcast"))
RUNS = 5


def timed(argv):
    """(median wall ms, largest peak RSS MB) of RUNS runs of argv."""
    walls, rss = [], 0
    for _ in range(RUNS):
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        walls.append((time.perf_counter() - t0) * 1e3)
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        if status:
            sys.exit("bench_traced: %s failed: %s" % (" ".join(argv), err.strip()))
        rss = max(rss, ru.ru_maxrss / 1024)
    return statistics.median(walls), rss


def main():
    if not os.path.isdir(SHARED):
        print("the shared traces are not at %s: skipped" % SHARED)
        return 0
    print("binary: %s" % STEPCAST)
    print("| trace | replay ms (MB) | critical-path ms (MB) | opportunities ms (MB) |")
    print("|---|---:|---:|---:|")
    for name, rel, extra in TRACES:
        path = os.path.join(SHARED, rel)
        cells = [timed([STEPCAST, cmd, "--json"] + extra + [path]) for cmd in ("replay", "critical-path", "opportunities")]
        print("| %s | %s |" % (name, " | ".join("%.1f (%.0f)" % c for c in cells)))
    diff = timed([STEPCAST, "diff", "--json", os.path.join(SHARED, HTA + "trace_diff/control/control.json.gz"),
                  os.path.join(SHARED, HTA + "trace_diff/test/test.json.gz")])
    print("\ndiff control test: %.1f ms (%.0f MB)" % diff)
    return 0


if __name__ == "__main__":
    sys.exit(main())
