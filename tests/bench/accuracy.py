#!/usr/bin/env python3
"""tests/bench/accuracy.py: replay error on every shared trace with steps.

Runs `build/stepcast replay --json` on each trace and prints every step with
its measured and replayed time, error and the time it spends waiting in
collectives kept for untraced peers (collective_kept_ms: the wait of their
split), then the mean and max |error| per trace and
over all steps that are not partial."""
import json, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.environ.get("STEPCAST_SHARED", os.path.join(ROOT, "..", "shared")), "traces")
HTA = "HolisticTraceAnalysis/tests/data/"
PARAM = "param/et_replay/tests/inputs/"
TRACES = [
    ("nccl_data", HTA + "nccl_parser_config/nccl_data.json.gz", []),
    ("negative_queue", HTA + "negative_queue_length_values_check/rank0.json.gz", []),
    ("trace_diff control", HTA + "trace_diff/control/control.json.gz", []),
    ("trace_diff test", HTA + "trace_diff/test/test.json.gz", []),
    ("ns_resolution", HTA + "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", []),
    ("DLRM, 8 ranks", PARAM + "dlrm_kineto.tar.gz", []),
    ("linear_kineto", PARAM + "linear_kineto.json.gz", ["--step-marker", "Optimizer.step"]),
    ("resnet_kineto", PARAM + "resnet_kineto.json.gz", ["--step-marker", "Optimizer.step"]),
]


def main():
    if not os.path.isdir(SHARED):
        print("the shared traces are not at %s: skipped" % SHARED)
        return 0
    pooled = []
    summary = []
    print("| trace | rank | step | measured ms | replayed ms | error % | collective_kept_ms |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for name, rel, extra in TRACES:
        path = os.path.join(SHARED, rel)
        cmd = [os.path.join(ROOT, "build", "stepcast"), "replay", "--json"] + extra + [path]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            print("replay of %s failed: %s" % (name, out.stderr.strip()), file=sys.stderr)
            return 1
        d = json.loads(out.stdout)
        errs = []
        for s in d["steps"]:
            print("| %s | %d | %s%s | %.3f | %.3f | %+.2f | %.3f |" % (
                name, s["rank"], s["step"], " (partial)" if s["partial"] else "", s["measured_ms"],
                s["replayed_ms"], s["error_pct"], s["collective_kept_ms"]))
            if not s["partial"]:
                errs.append(abs(s["error_pct"]))
        pooled += errs
        summary.append((name, len(errs), d["mean_abs_error_pct"], d["max_abs_error_pct"], " ".join(["stepcast"] + cmd[1:]).replace(ROOT + "/", "")))
    print()
    print("| trace | steps | mean abs error % | max abs error % |")
    print("|---|---:|---:|---:|")
    for name, n, mean, mx, _ in summary:
        print("| %s | %d | %.2f | %.2f |" % (name, n, mean, mx))
    print("| **all** | %d | %.2f | %.2f |" % (len(pooled), sum(pooled) / len(pooled), max(pooled)))
    print()
    print("commands:")
    for name, _, _, _, cmd in summary:
        print("  build/%s" % cmd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
