#!/usr/bin/python3
"""tests/interop/run.py [--cli PATH] [--shared DIR]: what other tools make of
what stepcast writes, through those tools' own readers (../shared/interop,
unchanged from their repositories):

- HTA (Holistic Trace Analysis) on the replayed timelines of the 8-rank DLRM
  job (`stepcast replay --keep-unexplained --timeline`) against HTA on its
  original traces: it sees 8 ranks, its temporal breakdown (idle, compute,
  non-compute shares) is within 2 points per rank, its kernel breakdown
  names the same top 10 kernels, and its critical-path analysis runs;
  every event of the timelines is a Chrome trace event as Perfetto reads
  them. The waits the trace does not explain are kept: without them some
  of rank 1's kernels, whose launches precede the trace, replay from the
  step's start, and HTA counts the time before them as idle GPU time (the
  breakdown of that replay is printed too, for information).

Run with Debian's /usr/bin/python3 (whose python3-pandas and friends HTA
needs; scripts/deps.sh installs them). Prints what it compares and ends
with `N passed, N failed`."""
import argparse
import json
import logging
import os
import subprocess
import sys
import tarfile
import tempfile

PASSED = FAILED = 0


def check(ok, what):
    global PASSED, FAILED
    PASSED, FAILED = PASSED + bool(ok), FAILED + (not ok)
    print(("ok   " if ok else "FAIL ") + what)


def stepcast(cli, *args):
    return subprocess.run([cli, *args], check=True, capture_output=True, text=True).stdout


def chrome_event_ok(e):
    """A complete, metadata, flow or instant event of the Chrome trace-event format."""
    ph = e.get("ph")
    ids = all(isinstance(e.get(k), (int, str)) for k in ("pid", "tid"))
    if not ids or not isinstance(e.get("name"), str):
        return False
    if ph == "M":
        return isinstance(e.get("args", {}).get("name"), str)
    if not isinstance(e.get("ts"), (int, float)) or e["ts"] < 0:
        return False
    if ph == "X":
        return isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0 and isinstance(e.get("cat"), str)
    if ph in ("s", "t", "f"):
        return "id" in e and isinstance(e.get("cat"), str) and (ph != "f" or e.get("bp") == "e")
    return ph in ("i", "I", "C")


def hta_view(trace_dir):
    """What HTA reports of a folder of traces: ranks, temporal breakdown,
    the top 10 kernels over all ranks, whether the critical path ran."""
    from hta.trace_analysis import TraceAnalysis
    a = TraceAnalysis(trace_dir=trace_dir)
    tb = a.get_temporal_breakdown(visualize=False).set_index("rank")
    _, kernels = a.get_gpu_kernel_breakdown(visualize=False)
    kernels = kernels[kernels["name"] != "others"]
    top = list(kernels.groupby("name")["sum (us)"].sum().sort_values(ascending=False).index[:10])
    cp = a.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=0)
    return sorted(a.t.traces.keys()), tb, top, bool(cp and cp[1])


def test_hta(cli, shared, tmp):
    tar = os.path.join(shared, "traces/param/et_replay/tests/inputs/dlrm_kineto.tar.gz")
    orig = os.path.join(tmp, "orig")
    with tarfile.open(tar) as t:
        t.extractall(orig)
    orig = os.path.join(orig, "dlrm_kineto")
    replayed, plain = os.path.join(tmp, "timeline"), os.path.join(tmp, "plain")
    stepcast(cli, "replay", "--keep-unexplained", "--timeline", replayed, tar)
    stepcast(cli, "replay", "--timeline", plain, tar)

    bad = 0
    for name in sorted(os.listdir(replayed)):
        with open(os.path.join(replayed, name)) as f:
            doc = json.load(f)
        bad += sum(not chrome_event_ok(e) for e in doc["traceEvents"])
    check(bad == 0, "every event of the replayed timelines is a Chrome trace event (%d not)" % bad)

    logging.disable(logging.WARNING)
    ranks0, tb0, top0, cp0 = hta_view(orig)
    ranks1, tb1, top1, cp1 = hta_view(replayed)
    tb2 = hta_view(plain)[1]
    check(ranks1 == list(range(8)), "HTA sees ranks %s in the replayed timelines" % ranks1)
    cols = ("idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg")
    head = "idle  compute  non-compute"
    print("HTA temporal breakdown, % of GPU time: original | replayed | replayed without unexplained waits")
    print("rank  %s | %s | %s" % (head, head, head))
    worst = 0.0

    def row(tb, r):
        return [tb.loc[r, c] if r in tb.index else float("nan") for c in cols]

    for r in ranks0:
        a, b = row(tb0, r), row(tb1, r)
        worst = max([worst] + [abs(x - y) for x, y in zip(a, b)])
        print("%4d  %s | %s | %s" % (r, *("%4.2f  %7.2f  %11.2f" % tuple(v) for v in (a, b, row(tb2, r)))))
    check(worst <= 2.0, "temporal breakdown within 2 points on every rank (worst %.2f)" % worst)
    check(set(top0) == set(top1), "kernel breakdown names the same top 10 kernels (%d in common)"
          % len(set(top0) & set(top1)))
    check(cp0 and cp1, "critical-path analysis runs on rank 0's replayed step")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", default="build/stepcast")
    ap.add_argument("--shared", default=os.environ.get("STEPCAST_SHARED", "../shared"))
    a = ap.parse_args()
    cli, shared = os.path.abspath(a.cli), os.path.abspath(a.shared)
    sys.path.insert(0, os.path.join(shared, "interop/hta"))
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in (("hta", test_hta),):
            try:
                fn(cli, shared, os.path.join(tmp, name))
            except Exception as e:  # a reader that fails is a failed check, not a crash
                check(False, "%s: %s: %s" % (name, type(e).__name__, e))
    print("%d passed, %d failed" % (PASSED, FAILED))
    return FAILED != 0


if __name__ == "__main__":
    sys.exit(main())
