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
- Chakra's Python reader (protolib.py, with et_def.proto compiled by protoc)
  on `stepcast export chakra` of the DLRM job: every file decodes, opens
  with a GlobalMetadata naming the schema, every data dependency names an
  earlier node of its file and every ctrl dependency (a GPU node's
  launching call, which a blocking copy's follows) a node of it, the task nodes are the graph's tasks, the
  launch dependencies its launch edges, the collectives are typed as
  Chakra's feeder reads them and their groups are in comm_group.json.
- Chakra's C++ feeder (et_feeder.cpp, et_feeder_node.cpp, protoio.cc and
  the generated et_def.pb.cc, built here with g++ and Debian's libprotobuf)
  walks every file to its end (tests/interop/feeder_walk.cpp), and for a
  single-rank trace (HTA's nccl_data, 3 steps) the walk's steps are the
  replayed steps within 1%.
- Chakra's sample ET (chakra.0.et, an older schema generation) as stepcast
  imports it: `stepcast replay --json` replays it as the critical path
  through its durations that Chakra's Python reader gives, and `stepcast
  inspect --json` counts its nodes as that reader does.

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


CHAKRA_TYPES = {4: "COMP_NODE", 5: "COMM_SEND_NODE", 6: "COMM_RECV_NODE", 7: "COMM_COLL_NODE"}


def compile_schema(shared, gen, lang):
    """Chakra's et_def.proto compiled by protoc into gen (lang: python, cpp)."""
    os.makedirs(gen, exist_ok=True)
    schema = os.path.join(shared, "interop/chakra/schema/protobuf")
    subprocess.run(["protoc", "-I", schema, "--%s_out=%s" % (lang, gen), os.path.join(schema, "et_def.proto")],
                   check=True)


def chakra_reader(shared, tmp):
    """Chakra's own Python reader: (et_def_pb2, read(path) -> (metadata, nodes))."""
    chakra = os.path.join(shared, "interop/chakra")
    gen = os.path.join(tmp, "pb")
    compile_schema(shared, gen, "python")
    sys.path[:0] = [gen, os.path.join(chakra, "src/third_party/utils")]
    import et_def_pb2 as pb
    from protolib import openFileRd, decodeMessage

    def read(path):
        f = openFileRd(path)
        meta, nodes = pb.GlobalMetadata(), []
        decodeMessage(f, meta)
        while True:
            n = pb.Node()
            if not decodeMessage(f, n):
                break
            nodes.append(n)
        f.close()
        return meta, nodes
    return pb, read


def attrs(node):
    return {a.name: a for a in node.attr}


def test_chakra_reader(cli, shared, tmp):
    pb, read = chakra_reader(shared, tmp)
    tar = os.path.join(shared, "traces/param/et_replay/tests/inputs/dlrm_kineto.tar.gz")
    out = os.path.join(tmp, "et")
    print(stepcast(cli, "export", "chakra", "--out", out, tar).strip())
    graph = json.loads(stepcast(cli, "replay", "--json", tar))["graph"]
    with open(os.path.join(out, "comm_group.json")) as f:
        groups = json.load(f)
    files = sorted(n for n in os.listdir(out) if n.endswith(".et"))
    check(files == ["stepcast.%d.et" % r for r in range(8)], "one .et per rank: %s" % files)
    tasks = ctrl = data = nodes_all = 0
    bad_deps = bad_types = colls = 0
    versions = set()
    for name in files:
        meta, nodes = read(os.path.join(out, name))
        versions.add(meta.version)
        ids, every = {}, {n.id for n in nodes}
        for k, n in enumerate(nodes):
            ids[n.id] = k
            a = attrs(n)
            bad_deps += sum(d not in ids for d in n.data_deps) + sum(d not in every for d in n.ctrl_deps)
            ctrl += len(n.ctrl_deps)
            data += len(n.data_deps)
            derived = n.name == "host work" or n.name.endswith(" latency")
            tasks += not derived
            if n.type == 7:
                colls += 1
                ok = (a.get("comm_type") and a["comm_type"].WhichOneof("value") == "int64_val" and
                      a.get("pg_name") and a["pg_name"].string_val in groups and
                      int(name.split(".")[1]) in groups[a["pg_name"].string_val])
            else:
                ok = n.type in CHAKRA_TYPES and a.get("is_cpu_op") and a["is_cpu_op"].WhichOneof("value") == "bool_val"
            bad_types += not ok
        nodes_all += len(nodes)
    print("DLRM job exported: %d nodes (%d tasks), %d data deps, %d ctrl deps; the graph: %d tasks, %d edges"
          % (nodes_all, tasks, data, ctrl, graph["tasks"], graph["edges"]))
    check(versions == {"0.0.4"}, "GlobalMetadata.version names the schema: %s" % versions)
    check(bad_deps == 0, "every data dependency names an earlier node of its file, every ctrl dependency "
          "a node of it (%d do not)" % bad_deps)
    check(tasks == graph["tasks"], "task nodes %d = the graph's tasks %d" % (tasks, graph["tasks"]))
    check(ctrl == graph["edges_by_kind"]["launch"], "ctrl deps %d = the graph's launch edges %d"
          % (ctrl, graph["edges_by_kind"]["launch"]))
    check(colls == 64, "64 collective nodes (8 NCCL kernels a rank): %d" % colls)
    check(bad_types == 0, "every node typed and attributed as Chakra's feeder reads it (%d not)" % bad_types)


def build_feeder(shared, tmp):
    """Chakra's C++ feeder and tests/interop/feeder_walk.cpp, built."""
    chakra = os.path.join(shared, "interop/chakra")
    gen = os.path.join(tmp, "cc")
    compile_schema(shared, gen, "cpp")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "protobuf"], check=True, capture_output=True,
                           text=True).stdout.split()
    exe = os.path.join(gen, "feeder_walk")
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run(["g++", "-O1", "-std=c++17", "-w", "-I" + gen, "-I" + os.path.join(chakra, "src/feeder"),
                    "-I" + os.path.join(chakra, "src/third_party/utils"), "-o", exe,
                    os.path.join(here, "feeder_walk.cpp"), os.path.join(chakra, "src/feeder/et_feeder.cpp"),
                    os.path.join(chakra, "src/feeder/et_feeder_node.cpp"),
                    os.path.join(chakra, "src/third_party/utils/protoio.cc"), os.path.join(gen, "et_def.pb.cc"),
                    *flags, "-lz"], check=True)
    return exe


def walk(exe, path):
    """The feeder walk of one file: (nodes, {step: us})."""
    out = subprocess.run([exe, path], check=True, capture_output=True, text=True).stdout.split("\n")
    nodes = int(next(line for line in out if line.startswith("nodes "))[6:])
    steps = {line.split()[1]: int(line.split()[2]) for line in out if line.startswith("step ")}
    return nodes, steps


def test_chakra_feeder(cli, shared, tmp):
    exe = build_feeder(shared, tmp)
    _, read = chakra_reader(shared, tmp)
    tar = os.path.join(shared, "traces/param/et_replay/tests/inputs/dlrm_kineto.tar.gz")
    out = os.path.join(tmp, "dlrm")
    stepcast(cli, "export", "chakra", "--out", out, tar)
    replay = json.loads(stepcast(cli, "replay", "--json", tar))
    short, alone = 0, []
    for r in range(8):
        path = os.path.join(out, "stepcast.%d.et" % r)
        nodes, steps = walk(exe, path)
        short += nodes != len(read(path)[1])
        step = next(s for s in replay["steps"] if s["rank"] == r)
        alone.append("%.3f|%.3f" % (steps[step["step"]] / 1000, step["replayed_ms"]))
    check(short == 0, "the feeder walks each DLRM rank's file to its end (%d stop short)" % short)
    print("DLRM, each rank's file walked alone (never waiting for a peer) | replayed, ms: " + " ".join(alone))

    trace = os.path.join(shared, "traces/HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz")
    out = os.path.join(tmp, "single")
    stepcast(cli, "export", "chakra", "--out", out, trace)
    replay = json.loads(stepcast(cli, "replay", "--json", trace))
    nodes, steps = walk(exe, os.path.join(out, "stepcast.0.et"))
    print("single-rank trace (nccl_data), step: walked ms | replayed ms")
    for s in replay["steps"]:
        walked = steps.get(s["step"], 0) / 1000
        print("  %s: %.3f | %.3f" % (s["step"], walked, s["replayed_ms"]))
        check(abs(walked - s["replayed_ms"]) <= 0.01 * s["replayed_ms"],
              "the walk of %s is the replayed step within 1%%" % s["step"])


def test_chakra_sample(cli, shared, tmp):
    _, read = chakra_reader(shared, tmp)
    sample = os.path.join(shared, "interop/chakra/data/chakra.0.et")
    _, nodes = read(sample)
    end = {}
    pending = {n.id: n for n in nodes}
    while pending:
        ready = [n for n in pending.values() if all(d in end for d in n.data_deps)]
        if not ready:
            raise ValueError("the sample's dependencies form a cycle")
        for n in ready:
            end[n.id] = max((end[d] for d in n.data_deps), default=0) + n.duration_micros
            del pending[n.id]
    critical = max(end.values()) / 1000
    replay = json.loads(stepcast(cli, "replay", "--json", sample))["steps"][0]
    print("Chakra's sample: %d nodes; critical path %.3f ms, stepcast replays %.3f ms"
          % (len(nodes), critical, replay["replayed_ms"]))
    check(abs(replay["replayed_ms"] - critical) < 0.0005, "the sample replays as its critical path")
    check(replay["measured_ms"] is None and "error_pct" not in replay, "no measured time, no error")
    inspect = json.loads(stepcast(cli, "inspect", "--json", sample))
    tasks = sum(inspect["ranks"][0]["tasks"].values())
    check(tasks == len(nodes), "inspect counts %d tasks, Chakra's reader %d nodes" % (tasks, len(nodes)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", default="build/stepcast")
    ap.add_argument("--shared", default=os.environ.get("STEPCAST_SHARED", "../shared"))
    a = ap.parse_args()
    cli, shared = os.path.abspath(a.cli), os.path.abspath(a.shared)
    sys.path.insert(0, os.path.join(shared, "interop/hta"))
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in (("hta", test_hta), ("chakra reader", test_chakra_reader),
                         ("chakra feeder", test_chakra_feeder), ("chakra sample", test_chakra_sample)):
            try:
                fn(cli, shared, os.path.join(tmp, name))
            except Exception as e:  # a reader that fails is a failed check, not a crash
                check(False, "%s: %s: %s" % (name, type(e).__name__, e))
    print("%d passed, %d failed" % (PASSED, FAILED))
    return FAILED != 0


if __name__ == "__main__":
    sys.exit(main())
