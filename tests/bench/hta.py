#!/usr/bin/env python3
"""tests/bench/hta.py: stepcast beside Holistic Trace Analysis (HTA).

For each HTA trace of ../shared/traces (negative_queue, nccl_data,
ns_resolution): HTA's load (`TraceAnalysis(trace_dir=DIR)`) plus its
critical path over every step the trace has (`critical_path_analysis(rank,
"ProfilerStep", (0, steps - 1))`), timed inside its process from after the
imports to the path found, against the whole `stepcast replay --json TRACE`
and `stepcast critical-path TRACE` processes (load, graph, replay of
every step, each step's critical path, output). Each is run RUNS times in
turn; the medians of wall and CPU time (user + system: what a machine
shared with other work changes least) and each process's peak RSS (from
wait4) are printed, with stepcast's speed-up and its share of HTA's peak
memory. An argument names
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
# prints {"wall": load + critical path in seconds, "cpu": the same in CPU
# seconds (its threads too), "ok": its success flag}.
HTA_RUN = r"""
import json, logging, os, sys, time
sys.path.insert(0, sys.argv[1])
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
def cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
t0, c0 = time.perf_counter(), cpu()
a = TraceAnalysis(trace_dir=sys.argv[2])
r = a.critical_path_analysis(rank=int(sys.argv[3]), annotation="ProfilerStep",
                             instance_id=(0, int(sys.argv[4]) - 1))
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": cpu() - c0, "ok": bool(r and r[1])}))
"""


def run(argv):
    """(wall seconds, CPU seconds, peak RSS bytes, stdout) of one run of argv."""
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
    return dt, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, out


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
          "process after its imports; stepcast: the whole process; wall s / CPU s / peak RSS MB" % RUNS)
    ok = True
    tmp = tempfile.mkdtemp(prefix="stepcast-bench-hta-")
    try:
        for label, rel in TRACES:
            path = os.path.join(DATA, rel)
            if not os.path.exists(path):
                print("%s: %s is absent: skipped" % (label, path))
                continue
            # the trace's rank and steps, as stepcast reads them; HTA reads a folder
            replay = json.loads(run([STEPCAST, "replay", "--json", path])[3])
            rank = replay["steps"][0]["rank"]
            steps = len(replay["steps"])
            folder = os.path.join(tmp, label)
            os.mkdir(folder)
            shutil.copy(path, folder)
            tools = [("HTA load + critical path", [PYTHON, "-c", HTA_RUN, HTA_DIR, folder, str(rank), str(steps)]),
                     ("stepcast replay --json", [STEPCAST, "replay", "--json", path]),
                     ("stepcast critical-path", [STEPCAST, "critical-path", path])]
            runs = [[] for _ in tools]
            for _ in range(RUNS):  # in turn, so that a busy stretch hits all three alike
                for k, (_, argv) in enumerate(tools):
                    wall, cpu, rss, out = run(argv)
                    if k == 0:
                        res = json.loads(out)
                        if not res["ok"]:
                            sys.exit("bench: HTA's critical path failed on %s" % path)
                        wall, cpu = res["wall"], res["cpu"]
                    runs[k].append((wall, cpu, rss))
            med = [tuple(statistics.median(r[i] for r in rs) for i in range(3)) for rs in runs]
            print("%s (%.1f MB gzip, %d steps of rank %d):"
                  % (label, os.path.getsize(path) / 1e6, steps, rank))
            for (name, _), (wall, cpu, rss), rs in zip(tools, med, runs):
                print("  %-30s %8.3f s %8.3f s CPU %7.1f MB peak   (walls: %s)"
                      % (name, wall, cpu, rss / 1e6, " ".join("%.3f" % r[0] for r in rs)))
            h = med[0]
            for (name, _), m in zip(tools[1:], med[1:]):
                print("  HTA / %-24s x%.1f wall, x%.1f CPU; peak memory %.3fx HTA's"
                      % (name[len("stepcast "):], h[0] / m[0], h[1] / m[1], m[2] / h[2]))
                ok = ok and h[0] / m[0] >= TARGET_SPEEDUP and m[2] <= TARGET_MEMORY * h[2]
        print("target (x%d or better, at most %.1fx HTA's peak memory): %s"
              % (TARGET_SPEEDUP, TARGET_MEMORY, "met" if ok else "NOT met"))
        print("commands: %s -c HTA_RUN (tests/bench/hta.py) DIR RANK STEPS; "
              "build/stepcast replay --json TRACE; build/stepcast critical-path TRACE" % PYTHON)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
