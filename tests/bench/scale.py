#!/usr/bin/env python3
"""tests/bench/scale.py: jobs of many ranks and many GB replayed in bounded memory.

Two jobs by default, each generated gzip-compressed by gentrace (`--gzip`:
nothing is stored uncompressed) into a temporary folder removed after:

- 512 ranks of about 100 MB of JSON (`--steps 515 --layers 32`, 51 GB):
  `stepcast replay --json DIR` folded (the default over 64 ranks) under
  8 GB of peak RSS, and `--no-fold` under 16 GB, each under 10 minutes;
- 4,096 ranks of about 20 MB (`--steps 103 --layers 32`, 82 GB): folded,
  under 8 GB and 10 minutes.

For each run: wall time, CPU time (user + system) and peak RSS (wait4), the
peak per MB of JSON, per task of the graph and per rank. Then each job
through the daemon: stepcastd on an ephemeral port, the ranks uploaded
compressed (`stepcast upload`), the model built (`stepcast build --wait`,
folded) and its replay fetched (`stepcast replay --model M --json`): the
daemon's peak RSS (VmHWM) after the uploads and after the build, its CPU
time, and the replay checked equal to the command line's folded one; the
build's growth against the estimate its admission logged (event=start).
Fails (exit 1) past a bound, past the estimate or when the replays differ.

Knobs: SCALE_JOBS ("RANKS:STEPS:NOFOLD ...", default "512:515:1 4096:103:0";
NOFOLD 1 also replays --no-fold), SCALE_DAEMON (1; 0: skip the daemon),
SCALE_CLI (1; 0: the daemon's road alone, its replay not compared),
SCALE_REUSE (a folder holding r<RANKS> jobs already generated: used and
kept), SCALE_NICE (19: the niceness the runs get), BUILD (build)."""
import gzip, json, os, re, shutil, signal, struct, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
JOBS = [tuple(int(x) for x in j.split(":")) for j in os.environ.get("SCALE_JOBS", "512:515:1 4096:103:0").split()]
DAEMON = os.environ.get("SCALE_DAEMON", "1") != "0"
CLI = os.environ.get("SCALE_CLI", "1") != "0"
REUSE = os.environ.get("SCALE_REUSE")
NICE = ["nice", "-n", os.environ.get("SCALE_NICE", "19")]
GB = 1 << 30
FOLDED_LIMIT, WHOLE_LIMIT, WALL_LIMIT = 8 * GB, 16 * GB, 600.0


def run(argv, out=None, env=None):
    """(wall seconds, peak RSS bytes, CPU seconds) of argv, stdout to the file `out`."""
    t0 = time.perf_counter()
    with open(out or os.devnull, "wb") as f:
        p = subprocess.Popen(NICE + argv, stdout=f, stderr=subprocess.PIPE, env=env)
        _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if status != 0:
        sys.exit("bench_scale: %s failed: %s" % (" ".join(argv), err.strip()[-2000:]))
    return dt, ru.ru_maxrss * 1024, ru.ru_utime + ru.ru_stime


def job_bytes(d):
    """(gzip bytes on disk, JSON bytes) of a job's .json.gz files (each
    under 4 GB of JSON: the gzip trailer's size)."""
    disk = json_bytes = 0
    for name in os.listdir(d):
        path = os.path.join(d, name)
        disk += os.path.getsize(path)
        with open(path, "rb") as f:
            f.seek(-4, 2)
            json_bytes += struct.unpack("<I", f.read(4))[0]
    return disk, json_bytes


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


def per(rss, json_bytes, tasks, ranks):
    return "%.0f MB peak, %.3f MB per MB of JSON, %.0f bytes per task, %.2f MB per rank" % (
        rss / 1e6, rss / json_bytes, rss / max(tasks, 1), rss / 1e6 / ranks)


def daemon_road(tmp, job, ranks, json_bytes, cli_json):
    """Upload, build and replay the job through stepcastd; True when it held."""
    data, port, token = (os.path.join(tmp, n) for n in ("data", "port", "admin.token"))
    log = open(os.path.join(tmp, "daemon.log"), "wb")
    # the default --memory-budget (half the memory): the build's admission
    # counts a folded job's ranks as its representatives (daemon/built.h)
    d = subprocess.Popen(NICE + [os.path.join(BUILD, "stepcastd"), "--data-dir", data, "--listen", "127.0.0.1:0",
                                 "--port-file", port, "--admin-token-file", token, "--cache-bytes", "8G"],
                         stdout=log, stderr=log)
    ok = True
    try:
        for _ in range(3000):
            if os.path.exists(port) and os.path.getsize(port) > 0:
                break
            time.sleep(0.01)
        else:
            sys.exit("bench_scale: stepcastd did not start")
        pid = d.pid  # nice runs stepcastd in its own process
        env = dict(os.environ, STEPCAST_SERVER="http://127.0.0.1:" + open(port).read().strip(),
                   STEPCAST_TOKEN=open(token).read().strip())
        cli = os.path.join(BUILD, "stepcast")
        cpu0 = cpu_of(pid)
        t_up, _, _ = run([cli, "upload", "--job", "scale", job], env=env)
        hwm_up, cpu_up = vm(pid, "VmHWM"), cpu_of(pid) - cpu0
        stored = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(data) for f in fs)
        idfile = os.path.join(tmp, "model.id")
        cpu0 = cpu_of(pid)
        t_build, _, _ = run([cli, "build", "--job", "scale", "--wait"], out=idfile, env=env)
        hwm_build, rss, cpu = vm(pid, "VmHWM"), vm(pid, "VmRSS"), cpu_of(pid) - cpu0
        model = open(idfile).read().strip()
        out = os.path.join(tmp, "daemon-replay.json")
        t_replay, _, _ = run([cli, "replay", "--model", model, "--json"], out=out, env=env)
        hwm = vm(pid, "VmHWM")
        doc = json.load(open(out))
        same = cli_json is None or steps_of(doc) == steps_of(cli_json)
        tasks = doc["graph"]["tasks"]
        print("  daemon (stepcastd --cache-bytes 8G), the same job:")
        print("    stepcast upload --job scale DIR     %7.1f s  (daemon CPU %.1f s) peak RSS %.0f MB; %.1f GB "
              "stored (the gzip as uploaded)" % (t_up, cpu_up, hwm_up / 1e6, stored / 1e9))
        print("    stepcast build --job scale --wait   %7.1f s  (daemon CPU %.1f s) %s; %.0f MB resident after" %
              (t_build, cpu, per(hwm_build, json_bytes, tasks, ranks), rss / 1e6))
        print("    stepcast replay --model M --json    %7.1f s  daemon peak RSS %.0f MB; steps equal to the "
              "command line's: %s" % (t_replay, hwm / 1e6, "not run" if cli_json is None else "yes" if same else "NO"))
        log.flush()
        found = re.search(r"event=start .*?estimate=(\d+)", open(log.name, errors="replace").read())
        estimate = int(found.group(1)) if found else 0
        print("    the build's admission estimate %.0f MB; its peak grew the daemon by %.0f MB (x%.2f)" %
              (estimate / 1e6, (hwm_build - hwm_up) / 1e6, (hwm_build - hwm_up) / max(estimate, 1)))
        if not same:
            ok = False
        if hwm_build - hwm_up > estimate:
            print("    the build outgrew its admission estimate (daemon/built.h)")
            ok = False
        if hwm > FOLDED_LIMIT or t_build > WALL_LIMIT:
            print("    over the bound (%.0f GB, %.0f s)" % (FOLDED_LIMIT / GB, WALL_LIMIT))
            ok = False
        return ok
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait()
        log.close()


def main():
    gentrace, stepcast = os.path.join(BUILD, "gentrace"), os.path.join(BUILD, "stepcast")
    ok = True
    for ranks, steps, nofold in JOBS:
        tmp = tempfile.mkdtemp(prefix="stepcast-scale-", dir=os.environ.get("TMPDIR", "/tmp"))
        try:
            job = os.path.join(REUSE, "r%d" % ranks) if REUSE else ""
            gen = [gentrace, "--ranks", str(ranks), "--steps", str(steps), "--layers", "32", "--gzip"]
            print("== %d ranks: gentrace %s DIR" % (ranks, " ".join(gen[1:])))
            if not (job and os.path.isdir(job)):
                job = os.path.join(tmp, "job")
                wall, _, cpu = run(gen + [job])
                print("  generated in %.1f s (CPU %.1f s)" % (wall, cpu))
            disk, json_bytes = job_bytes(job)
            print("  %.1f GB of JSON (%.1f MB a rank), %.1f GB of gzip on disk" %
                  (json_bytes / 1e9, json_bytes / 1e6 / ranks, disk / 1e9))
            cli_json = None
            for flag in (([], ["--no-fold"]) if nofold else ([],)) if CLI else ():
                out = os.path.join(tmp, "replay.json")
                argv = [stepcast, "replay", "--json"] + flag + [job]
                wall, rss, cpu = run(argv, out=out)
                doc = json.load(open(out))
                tasks = doc["graph"]["tasks"]
                limit = WHOLE_LIMIT if flag else FOLDED_LIMIT
                print("  stepcast replay --json %-10s %7.1f s wall, %7.1f s CPU, %.0f MB/s; %d tasks; %s" %
                      (" ".join(flag), wall, cpu, json_bytes / 1e6 / wall, tasks, per(rss, json_bytes, tasks, ranks)))
                fold = doc.get("folding") or {}
                reps = fold.get("representatives", ranks)
                print("    folded: %d ranks into %d" % (fold["ranks"], reps) if fold else "    not folded")
                if len(doc["steps"]) != reps * steps or fold.get("ranks", ranks) != ranks:
                    print("    steps replayed: %d, want %d" % (len(doc["steps"]), reps * steps))
                    ok = False
                if rss >= limit or wall > WALL_LIMIT:
                    print("    over the bound (%.0f GB, %.0f s)" % (limit / GB, WALL_LIMIT))
                    ok = False
                if not flag:
                    cli_json = doc
                os.unlink(out)
            if DAEMON:
                ok = daemon_road(tmp, job, ranks, json_bytes, cli_json) and ok
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
