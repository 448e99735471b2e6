"""What-ifs, a plan and a calibration of one built model through the daemon:
the daemon's CPU time for them (from /proc), medians of repeated rounds,
the first what-if's own, the bytes the model cache holds (the built model,
as /metrics counts it) once the model is built and after the rounds, and
their answers. Usage: model_whatifs.py STEPCASTD TRACE CONFIG_JSON OUT_JSON [RANK].
Each round asks 4 what-ifs; of the 20, one set repeats (memoised)."""
import json, os, subprocess, sys, tempfile, time, urllib.request

TOKEN = "admin-secret-0123456789abcdef"


def call(url, method, path, body=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + TOKEN})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def cache_mb(url):
    for line in call(url, "GET", "/metrics")[1].splitlines():
        if line.startswith("stepcast_model_cache_bytes{"):
            return float(line.split()[1]) / 1e6
    return float("nan")


def main():
    daemon, trace, config, out = sys.argv[1:5]
    rank = sys.argv[5] if len(sys.argv) > 5 else "0"
    rounds = 5
    with tempfile.TemporaryDirectory() as tmp:
        port = os.path.join(tmp, "port")
        env = dict(os.environ, STEPCAST_ADMIN_TOKEN=TOKEN)
        p = subprocess.Popen([daemon, "--data-dir", tmp + "/data", "--listen", "127.0.0.1:0", "--port-file", port],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                if os.path.exists(port) and open(port).read().strip():
                    break
                time.sleep(0.1)
            url = "http://127.0.0.1:%s" % open(port).read().strip()
            st, _ = call(url, "PUT", "/v1/jobs/j/ranks/%s/trace" % rank, raw=open(trace, "rb").read())
            assert st == 201, st
            assert call(url, "PUT", "/v1/jobs/j", {"config": json.load(open(config))})[0] == 200
            st, body = call(url, "POST", "/v1/jobs/j/models", {})
            model = json.loads(body)["id"]
            for _ in range(600):
                if json.loads(call(url, "GET", "/v1/models/" + model)[1]).get("status") == "ready":
                    break
                time.sleep(0.1)
            answers, whatif_s, plan_s = {}, [], []
            built_mb, first_s = cache_mb(url), None
            for r in range(rounds):
                sets = [{"dp": 2 + r}, {"micro_batch": 1 + r % 4, "global_batch": 8 * (1 + r % 4)},
                        {"gpu": "h200", "dp": 8 + r}, {"tp": 2, "dp": 3 + r}]
                t0 = cpu(p.pid)
                for s in sets:
                    t1 = cpu(p.pid)
                    st, body = call(url, "POST", "/v1/models/%s/whatif" % model, {"set": s})
                    if first_s is None:
                        first_s = cpu(p.pid) - t1
                    d = json.loads(body)
                    d.pop("band", None)
                    answers[json.dumps(s, sort_keys=True)] = [st, d]
                whatif_s.append((cpu(p.pid) - t0) / len(sets))
                t0 = cpu(p.pid)
                st, body = call(url, "POST", "/v1/models/%s/plan" % model, {"gpus": 8 + 8 * r, "top": 3})
                plan_s.append(cpu(p.pid) - t0)
                answers["plan %d" % r] = [st, json.loads(body).get("top")]
            med = lambda v: sorted(v)[len(v) // 2]
            print("what-if, daemon CPU per request: median %.1f ms, the first %.1f ms; plan (8 to 40 GPUs, top 3): "
                  "median %.1f ms; model cache %.1f MB once built, %.1f MB after"
                  % (med(whatif_s) * 1e3, first_s * 1e3, med(plan_s) * 1e3, built_mb, cache_mb(url)))
            json.dump(answers, open(out, "w"), indent=1, sort_keys=True)
        finally:
            p.terminate()
            p.wait()


main()
