"""tests/bench/plan.py: time `stepcast plan` (bench_plan.sh): the whole
process, best of N, wall time and CPU time (user + system, from wait4),
and the configurations it evaluated per second of each."""
import json
import os
import subprocess
import sys
import time


def run(cmd):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if status:
        sys.exit("failed: " + " ".join(cmd))
    return json.loads(out), wall, ru.ru_utime + ru.ru_stime


def main():
    spec, gpus, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cmd = ["build/stepcast", "plan", "--spec", spec, "--gpus", gpus, "--json"]
    print("command:", " ".join(cmd))
    best = None
    for _ in range(runs):
        d, wall, cpu = run(cmd)
        if best is None or cpu < best[2]:
            best = (d, wall, cpu)
    d, wall, cpu = best
    print("  evaluated %d, pruned %d, infeasible: memory %d, divisibility %d" % (
        d["evaluated"], d["pruned"], d["infeasible"]["memory"], d["infeasible"]["divisibility"]))
    for what, s in (("wall", wall), ("CPU", cpu)):
        rate = d["evaluated"] / s
        print("  %s: %.0f ms (target 10000): %s; %.0f evaluations/s (target 1000): %s" % (
            what, s * 1000, "ok" if s < 10 else "over target", rate, "ok" if rate >= 1000 else "under target"))
    top = d["top"][0]
    p, o, e = top["parallel"], top["options"], top["estimate"]
    print("  best: tp %d pp %d dp %d micro-batch %d %s vpp %d, recompute %s, zero %d: %.1f ms, MFU %.3f" % (
        p["tp"], p["pp"], p["dp"], p["micro_batch"], p["schedule"], p["vpp"], o["recompute"], o["zero_stage"],
        e["step_ms"], e["mfu"]))


main()
