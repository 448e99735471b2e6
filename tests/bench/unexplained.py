#!/usr/bin/env python3
"""tests/bench/unexplained.py: what the traces cannot explain, and what
would shorten their steps, on every shared trace with steps.

For each trace: the replay error without and with --keep-unexplained,
unexplained_ms per step (mean and max, also as % of the step), the
invariant |replayed - measured| <= unexplained_ms + 5% of the step, the
step at x0.5 of every kind of work (gpu, comm, cpu together) as a fraction
of the replayed step; then `stepcast opportunities` of each trace."""
import json, os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from accuracy import HTA, ROOT, SHARED, TRACES  # noqa: E402

ALL = TRACES + [
    ("cuda_event_sync", HTA + "critical_path/cuda_event_sync/event_sync_trace.json.gz", []),
    ("sampled (filtered)", HTA + "trace_filter/sampled_rank-0.json.gz", []),
]
STEPCAST = os.path.join(ROOT, "build", "stepcast")


def run(args):
    out = subprocess.run([STEPCAST] + args, capture_output=True, text=True)
    if out.returncode:
        sys.exit("stepcast %s failed: %s" % (" ".join(args), out.stderr.strip()))
    return json.loads(out.stdout)


def main():
    if not os.path.isdir(SHARED):
        print("the shared traces are not at %s: skipped" % SHARED)
        return 0
    print("| trace | mean / max error % | with --keep-unexplained | unexplained ms per step: mean (max) | "
          "% of step: mean (max) | worst of abs(replayed - measured) - unexplained - 5% (ms) | all work x0.5: step x |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, rel, extra in ALL:
        path = os.path.join(SHARED, rel)
        plain = run(["replay", "--json"] + extra + [path])
        kept = run(["replay", "--json", "--keep-unexplained"] + extra + [path])
        half = run(["replay", "--json", "--scale", "gpu=0.5", "--scale", "comm=0.5", "--scale", "cpu=0.5"] + extra + [path])
        steps = [s for s in plain["steps"] if not s["partial"]]
        u = [s["unexplained_ms"] for s in steps]
        pct = [s["unexplained_ms"] / s["measured_ms"] * 100 for s in steps]
        slack = max(abs(s["replayed_ms"] - s["measured_ms"]) - s["unexplained_ms"] - 0.05 * s["measured_ms"] for s in steps)
        ratios = [h["replayed_ms"] / p["replayed_ms"] for p, h in zip(plain["steps"], half["steps"]) if not p["partial"]]
        print("| %s | %.2f / %.2f | %.2f / %.2f | %.3f (%.3f) | %.2f (%.2f) | %+.3f | %.3f-%.3f |" % (
            name, plain["mean_abs_error_pct"], plain["max_abs_error_pct"], kept["mean_abs_error_pct"],
            kept["max_abs_error_pct"], sum(u) / len(u), max(u), sum(pct) / len(pct), max(pct), slack,
            min(ratios), max(ratios)))
    print()
    for name, rel, extra in ALL:
        d = run(["opportunities", "--json"] + extra + [os.path.join(SHARED, rel)])
        print("%s: step %.3f ms, GPU idle %.3f ms, %d rank(s), every actionable change together saves %.3f ms" % (
            name, d["step_ms"], d["gpu_idle_ms"], d["ranks"], d["actionable_saving_ms"]))
        print()
        print("| change | saving ms | saving % | Amdahl bound ms |")
        print("|---|---:|---:|---:|")
        for o in d["opportunities"]:
            print("| `%s` | %.3f | %.2f | %.3f |" % (o["change"], o["saving_ms"], o["saving_pct"], o["amdahl_bound_ms"]))
        print()
    print("commands: build/stepcast replay --json [--keep-unexplained] [--scale gpu=0.5 --scale comm=0.5 "
          "--scale cpu=0.5] TRACE; build/stepcast opportunities --json TRACE")
    return 0


if __name__ == "__main__":
    sys.exit(main())
