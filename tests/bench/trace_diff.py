#!/usr/bin/env python3
"""tests/bench/trace_diff.py: HTA's control/test pair compared two ways.

1. `stepcast diff` (replays: the difference attributed to categories).
2. What HTA's TraceDiff reports for the same pair, recomputed here with the
   standard library by its documented method (HTA itself needs pandas and
   plotly, not installable here): compare_traces on the first rank and the
   first iteration of each trace (events with their ProfilerStep; GPU work
   with the step of the runtime call that launched it), counts and total
   duration per name over CPU ops and GPU kernels alike, and ops_diff's five
   categories by count (added, deleted, increased, decreased, unchanged)."""
import collections, gzip, json, os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from accuracy import HTA, ROOT, SHARED  # noqa: E402

CONTROL = HTA + "trace_diff/control/control.json.gz"
TEST = HTA + "trace_diff/test/test.json.gz"
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}


def first_iteration_ops(path):
    """name -> [count, total_us] over the events of the first ProfilerStep."""
    events = [e for e in json.load(gzip.open(path))["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in events if e.get("name", "").startswith("ProfilerStep#")),
                   key=lambda e: int(e["name"].split("#")[1]))
    first = steps[0]
    lo, hi = first["ts"], first["ts"] + first["dur"]
    cpu_in = {}
    for e in events:
        if e.get("cat") not in GPU_CATS and lo <= e["ts"] < hi and e.get("pid") == first.get("pid"):
            corr = e.get("args", {}).get("correlation")
            if corr is not None:
                cpu_in[corr] = True
    ops = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        if e.get("cat") in GPU_CATS:
            keep = cpu_in.get(e.get("args", {}).get("correlation"), False)
        else:
            keep = lo <= e["ts"] < hi and e.get("pid") == first.get("pid")
        if keep:
            ops[e["name"]][0] += 1
            ops[e["name"]][1] += e.get("dur", 0)
    return first["name"], ops


def main():
    if not os.path.isdir(SHARED):
        print("the shared traces are not at %s: skipped" % SHARED)
        return 0
    a, b = os.path.join(SHARED, CONTROL), os.path.join(SHARED, TEST)
    out = subprocess.run([os.path.join(ROOT, "build", "stepcast"), "diff", "--json", a, b], capture_output=True, text=True)
    if out.returncode:
        sys.exit("stepcast diff failed: " + out.stderr.strip())
    d = json.loads(out.stdout)
    print("stepcast diff: A (control) %.3f ms, B (test) %.3f ms, difference %+.3f ms over %d matched steps" % (
        d["a_ms"], d["b_ms"], d["difference_ms"], d["steps"]))
    print()
    print("| category | ms |")
    print("|---|---:|")
    for k, v in d["attribution"].items():
        print("| %s | %+.3f |" % (k, v))
    print("| **sum** | %+.3f |" % sum(d["attribution"].values()))
    print()
    k = d["kernels"]
    print("kernels: %d names added, %d removed, %d re-timed (lists capped at 20)" % (
        len(k["added"]), len(k["removed"]), len(k["retimed"])))
    for what in ("added", "removed", "retimed"):
        for x in k[what][:3]:
            print("  %s: %s x%d, %.3f -> %.3f ms/step" % (what, x["name"][:70], x["count"], x["a_ms"], x["b_ms"]))
    print()
    sa, ca = first_iteration_ops(a)
    sb, cb = first_iteration_ops(b)
    names = set(ca) | set(cb)
    cat = collections.Counter()
    for n in names:
        c0, c1 = ca.get(n, [0, 0])[0], cb.get(n, [0, 0])[0]
        cat["added" if c0 == 0 else "deleted" if c1 == 0 else "increased" if c1 > c0 else
            "decreased" if c1 < c0 else "unchanged"] += 1
    print("HTA TraceDiff method (compare_traces + ops_diff, first rank, first iteration: %s against %s):" % (sa, sb))
    print("| ops_diff category | names |")
    print("|---|---:|")
    for c in ("added", "deleted", "increased", "decreased", "unchanged"):
        print("| %s | %d |" % (c, cat[c]))
    print()
    top = sorted(names, key=lambda n: -abs(cb.get(n, [0, 0])[1] - ca.get(n, [0, 0])[1]))[:8]
    print("| name (largest diff_duration) | control counts | test counts | control us | test us | diff us |")
    print("|---|---:|---:|---:|---:|---:|")
    for n in top:
        c0, c1 = ca.get(n, [0, 0]), cb.get(n, [0, 0])
        print("| %s | %d | %d | %.0f | %.0f | %+.0f |" % (n[:60].replace("|", "/"), c0[0], c1[0], c0[1], c1[1], c1[1] - c0[1]))
    print()
    print("command: build/stepcast diff --json %s %s" % (CONTROL, TEST))
    return 0


if __name__ == "__main__":
    sys.exit(main())
