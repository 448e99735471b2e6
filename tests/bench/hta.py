#!/usr/bin/env python3
"""tests/bench/hta.py: stepcast beside Holistic Trace Analysis (HTA).

For each HTA trace of ../shared/traces (negative_queue, nccl_data,
ns_resolution): HTA's load (`TraceAnalysis(trace_dir=DIR)`) plus its
critical path over every step the trace has (`critical_path_analysis(rank,
"ProfilerStep", (0, steps - 1))`), timed inside its process from after the
imports to the path found, against the whole `stepcast replay --json TRACE`
and `stepcast critical-path --json TRACE` processes (load, graph, replay of
every step, each step's critical path, output). Each is run RUNS times in
turn; the medians and each process's peak RSS (from wait4) are printed, with
stepcast's speed-up and its share of HTA's peak memory. An argument names
another stepcast program to time (a build of another commit).

HTA is the copy in ../shared/interop/hta, run by Debian's /usr/bin/python3
(python3-pandas, -numpy, -networkx, -plotly, -pydot); without them the
bench says so and skips."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

RUNS = 5
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("STEPCAST_SHARED", os.path.join(ROOT, "..", "shared"))
HTA_DIR = os.path.join(SHARED, "interop", "hta")
DATA = os.path.join(SHARED, "traces", "HolisticTraceAnalysis", "tests", "data")
STEPCAST = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "stepcast")
PYTHON = "/usr/bin/python3"
TRACES = [
    ("negative_queue", "negative_queue_length_values_check/rank0.json.gz"),
    ("nccl_data", "nccl_parser_config/nccl_data.json.gz"),
    ("ns_resolution", "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"),
]
TARGET_SPEEDUP = 60
TARGET_MEMORY = 0.2

# Run by PYTHON in its own process: argv = [hta dir, trace dir, rank, steps];
# prints {"seconds": load + critical path, "ok": its success flag}.
HTA_RUN = r"""
import json, logging, sys, time
sys.path.insert(0, sys.argv[1])
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t0 = time.perf_counter()
a = TraceAnalysis(trace_dir=sys.argv[2])
r = a.critical_path_analysis(rank=int(sys.argv[3]), annotation="ProfilerStep",
                             instance_id=(0, int(sys.argv[4]) - 1))
print(json.dumps({"seconds": time.perf_counter() - t0, "ok": bool(r and r[1])}))
"""


def run(argv):
    """(wall seconds, peak RSS bytes, stdout) of one run of argv."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stdout.close()
    p.stderr.close()
    if status != 0:
        sys.exit("bench: %s failed: %s" % (" ".join(argv), err.strip()[-2000:]))
    return dt, ru.ru_maxrss * 1024, out


def hta_available():
    probe = [PYTHON, "-c", "import sys; sys.path.insert(0, %r); import hta.trace_analysis" % HTA_DIR]
    return (os.path.isdir(HTA_DIR) and os.path.exists(PYTHON)
            and subprocess.run(probe, capture_output=True).returncode == 0)


def main():
    if not os.path.exists(DATA):
        print("HTA traces: %s is absent: skipped" % DATA)
        return 0
    if not hta_available():
        print("HTA: %s cannot be imported by %s (Debian's python3-pandas, python3-networkx, "
              "python3-plotly, python3-pydot): skipped" % (HTA_DIR, PYTHON))
        return 0
    print("each figure the median of %d runs; HTA: load + critical path of every step, in its "
          "process; stepcast: the whole process" % RUNS)
    print("%-15s %9s | %-27s | %-27s | %-27s | %s"
          % ("trace", "MB (gz)", "HTA load + critical path", "stepcast replay --json",
             "stepcast critical-path", "speed-up, memory (replay; critical-path)"))
    ok = True
    tmp = tempfile.mkdtemp(prefix="stepcast-bench-hta-")
    try:
        for label, rel in TRACES:
            path = os.path.join(DATA, rel)
            if not os.path.exists(path):
                print("%s: %s is absent: skipped" % (label, path))
                continue
            # the trace's rank and steps, as stepcast reads them; HTA reads a folder
            replay = json.loads(run([STEPCAST, "replay", "--json", path])[2])
            rank = replay["steps"][0]["rank"]
            steps = len(replay["steps"])
            folder = os.path.join(tmp, label)
            os.mkdir(folder)
            shutil.copy(path, folder)
            hta_argv = [PYTHON, "-c", HTA_RUN, HTA_DIR, folder, str(rank), str(steps)]
            ours_replay = [STEPCAST, "replay", "--json", path]
            ours_cp = [STEPCAST, "critical-path", "--json", path]
            hta_t, hta_m, rep_t, rep_m, cp_t, cp_m = [], [], [], [], [], []
            for _ in range(RUNS):  # in turn, so that a busy stretch hits all three alike
                _, m, out = run(hta_argv)
                res = json.loads(out)
                if not res["ok"]:
                    sys.exit("bench: HTA's critical path failed on %s" % path)
                hta_t.append(res["seconds"])
                hta_m.append(m)
                t, m, _ = run(ours_replay)
                rep_t.append(t)
                rep_m.append(m)
                t, m, _ = run(ours_cp)
                cp_t.append(t)
                cp_m.append(m)
            med = statistics.median
            h, r, c = med(hta_t), med(rep_t), med(cp_t)
            hm, rm, cm = med(hta_m), med(rep_m), med(cp_m)
            print("%-15s %9.1f | %7.3f s %8.1f MB peak | %7.3f s %8.1f MB peak | %7.3f s %8.1f MB peak"
                  " | x%.1f, %.3fx; x%.1f, %.3fx"
                  % (label, os.path.getsize(path) / 1e6, h, hm / 1e6, r, rm / 1e6, c, cm / 1e6,
                     h / r, rm / hm, h / c, cm / hm))
            print("  %d steps of rank %d; HTA's runs %s s; replay's %s s"
                  % (steps, rank, " ".join("%.2f" % x for x in hta_t),
                     " ".join("%.3f" % x for x in rep_t)))
            ok = ok and min(h / r, h / c) >= TARGET_SPEEDUP and max(rm, cm) <= TARGET_MEMORY * hm
        print("target (x%d or better, at most %.1fx HTA's peak memory): %s"
              % (TARGET_SPEEDUP, TARGET_MEMORY, "met" if ok else "NOT met"))
        print("commands: %s -c HTA_RUN (tests/bench/hta.py) DIR RANK STEPS; "
              "build/stepcast replay --json TRACE; build/stepcast critical-path --json TRACE" % PYTHON)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
