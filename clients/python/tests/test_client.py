"""Tests of the Python client against a live stepcastd.

    python tests/test_client.py            (STEPCAST_BUILD=build by default)

Starts $STEPCAST_BUILD/stepcastd on 127.0.0.1 (a free port, a temp store,
--max-uploads 1 so a held upload makes the next one busy) and drives every
route the client has, every error class the API can be made to answer, the
retry on 429 and the upload of files, directories and archives. The sample
job comes from data/sample/. The Python example of docs/python.md and the
remote command-line examples of docs/service.md up to the what-if run as
written (TestDocExamples, on ../shared/traces' DLRM traces). Ends with `N passed, N failed`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("STEPCAST_BUILD", "build"))
SAMPLE = os.path.join(ROOT, "data", "sample")
DLRM = os.path.join(ROOT, "..", "shared", "traces", "param", "et_replay", "tests", "inputs", "dlrm_kineto.tar.gz")
DOCS_URL = "http://127.0.0.1:8750"  # the daemon the documents' examples talk to
ADMIN = "admin-secret-0123456789abcdef"

import stepcast  # noqa: E402  (installed, or on PYTHONPATH)
from stepcast import Client, StepcastError  # noqa: E402

D = {}  # the daemon: url, port, proc, dir


def sample_files():
    return sorted(os.path.join(SAMPLE, n) for n in os.listdir(SAMPLE) if n.endswith(".json.gz"))


def setUpModule():
    d = tempfile.mkdtemp(prefix="stepcast-pytest-")
    port_file = os.path.join(d, "port")
    log = open(os.path.join(d, "daemon.log"), "wb")
    proc = subprocess.Popen(
        [os.path.join(BUILD, "stepcastd"), "--data-dir", os.path.join(d, "data"), "--listen", "127.0.0.1:0",
         "--port-file", port_file, "--max-uploads", "1", "--max-json-body", "64K", "--log-level", "warn"],
        env={**os.environ, "STEPCAST_ADMIN_TOKEN": ADMIN}, stderr=log)
    for _ in range(1000):
        if os.path.exists(port_file) and open(port_file).read().strip():
            break
        if proc.poll() is not None:
            raise RuntimeError(f"stepcastd did not start: {open(log.name).read()}")
        time.sleep(0.01)
    port = int(open(port_file).read())
    D.update(url=f"http://127.0.0.1:{port}", port=port, proc=proc, dir=d, log=log)
    c = Client(D["url"], ADMIN)
    c.upload("sample", SAMPLE)
    D["model"] = c.build("sample")["id"]


def tearDownModule():
    D["proc"].terminate()
    D["proc"].wait(30)
    D["log"].close()
    shutil.rmtree(D["dir"], ignore_errors=True)


def admin():
    return Client(D["url"], ADMIN)


class ErrorCase(unittest.TestCase):
    def assertApiError(self, status, code, fn, *args, **kw):
        with self.assertRaises(StepcastError) as cm:
            fn(*args, **kw)
        e = cm.exception
        self.assertEqual((e.status, e.code), (status, code), e.message)
        self.assertTrue(e.message)
        return e


class TestService(ErrorCase):
    def test_health_metrics_openapi_version(self):
        c = admin()
        h = c.health()
        self.assertEqual(h["status"], "ok")
        with open(os.path.join(ROOT, "VERSION")) as f:
            version = f.read().strip()
        self.assertEqual(stepcast.__version__, version)
        self.assertEqual(h["version"], version)
        self.assertTrue("stepcast_http_requests_total{" in c.metrics())
        self.assertIn("/v1/jobs", c.openapi()["paths"])

    def test_every_method_is_a_route_of_the_server(self):
        covered = {
            ("get", "/healthz"): "health", ("get", "/metrics"): "metrics", ("get", "/v1/openapi.json"): "openapi",
            ("get", "/v1/jobs"): "jobs", ("get", "/v1/jobs/{job}"): "job", ("put", "/v1/jobs/{job}"): "put_job",
            ("delete", "/v1/jobs/{job}"): "delete_job", ("get", "/v1/jobs/{job}/ranks/{rank}/trace"): "trace",
            ("put", "/v1/jobs/{job}/ranks/{rank}/trace"): "upload_trace",
            ("post", "/v1/jobs/{job}/models"): "build", ("get", "/v1/models"): "models",
            ("get", "/v1/models/{id}"): "model", ("delete", "/v1/models/{id}"): "delete_model",
            ("get", "/v1/models/{id}/replay"): "replay", ("get", "/v1/models/{id}/critical-path"): "critical_path",
            ("get", "/v1/models/{id}/timeline"): "timeline", ("get", "/v1/tokens"): "tokens",
            ("post", "/v1/tokens"): "create_token", ("delete", "/v1/tokens/{id}"): "revoke_token",
            ("post", "/v1/estimate"): "estimate", ("get", "/v1/hardware"): "hardware",
            ("get", "/v1/hardware/{id}"): "hardware", ("get", "/v1/calibrations"): "calibrations",
            ("get", "/v1/calibrations/{id}"): "calibration",
            ("post", "/v1/calibrations/nccl-tests"): "calibrate_nccl_tests",
            ("post", "/v1/calibrations/gemms"): "calibrate_gemms",
            ("post", "/v1/models/{id}/calibration"): "calibrate_model",
            ("get", "/v1/validations"): "validations", ("post", "/v1/validations"): "add_validation",
            ("delete", "/v1/validations/{id}"): "delete_validation",
            ("post", "/v1/plans"): "plan", ("get", "/v1/plans/{id}"): "plan_status",
            ("delete", "/v1/plans/{id}"): "cancel_plan", ("post", "/v1/models/{id}/plan"): "plan_from_model",
            ("post", "/v1/plans/{id}/resume"): "resume_plan",
        }
        paths = admin().openapi()["paths"]
        for (method, path), name in covered.items():
            self.assertIn(method, paths.get(path, {}), f"{method} {path}")
            self.assertTrue(callable(getattr(Client, name)), name)
        api = {(m, p) for p, ops in paths.items() for m in ops if not (p == "/" or p.startswith("/ui/"))}
        missing = sorted(api - set(covered))
        if missing:
            print(f"\n  (routes of this server the client has no method for: {missing})", file=sys.stderr)

    def test_unreachable(self):
        e = self.assertApiError(None, "unreachable", Client("http://127.0.0.1:1", ADMIN, timeout=2).health)
        self.assertIn("127.0.0.1:1", e.message)


class TestJobsAndUploads(ErrorCase):
    def test_job_description(self):
        c = admin()
        j = c.put_job("described", config={"tp": 2, "dp": 2}, hardware="h100-sxm", description="two by two")
        self.assertEqual((j["id"], j["config"], j["hardware"]), ("described", {"tp": 2, "dp": 2}, "h100-sxm"))
        self.assertEqual(c.put_job("described", description="again")["description"], "again")
        self.assertIn("described", [x["id"] for x in c.jobs()["jobs"]])
        self.assertEqual(c.job("described")["description"], "again")
        self.assertEqual(c.delete_job("described")["id"], "described")
        self.assertApiError(404, "not_found", c.job, "described")

    def test_upload_a_directory_an_archive_and_one_file(self):
        c = admin()
        files = sample_files()
        ranks = [stepcast.trace_rank(f) for f in files]
        self.assertEqual(ranks, [0, 1, 2, 3])  # the sample names its ranks
        with tempfile.TemporaryDirectory() as tmp:
            archive = os.path.join(tmp, "job.tar.gz")
            with tarfile.open(archive, "w:gz") as tar:
                for f in reversed(files):
                    tar.add(f, arcname=f"traces/{os.path.basename(f)}")
            sent = c.upload("from-archive", archive)
        self.assertEqual(sorted(r["rank"] for r in sent), ranks)
        for f in files:
            rank = stepcast.trace_rank(f)
            with open(f, "rb") as fh:
                sha = hashlib.sha256(fh.read()).hexdigest()
            self.assertEqual(c.trace("from-archive", rank)["sha256"], sha)
            self.assertEqual(c.trace("sample", rank)["sha256"], sha)  # the directory, in setUpModule
        again = c.upload("from-archive", files[2])  # identical bytes: 200, same record
        self.assertEqual((again[0]["rank"], again[0]["sha256"]), (2, c.trace("from-archive", 2)["sha256"]))
        c.delete_job("from-archive")

    def test_ranks_by_position_when_the_traces_name_none(self):
        c = admin()
        with tempfile.TemporaryDirectory() as tmp:
            shas = []
            for name, src in (("b.json", sample_files()[0]), ("a.json", sample_files()[1])):
                with gzip.open(src) as f:
                    doc = json.load(f)
                del doc["distributedInfo"]
                data = json.dumps(doc).encode()
                with open(os.path.join(tmp, name), "wb") as f:
                    f.write(data)
                shas.append((name, hashlib.sha256(data).hexdigest()))
            sent = c.upload("positional", os.path.join(tmp, "b.json"), os.path.join(tmp, "a.json"))
            self.assertEqual([r["rank"] for r in sent], [0, 1])
            self.assertEqual(c.trace("positional", 0)["sha256"], dict(shas)["b.json"])
            d = os.path.join(tmp, "dir")
            os.mkdir(d)
            for name in ("b.json", "a.json"):
                shutil.copy(os.path.join(tmp, name), d)
            sent = c.upload("positional-dir", d)  # a directory: in name order
            self.assertEqual([(r["rank"], r["sha256"]) for r in sent], [(0, dict(shas)["a.json"]), (1, dict(shas)["b.json"])])
        c.delete_job("positional")
        c.delete_job("positional-dir")

    def test_upload_refuses_before_sending(self):
        c = admin()
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                f.write("{\"traceEvents\": [")
            with self.assertRaisesRegex(ValueError, "not a trace"):
                c.upload("refused", bad)
            with self.assertRaisesRegex(ValueError, "both rank 0"):
                c.upload("refused", sample_files()[0], sample_files()[0])
            with self.assertRaisesRegex(ValueError, "no such file"):
                c.upload("refused", os.path.join(tmp, "absent"))
        self.assertApiError(404, "not_found", c.job, "refused")


class TestModels(ErrorCase):
    def test_build_waits_with_progress(self):
        c = admin()
        seen = []
        m = c.build("sample", progress=seen.append)
        self.assertEqual((m["status"], m["job"], m["n_ranks"]), ("ready", "sample", 4))
        self.assertTrue(seen and seen[-1] == 1.0 and all(0 <= p <= 1 for p in seen), seen)
        started = c.build("sample", wait=False, steps="1-2")
        # the 202 answer, of this build: it says how the model stands when
        # the answer is written, and a build this small may have ended by then
        self.assertEqual((started["model"], started["job"], started["options"]["steps"]),
                         (started["id"], "sample", "1-2"))
        self.assertIn(started["status"], ("building", "ready"))
        if started["status"] == "ready":
            self.assertEqual(started["progress"], 1.0)
        m2 = c.wait(started["model"])
        self.assertEqual(m2["options"]["steps"], "1-2")
        self.assertEqual({x["id"] for x in c.models(job="sample")["models"]} >= {m["id"], m2["id"]}, True)
        self.assertIn(m["id"], [x["id"] for x in c.models()["models"]])
        self.assertEqual(c.delete_model(m2["id"])["id"], m2["id"])
        self.assertApiError(404, "not_found", c.model, m2["id"])

    def test_a_failed_build(self):
        c = admin()
        e = self.assertApiError(None, "build_failed", c.build, "sample", step_marker="NoSuchMarker")
        failed = [x for x in c.models(job="sample")["models"] if x["status"] == "failed"]
        self.assertTrue(failed)
        self.assertIn(failed[-1]["id"], e.message)
        self.assertApiError(409, "not_ready", c.replay, failed[-1]["id"])

    def test_replay_critical_path_timeline(self):
        c = admin()
        r = c.replay(D["model"])
        self.assertEqual(len(r["steps"]), 12)
        for s in r["steps"]:
            self.assertAlmostEqual(s["replayed_ms"], s["measured_ms"], delta=0.05 * s["measured_ms"])
        slow = c.replay(D["model"], scale={"gpu": 2})
        self.assertTrue(all(b["replayed_ms"] > a["replayed_ms"] for a, b in zip(r["steps"], slow["steps"])))
        one = c.replay(D["model"], scale=["gpu@0=2"])
        self.assertEqual(one["steps"], c.replay(D["model"], scale="gpu@0=2")["steps"])
        kept = c.replay(D["model"], keep_unexplained=True)
        for a, k in zip(r["steps"], kept["steps"]):
            self.assertIn("unexplained_ms", a)
            self.assertIn("unexplained", k["breakdown"])
            self.assertLessEqual(abs(k["error_pct"]), abs(a["error_pct"]) + 0.5)
        self.assertApiError(400, "bad_request", c.request, "GET", f"/v1/models/{D['model']}/replay",
                            query=[("keep_unexplained", "maybe")])
        cp = c.critical_path(D["model"])
        self.assertEqual(len(cp["steps"]), 12)
        self.assertTrue(cp["steps"][0]["path"])
        t = c.timeline(D["model"], 3)
        self.assertTrue(t["traceEvents"])
        self.assertNotEqual(t, c.timeline(D["model"], 3, scale={"gpu": 0.5}))

    def test_opportunities(self):
        c = admin()
        o = c.opportunities(D["model"])
        savings = [x["saving_ms"] for x in o["opportunities"]]
        self.assertEqual(savings, sorted(savings, reverse=True))
        self.assertIn("comm=0", [x["change"] for x in o["opportunities"]])
        self.assertEqual(o["ranks"], 4)
        fleet = c.fleet_opportunities(top=1)
        self.assertEqual(len(fleet["jobs"]), 1)
        self.assertEqual(fleet["jobs"][0]["gpu_ms_per_step"],
                         round(fleet["jobs"][0]["opportunity"]["saving_ms"] * fleet["jobs"][0]["ranks"], 3))
        self.assertApiError(400, "bad_request", c.fleet_opportunities, top=0)

    def test_diff(self):
        c = admin()
        d = c.diff(D["model"], D["model"])
        self.assertEqual(d["difference_ms"], 0)
        self.assertAlmostEqual(sum(d["attribution"].values()), d["difference_ms"], delta=0.001 * len(d["attribution"]))
        self.assertTrue(d["method"].startswith("sequential"))
        self.assertEqual(d["kernels"], {"added": [], "removed": [], "retimed": []})
        self.assertApiError(404, "not_found", c.diff, D["model"], "m-nosuchmodel")
    def test_whatif(self):
        c = admin()
        self.assertApiError(422, "unprocessable", c.whatif, D["model"], {"dp": 8})
        c.put_job("sample", config={"tp": 1, "pp": 1, "dp": 4})
        base = c.replay(D["model"])
        same = c.whatif(D["model"], {})
        for a, b in zip(base["steps"], same["steps"]):
            self.assertAlmostEqual(b["replayed_ms"], a["replayed_ms"], delta=0.005 * a["replayed_ms"])
        self.assertEqual(same["target"]["gpu"], "a100-sxm4-80gb")
        faster = c.whatif(D["model"], {"gpu": "h100-sxm"})
        self.assertLess(faster["step_ms"], same["step_ms"])
        self.assertGreater(faster["from_models_ms"], 0)
        self.assertAlmostEqual(faster["from_models_ms"] + faster["from_measured_ms"], faster["step_ms"], places=3)
        e = self.assertApiError(400, "invalid_json", c.whatif, D["model"], {"dp": 0})
        self.assertIn("set.dp", e.message)

    def test_rows_and_dataframes(self):
        r = admin().replay(D["model"])
        rows = stepcast.rows(r)
        self.assertEqual(len(rows), len(r["steps"]))
        self.assertEqual(rows[0]["breakdown.host"], r["steps"][0]["breakdown"]["host"])
        self.assertEqual(stepcast.rows(admin().jobs())[0]["id"], admin().jobs()["jobs"][0]["id"])
        with self.assertRaises(ValueError):
            stepcast.rows({"nothing": 1})
        try:
            import pandas  # noqa: F401
        except ImportError:
            with self.assertRaisesRegex(ImportError, "needs pandas"):
                stepcast.to_dataframe(r)
        else:
            df = stepcast.to_dataframe(r)
            self.assertEqual(list(df["replayed_ms"]), [s["replayed_ms"] for s in r["steps"]])


class TestTokensAndErrors(ErrorCase):
    def test_tokens_and_scopes(self):
        c = admin()
        t = c.create_token("read", name="notebook")
        self.assertTrue(t["token"].startswith("sct_"))
        self.assertIn(t["id"], [x["id"] for x in c.tokens()["tokens"]])
        reader = Client(D["url"], t["token"])
        self.assertTrue(reader.replay(D["model"])["steps"])
        self.assertApiError(403, "forbidden", reader.put_job, "nope")
        self.assertApiError(403, "forbidden", reader.tokens)
        c.revoke_token(t["id"])
        self.assertApiError(401, "unauthorized", reader.jobs)
        self.assertApiError(401, "unauthorized", Client(D["url"], "sct_" + "0" * 40).jobs)
        admins = [x for x in c.tokens()["tokens"] if x["scope"] == "admin" and not x["revoked"]]
        self.assertApiError(409, "conflict", c.revoke_token, admins[0]["id"])

    def test_each_error_class(self):
        c, m = admin(), D["model"]
        self.assertApiError(400, "invalid_id", c.job, "not an id")
        self.assertApiError(400, "invalid_rank", c.trace, "sample", 99999)
        self.assertApiError(400, "bad_request", c.replay, m, scale="nonsense")
        self.assertApiError(400, "invalid_json", c.request, "PUT", "/v1/jobs/x", body=b"{not json")
        deep = {}
        for _ in range(40):
            deep = {"a": deep}
        self.assertApiError(400, "json_too_deep", c.request, "PUT", "/v1/jobs/x", json={"config": deep})
        self.assertApiError(400, "invalid_trace", c.upload_trace, "x", 0, b"not a trace")
        self.assertApiError(404, "not_found", c.model, "m-none")
        self.assertApiError(404, "no_route", c.request, "GET", "/v1/nothing")
        self.assertApiError(405, "method_not_allowed", c.request, "POST", "/v1/jobs")
        files = sample_files()
        with gzip.open(files[1]) as f:
            unranked = json.load(f)
        del unranked["distributedInfo"]  # other bytes, naming no rank
        self.assertApiError(409, "conflict", c.upload_trace, "sample", 0, json.dumps(unranked).encode())
        self.assertApiError(413, "too_large", c.put_job, "x", description="x" * 100000)
        self.assertApiError(422, "unprocessable", c.upload_trace, "other", 0, files[1])
        self.assertEqual(c.upload_trace("sample", 0, json.dumps(unranked).encode(), replace=True)["rank"], 0)
        self.assertEqual(c.upload_trace("sample", 0, files[0], replace=True)["rank"], 0)
        self.assertApiError(404, "not_found", c.job, "x")  # nothing above created it


SPEC = {"model": {"layers": 8, "hidden": 1024, "heads": 16, "seq": 1024},
        "parallel": {"tp": 2, "dp": 4, "micro_batch": 2, "global_batch": 32},
        "cluster": {"gpu": "h100-sxm"}}
NCCL = os.path.join(ROOT, "tests", "fixtures", "nccl-tests", "sendrecv-2node-synthetic.txt")
GEMMS = os.path.join(ROOT, "tests", "fixtures", "gemm-bench", "h100-synthetic.csv")


class TestEstimationAndLedger(ErrorCase):
    def test_estimate_hardware_calibrations(self):
        c = admin()
        e = c.estimate(SPEC)
        self.assertGreater(e["step_ms"], 0)
        self.assertEqual(e["band"]["needed"], 10)
        self.assertEqual(c.estimate(SPEC, detail="kernel")["per_stage"][0]["stage"], 0)
        self.assertApiError(400, "invalid_spec", c.estimate, {"model": {"layers": 1}})
        self.assertEqual(c.hardware("h100-sxm")["sm_count"], 132)
        self.assertIn("a100-sxm4-80gb", [h["id"] for h in c.hardware()["hardware"]])
        self.assertApiError(404, "not_found", c.hardware, "tpu")
        made = c.calibrate_nccl_tests("py-fabric", NCCL, gpu="h100-sxm")
        self.assertEqual(made["source"], "nccl-tests")
        with open(NCCL) as f:
            again = c.calibrate_nccl_tests("py-fabric", f.read(), gpu="h100-sxm")
        self.assertEqual(again["sha256"], made["sha256"])
        self.assertIn("py-fabric", [x["name"] for x in c.calibrations()["calibrations"]])
        self.assertIn("collective", c.calibration("py-fabric")["profile"])
        lab = c.calibrate_gemms("py-gemms", GEMMS)
        self.assertEqual((lab["source"], lab["gpu"]), ("gemm-bench", "h100-sxm"))
        self.assertIn("kernel", c.calibration("py-gemms")["profile"])
        self.assertApiError(422, "unprocessable", c.calibrate_gemms, "py-gemms", "dtype,batch,m,n,k,us\nbf16,1\n")
        team = c.calibrate_model(D["model"], "py-team", gpu="a100-sxm4-80gb")
        self.assertEqual((team["source"], team["model"]), ("traces", D["model"]))
        spec = dict(SPEC, cluster={"gpu": "h100-sxm", "profile": "py-fabric"})
        self.assertGreater(c.estimate(spec)["step_ms"], 0)

    def test_plan(self):
        c = admin()
        spec = {"model": {"layers": 6, "hidden": 1024, "heads": 16, "seq": 2048},
                "parallel": {"global_batch": 32}, "cluster": {"gpu": "h100-sxm"}}
        seen = []
        p = c.plan(spec, 16, top=3, objective="cost", progress=lambda d, t: seen.append((d, t)))
        self.assertEqual(p["state"], "done")
        self.assertEqual(len(p["top"]), 3)
        self.assertGreater(p["evaluated"], 0)
        costs = [r["estimate"]["gpu_hours_per_m_tokens"] for r in p["top"]]
        self.assertEqual(costs, sorted(costs))
        self.assertEqual(c.plan_status(p["id"])["top"], p["top"])
        one = dict(spec, parallel={"global_batch": 32, "tp": 2, "pp": 1})
        row = p["top"][0]
        est = c.estimate(dict(spec, parallel=row["parallel"], options=row["options"]))
        self.assertEqual(est["step_ms"], row["estimate"]["step_ms"])
        self.assertEqual(c.plan(one, 2, top=1)["top"][0]["parallel"]["tp"], 2)
        self.assertEqual(c.cancel_plan(p["id"])["deleted"], p["id"])
        self.assertApiError(404, "not_found", c.plan_status, p["id"])
        self.assertApiError(400, "invalid_spec", c.plan, {"model": {"layers": 1}}, 8)

    def test_plan_from_model(self):
        c = admin()
        # the job's config, absent or without the model's dimensions (test_whatif sets one), is 422
        e = self.assertApiError(422, "unprocessable", c.plan_from_model, D["model"], 4)
        self.assertIn("config", e.message)
        e = self.assertApiError(400, "bad_request", c.plan_from_model, D["model"], 0)
        self.assertIn("gpus", e.message)
        self.assertApiError(404, "not_found", c.plan_from_model, "nosuch", 4)

    def test_ledger(self):
        c = admin()
        r = c.add_validation(18.0, model=D["model"], source="py", run_at="2026-09-01")
        self.assertEqual(r["kind"], "replay")
        self.assertAlmostEqual(r["error_pct"], (r["predicted_step_ms"] - 18.0) / 18.0 * 100, places=6)
        e = c.add_validation(500.0, spec=SPEC)
        self.assertEqual(e["kind"], "estimate")
        bad = self.assertApiError(400, "invalid_json", c.add_validation, 18.0, model=D["model"], set={"x": 1})
        self.assertIn("set.x", bad.message)
        ledger = c.validations(model=D["model"])
        self.assertIn(r["id"], [x["id"] for x in ledger["entries"]])
        self.assertIn("2026-09", ledger["by_month"])
        self.assertIn("estimate", c.validations(kind="estimate", in_sample=True)["by_kind"])
        self.assertEqual(c.delete_validation(e["id"])["deleted"], "validation")
        self.assertApiError(404, "not_found", c.delete_validation, e["id"])


class TestRetry(ErrorCase):
    def hold_upload_slot(self):
        """A raw upload that sends its headers and one byte, holding the only
        upload slot until the socket closes."""
        s = socket.create_connection(("127.0.0.1", D["port"]))
        s.sendall(f"PUT /v1/jobs/held/ranks/0/trace HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ADMIN}\r\n"
                  "Content-Length: 100000\r\n\r\n{".encode())
        for _ in range(500):
            if re.search(r"^stepcast_uploads_in_progress\{[^}]*\} 1$", admin().metrics(), re.M):
                return s
            time.sleep(0.01)
        s.close()
        self.fail("the held upload never started")

    def test_busy_without_retries(self):
        s = self.hold_upload_slot()
        try:
            e = self.assertApiError(429, "busy", Client(D["url"], ADMIN, retries=0).upload_trace,
                                    "retry", 0, sample_files()[0])
            self.assertEqual(e.retry_after, 1.0)
        finally:
            s.close()

    def test_busy_retried_after_retry_after(self):
        s = self.hold_upload_slot()
        threading.Timer(0.3, s.close).start()
        t0 = time.monotonic()
        r = admin().upload_trace("retry", 0, sample_files()[0])
        self.assertGreaterEqual(time.monotonic() - t0, 0.95)  # waited the second it was told
        self.assertEqual(r["rank"], 0)
        admin().delete_job("retry")


def doc_blocks(doc, lang, holding):
    """The fenced code blocks in `lang` of the document `doc` (a path from
    the repository's root) that hold the text `holding`."""
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        text = f.read()
    return [b for b in re.findall(r"^```" + lang + r"\n(.*?)^```", text, re.S | re.M) if holding in b]


class TestDocExamples(unittest.TestCase):
    """The documents' examples, run as written in a folder laid out as the
    repository's root is after `make run` (build/, var/admin.token) with the
    DLRM traces beside them; only the daemon's URL is this test's."""

    def setUp(self):
        if not os.path.exists(DLRM):
            self.skipTest(f"{DLRM} is absent: the examples use the shared DLRM traces")
        self.dir = tempfile.mkdtemp(prefix="stepcast-readme-")
        os.mkdir(os.path.join(self.dir, "var"))
        with open(os.path.join(self.dir, "var", "admin.token"), "w") as f:
            f.write(ADMIN + "\n")
        os.symlink(DLRM, os.path.join(self.dir, "dlrm_kineto.tar.gz"))
        os.symlink(BUILD, os.path.join(self.dir, "build"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_example(self, argv):
        p = subprocess.run(argv, cwd=self.dir, capture_output=True, text=True, timeout=300,
                           env={k: v for k, v in os.environ.items() if not k.startswith("STEPCAST_")})
        self.assertEqual(p.returncode, 0, f"{argv[:2]}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        return p.stdout

    def test_python_client_example(self):
        (code,) = doc_blocks("docs/python.md", "python", "Client(")
        self.assertIn(DOCS_URL, code)
        out = self.run_example([sys.executable, "-c", code.replace(DOCS_URL, D["url"])])
        self.assertRegex(out, r"ms -> [0-9.]+ ms on 16 H100s")
        self.assertIn("404 not_found no job 'nope'", out)

    def test_remote_command_line_whatif_example(self):
        """The remote mode's block up to its what-if: the description set,
        the traces uploaded, a model built and the what-if asked of it."""
        (block,) = doc_blocks("docs/service.md", "sh", "whatif --model")
        lines = []
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line)  # the comments
            line = re.sub(r" \[[^]]*\]", "", line)  # options shown in brackets
            if re.match(r"(export |echo |M=|build/stepcast (job config |upload --job dlrm dlrm_kineto|whatif ))", line):
                lines.append(line)
        self.assertEqual(len(lines), 6, lines)
        self.assertIn(DOCS_URL, lines[0])
        script = "set -e\n" + "\n".join(lines).replace(DOCS_URL, D["url"])
        out = self.run_example(["bash", "-c", script])
        self.assertRegex(out, r"step [0-9.]+ ms \(base replayed [0-9.]+ ms\)")


if __name__ == "__main__":
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(
        unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__]))
    bad = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    ok = result.testsRun - bad - len(result.skipped)
    print(f"{ok} passed, {bad} failed")
    sys.exit(1 if bad else 0)
