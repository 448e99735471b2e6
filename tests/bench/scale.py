#!/usr/bin/env python3
"""tests/bench/scale.py: many-rank jobs built and replayed in bounded memory.

For gentrace jobs of 64, 256 and 512 ranks of about 20 MB each
(`gentrace --ranks R --steps 103 --layers 32`), each generated into a
temporary folder and removed after: `stepcast replay --json DIR` (load every
rank, build the graph, replay, print), its wall time and peak RSS (wait4),
CPU time (user + system) and the peak RSS per MB of trace. Then, for the largest job, the daemon's
road: stepcastd on an ephemeral port, the ranks uploaded with `stepcast
upload`, the model built (`stepcast build --wait`) and its replay fetched;
the daemon's peak RSS (VmHWM) after the uploads and after the build, and
the replay checked equal to the command line's. Fails (exit 1) when the
512-rank job peaks at 4 GB or more on either road, or the replays differ.

Knobs: SCALE_RANKS (default "64 256 512"), SCALE_STEPS (103),
SCALE_DAEMON (1: the daemon's road for the largest job; 0: skip it),
BUILD (build)."""
import json, os, shutil, signal, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
RANKS = [int(r) for r in os.environ.get("SCALE_RANKS", "64 256 512").split()]
STEPS = int(os.environ.get("SCALE_STEPS", "103"))
DAEMON = os.environ.get("SCALE_DAEMON", "1") != "0"
LIMIT = 4 << 30  # bytes: the bound for the 512-rank job


def run(argv, out=None, env=None):
    """(wall seconds, peak RSS bytes, CPU seconds) of argv, stdout to the file `out`."""
    t0 = time.perf_counter()
    with open(out or os.devnull, "wb") as f:
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.PIPE, env=env)
        _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if status != 0:
        sys.exit("bench_scale: %s failed: %s" % (" ".join(argv), err.strip()[-2000:]))
    return dt, ru.ru_maxrss * 1024, ru.ru_utime + ru.ru_stime


def folder_bytes(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))


def vm(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_of(pid):
    """User + system CPU seconds of a running process."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steps_of(doc):
    return [(s["rank"], s["step"], s["replayed_ms"]) for s in doc["steps"]]


def daemon_road(tmp, job, size, cli_json):
    """Upload, build and replay the job through stepcastd; True when it held."""
    data, port, token = (os.path.join(tmp, n) for n in ("data", "port", "admin.token"))
    log = open(os.path.join(tmp, "daemon.log"), "wb")
    d = subprocess.Popen([os.path.join(BUILD, "stepcastd"), "--data-dir", data, "--listen", "127.0.0.1:0",
                          "--port-file", port, "--admin-token-file", token, "--cache-bytes", "8G"],
                         stdout=log, stderr=log)
    try:
        for _ in range(1000):
            if os.path.exists(port) and os.path.getsize(port) > 0:
                break
            time.sleep(0.01)
        else:
            sys.exit("bench_scale: stepcastd did not start")
        env = dict(os.environ, STEPCAST_SERVER="http://127.0.0.1:" + open(port).read().strip(),
                   STEPCAST_TOKEN=open(token).read().strip())
        cli = os.path.join(BUILD, "stepcast")
        t_up, _, _ = run([cli, "upload", "--job", "scale", job], env=env)
        hwm_up = vm(d.pid, "VmHWM")
        idfile = os.path.join(tmp, "model.id")
        cpu0 = cpu_of(d.pid)
        t_build, _, _ = run([cli, "build", "--job", "scale", "--wait"], out=idfile, env=env)
        hwm_build, rss, cpu = vm(d.pid, "VmHWM"), vm(d.pid, "VmRSS"), cpu_of(d.pid) - cpu0
        model = open(idfile).read().strip()
        out = os.path.join(tmp, "daemon-replay.json")
        t_replay, _, _ = run([cli, "replay", "--model", model, "--json"], out=out, env=env)
        same = steps_of(json.load(open(out))) == steps_of(cli_json)
        mb = size / 1e6
        print("  daemon (stepcastd --cache-bytes 8G), the same job:")
        print("    stepcast upload --job scale DIR     %7.1f s" % t_up)
        print("    stepcast build --job scale --wait   %7.1f s  (daemon CPU %.1f s) daemon peak RSS %.0f MB (%.0f MB "
              "after the uploads), %.3f MB per MB of trace; %.0f MB resident after" %
              (t_build, cpu, hwm_build / 1e6, hwm_up / 1e6, hwm_build / 1e6 / mb, rss / 1e6))
        print("    stepcast replay --model M --json    %7.1f s  steps equal to the command line's: %s" %
              (t_replay, "yes" if same else "NO"))
        return same and hwm_build < LIMIT
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait()
        log.close()


def main():
    gentrace, stepcast = os.path.join(BUILD, "gentrace"), os.path.join(BUILD, "stepcast")
    ok = True
    print("ranks | trace MB | per rank MB | stepcast replay wall s | CPU s | MB/s | peak RSS MB | RSS MB per MB of trace")
    for i, ranks in enumerate(RANKS):
        tmp = tempfile.mkdtemp(prefix="stepcast-scale-")
        try:
            job = os.path.join(tmp, "job")
            gen = [gentrace, "--ranks", str(ranks), "--steps", str(STEPS), "--layers", "32", job]
            run(gen)
            size = folder_bytes(job)
            out = os.path.join(tmp, "replay.json")
            wall, rss, cpu = run([stepcast, "replay", "--json", job], out=out)
            mb = size / 1e6
            print("%5d | %8.0f | %11.1f | %22.1f | %5.1f | %4.0f | %11.0f | %.3f" %
                  (ranks, mb, mb / ranks, wall, cpu, mb / wall, rss / 1e6, rss / size))
            print("  commands: %s; stepcast replay --json DIR" % " ".join(["gentrace"] + gen[1:-1] + ["DIR"]))
            doc = json.load(open(out))
            if len(doc["steps"]) != ranks * STEPS:
                print("  steps replayed: %d, want %d" % (len(doc["steps"]), ranks * STEPS))
                ok = False
            if ranks >= 512 and rss >= LIMIT:
                print("  over the 4 GB bound")
                ok = False
            if DAEMON and i == len(RANKS) - 1:
                ok = daemon_road(tmp, job, size, doc) and ok
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
