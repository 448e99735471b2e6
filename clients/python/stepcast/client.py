"""The client of stepcastd's REST API (README.md "API"): one method per
route, each returning the API's JSON document as plain dicts and lists.

Every request goes through :meth:`Client.request`, which sends the token,
turns error replies into :class:`StepcastError` and retries answers that
say when to come back (429 and 503 with ``Retry-After``). A route is one
small method on top of it, for instance::

    def whatif(self, model: str, set: Mapping[str, Any]) -> Doc:
        return self.request("POST", _path("/v1/models/{}/whatif", model), json={"set": dict(set)})

Identifiers go into paths as one escaped segment each (``_path``).
"""

from __future__ import annotations

import json as jsonlib
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import __version__
from .traces import PathLike, trace_units

Doc = Dict[str, Any]
# scale= of replay queries: {"gpu": 2, "gpu@1": 0.5} or ["gpu=2", "gpu@1=0.5"]
Scale = Union[Mapping[str, float], Iterable[str], None]


class StepcastError(Exception):
    """An error answer of the API, or a request that got none.

    ``code`` is the API's error code (``not_found``, ``busy``, ...; README.md
    lists them), ``status`` the HTTP status, ``message`` what was wrong.
    Failures without an HTTP answer have ``status`` None and the codes
    ``unreachable`` (no connection), ``build_failed`` and ``timeout``
    (:meth:`Client.wait`)."""

    def __init__(self, status: Optional[int], code: str, message: str, *,
                 request_id: Optional[str] = None, retry_after: Optional[float] = None):
        super().__init__(f"{code} ({status}): {message}" if status else f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.retry_after = retry_after


def _path(template: str, *params: Any) -> str:
    """A path from a template with ``{}`` for each parameter, each escaped as
    one path segment."""
    return template.format(*(urllib.parse.quote(str(p), safe="") for p in params))


def _replay_query(scale: Scale, keep_unexplained: bool) -> List[Tuple[str, str]]:
    return _scale_query(scale) + ([("keep_unexplained", "true")] if keep_unexplained else [])


def _scale_query(scale: Scale) -> List[Tuple[str, str]]:
    if scale is None:
        return []
    if isinstance(scale, Mapping):
        return [("scale", f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}") for k, v in scale.items()]
    if isinstance(scale, str):
        return [("scale", scale)]
    return [("scale", s) for s in scale]


def _retry_after(value: Optional[str]) -> Optional[float]:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


class Client:
    """A stepcastd at ``url`` (``http://127.0.0.1:8750``) with a token (read
    scope queries; write uploads and builds; admin deletes and tokens).

    ``token`` defaults to ``$STEPCAST_TOKEN``. ``retries`` is how many times
    an answer with ``Retry-After`` (429 busy, 503 unavailable) is retried,
    waiting what the server asks, at most ``max_wait`` seconds each time."""

    def __init__(self, url: str, token: Optional[str] = None, *, timeout: float = 60.0,
                 retries: int = 5, max_wait: float = 30.0):
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("STEPCAST_TOKEN")
        self.timeout = timeout
        self.retries = retries
        self.max_wait = max_wait

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    # ---- the one place requests are made ----

    def request(self, method: str, path: str, *, query: Sequence[Tuple[str, Any]] = (),
                json: Any = None, file: Optional[PathLike] = None, body: Optional[bytes] = None,
                text: bool = False) -> Any:
        """Send one request; the JSON answer (str with ``text``). ``json`` is
        sent as a JSON body, ``file`` (streamed) or ``body`` as raw bytes."""
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode([(k, str(v)) for k, v in query])
        headers = {"User-Agent": f"stepcast-python/{__version__}", "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if json is not None:
            body = jsonlib.dumps(json).encode()
            headers["Content-Type"] = "application/json"
        attempt = 0
        while True:
            try:
                return self._send(method, url, headers, file, body, text)
            except StepcastError as e:
                if e.retry_after is None or attempt >= self.retries:
                    raise
                attempt += 1
                time.sleep(min(e.retry_after, self.max_wait))

    def list(self, path: str, key: str, query: Sequence[Tuple[str, Any]] = ()) -> Doc:
        """Every row of a list route: its pages of 1,000 rows, each asked
        for with the ``next_cursor`` of the one before, the rows of ``key``
        appended to the first page's and ``skipped`` summed."""
        doc = self.request("GET", path, query=[*query, ("limit", 1000)])
        cursor = doc.pop("next_cursor", None)
        while cursor:
            page = self.request("GET", path, query=[*query, ("limit", 1000), ("cursor", cursor)])
            doc[key].extend(page[key])
            doc["skipped"] = doc.get("skipped", 0) + page.get("skipped", 0)
            cursor = page.get("next_cursor")
        return doc

    def _send(self, method: str, url: str, headers: Dict[str, str], file: Optional[PathLike],
              body: Optional[bytes], text: bool) -> Any:
        f = open(file, "rb") if file is not None else None
        try:
            data: Any = f if f is not None else body
            h = dict(headers)
            if f is not None:
                h["Content-Length"] = str(os.fstat(f.fileno()).st_size)
                h["Content-Type"] = "application/octet-stream"
            req = urllib.request.Request(url, data=data, method=method, headers=h)
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                raw = res.read()
        except urllib.error.HTTPError as e:
            raise self._error(e) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise StepcastError(None, "unreachable", f"{self.url}: {reason}") from None
        finally:
            if f is not None:
                f.close()
        return raw.decode() if text else jsonlib.loads(raw) if raw else None

    @staticmethod
    def _error(e: urllib.error.HTTPError) -> StepcastError:
        raw = e.read()
        code, message = f"http_{e.code}", raw.decode(errors="replace").strip()[:500] or str(e.reason)
        try:
            err = jsonlib.loads(raw)["error"]
            code, message = err["code"], err["message"]
        except (ValueError, KeyError, TypeError):
            pass
        retry = _retry_after(e.headers.get("Retry-After")) if e.code in (429, 503) else None
        return StepcastError(e.code, code, message, request_id=e.headers.get("X-Request-Id"),
                             retry_after=retry)

    # ---- the service ----

    def health(self) -> Doc:
        """``GET /healthz``: status, version, uptime, builds."""
        return self.request("GET", "/healthz")

    def metrics(self) -> str:
        """``GET /metrics``: the Prometheus text."""
        return self.request("GET", "/metrics", text=True)

    def openapi(self) -> Doc:
        """``GET /v1/openapi.json``: the OpenAPI document of this server."""
        return self.request("GET", "/v1/openapi.json")

    # ---- jobs and traces ----

    def jobs(self) -> Doc:
        """``GET /v1/jobs``: ``{"jobs": [job, ...]}``."""
        return self.list("/v1/jobs", "jobs")

    def job(self, job: str) -> Doc:
        """``GET /v1/jobs/{job}``: the job with its traces and models."""
        return self.request("GET", _path("/v1/jobs/{}", job))

    def put_job(self, job: str, *, config: Optional[Mapping[str, Any]] = None,
                hardware: Optional[str] = None, description: Optional[str] = None) -> Doc:
        """``PUT /v1/jobs/{job}``: create the job or replace its description."""
        body = {k: v for k, v in (("config", config), ("hardware", hardware),
                                  ("description", description)) if v is not None}
        return self.request("PUT", _path("/v1/jobs/{}", job), json=body)

    def delete_job(self, job: str) -> Doc:
        """``DELETE /v1/jobs/{job}`` (admin): the job, its traces and models."""
        return self.request("DELETE", _path("/v1/jobs/{}", job))

    def trace(self, job: str, rank: int) -> Doc:
        """``GET /v1/jobs/{job}/ranks/{rank}/trace``: the trace's record."""
        return self.request("GET", _path("/v1/jobs/{}/ranks/{}/trace", job, rank))

    def upload_trace(self, job: str, rank: int, trace: Union[PathLike, bytes], *,
                     replace: bool = False) -> Doc:
        """``PUT /v1/jobs/{job}/ranks/{rank}/trace``: one rank's trace, a file
        (streamed) or bytes, plain or gzip. 201 created, 200 identical."""
        query = [("replace", "true")] if replace else []
        path = _path("/v1/jobs/{}/ranks/{}/trace", job, rank)
        if isinstance(trace, (bytes, bytearray)):
            return self.request("PUT", path, query=query, body=bytes(trace))
        return self.request("PUT", path, query=query, file=trace)

    def upload(self, job: str, *paths: PathLike, replace: bool = False) -> List[Doc]:
        """Upload the traces of files, directories and tar(.gz) archives, each
        to the rank it names (``distributedInfo.rank``, else its position),
        as ``stepcast upload`` does. Each is read and checked first; raises
        ValueError for one that is no trace or two claiming one rank."""
        if not paths:
            raise ValueError("upload() needs a file, directory or archive")
        with trace_units(paths) as units:
            return [self.upload_trace(job, u.rank, u.path, replace=replace) for u in units]

    # ---- models ----

    def build(self, job: str, *, steps: Optional[str] = None, step_marker: Optional[str] = None,
              wait: bool = True, progress: Optional[Callable[[float], None]] = None,
              poll: float = 0.25, timeout: Optional[float] = None) -> Doc:
        """``POST /v1/jobs/{job}/models``: build a model of the job's traces
        (``steps`` "A-B", ``step_marker`` a CPU annotation's prefix). With
        ``wait``, returns the finished model (see :meth:`wait`); else the
        202 answer, ``{"model": ID, "status": "building", ...}`` (``"ready"``
        or ``"failed"`` when the build ended before the answer was written)."""
        body = {k: v for k, v in (("steps", steps), ("step_marker", step_marker)) if v is not None}
        started = self.request("POST", _path("/v1/jobs/{}/models", job), json=body)
        if not wait:
            return started
        return self.wait(started["model"], progress=progress, poll=poll, timeout=timeout)

    def wait(self, model: str, *, progress: Optional[Callable[[float], None]] = None,
             poll: float = 0.25, timeout: Optional[float] = None) -> Doc:
        """Poll a model until its build ends; ``progress`` gets its progress
        (0..1) at each poll. Returns the ready model; raises StepcastError
        ``build_failed`` (its error as message) or ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            m = self.model(model)
            if progress is not None:
                progress(1.0 if m["status"] == "ready" else float(m.get("progress") or 0.0))
            if m["status"] == "ready":
                return m
            if m["status"] != "building":
                raise StepcastError(None, "build_failed", f"model {model}: {m.get('error') or m['status']}")
            if deadline is not None and time.monotonic() >= deadline:
                raise StepcastError(None, "timeout", f"model {model} is still building after {timeout} s")
            time.sleep(poll)

    def models(self, job: Optional[str] = None) -> Doc:
        """``GET /v1/models[?job=J]``: ``{"models": [model, ...]}``."""
        return self.list("/v1/models", "models", [("job", job)] if job is not None else [])

    def model(self, model: str) -> Doc:
        """``GET /v1/models/{id}``: status, progress, error, summary."""
        return self.request("GET", _path("/v1/models/{}", model))

    def delete_model(self, model: str) -> Doc:
        """``DELETE /v1/models/{id}`` (admin)."""
        return self.request("DELETE", _path("/v1/models/{}", model))

    def replay(self, model: str, scale: Scale = None, keep_unexplained: bool = False) -> Doc:
        """``GET /v1/models/{id}/replay``: predicted step time per rank and
        step, error, breakdown and ``unexplained_ms``; ``scale`` as
        ``{"gpu": 2, "gpu@1": 0.5}`` or ``["gpu=2"]``; ``keep_unexplained``
        keeps the waits the trace does not explain."""
        return self.request("GET", _path("/v1/models/{}/replay", model),
                            query=_replay_query(scale, keep_unexplained))

    def critical_path(self, model: str, scale: Scale = None, keep_unexplained: bool = False) -> Doc:
        """``GET /v1/models/{id}/critical-path``: the replayed step's critical
        path, segment by segment, and its time by bound."""
        return self.request("GET", _path("/v1/models/{}/critical-path", model),
                            query=_replay_query(scale, keep_unexplained))

    def timeline(self, model: str, rank: int, scale: Scale = None, keep_unexplained: bool = False) -> Doc:
        """``GET /v1/models/{id}/timeline?rank=R``: rank R's replayed timeline
        as a Kineto trace (``json.dump`` it to open in Perfetto)."""
        return self.request("GET", _path("/v1/models/{}/timeline", model),
                            query=[("rank", rank)] + _replay_query(scale, keep_unexplained))

    def opportunities(self, model: str) -> Doc:
        """``GET /v1/models/{id}/opportunities``: what would shorten the step,
        ranked, each saving measured by a replay, with its Amdahl bound."""
        return self.request("GET", _path("/v1/models/{}/opportunities", model))

    def fleet_opportunities(self, top: int = 10) -> Doc:
        """``GET /v1/opportunities?top=N``: the ready models ranked by the GPU
        time per step their best opportunity wins back across their ranks."""
        return self.request("GET", "/v1/opportunities", query=[("top", top)])

    def diff(self, model: str, other: str) -> Doc:
        """``POST /v1/models/{a}/diff``: this model (run A) against ``other``
        (run B): the step-time difference attributed by replays, kernels
        added, removed and re-timed."""
        return self.request("POST", _path("/v1/models/{}/diff", model), json={"other": other})

    def whatif(self, model: str, set: Mapping[str, Any]) -> Doc:
        """``POST /v1/models/{id}/whatif``: the model's step transformed to
        another configuration and replayed (as ``stepcast whatif --json``),
        from its job's ``config`` (:meth:`put_job`): ``set`` as ``{"dp": 16,
        "gpu": "h100-sxm"}`` (tp, pp, dp, micro_batch, global_batch, layers,
        hidden, heads, ffn, seq, vocab, dtype, gpu). The answer says how much
        of ``step_ms`` is measured (``from_measured_ms``) and how much
        modelled (``from_models_ms``, ``models_used``)."""
        return self.request("POST", _path("/v1/models/{}/whatif", model), json={"set": dict(set)})

    # ---- tokens (admin) ----

    def tokens(self) -> Doc:
        """``GET /v1/tokens``: ``{"tokens": [...]}`` (without secrets)."""
        return self.list("/v1/tokens", "tokens")

    def create_token(self, scope: str, name: Optional[str] = None) -> Doc:
        """``POST /v1/tokens``: a new token; its secret (``"token"``) is in
        this answer only."""
        body = {"scope": scope, **({"name": name} if name is not None else {})}
        return self.request("POST", "/v1/tokens", json=body)

    def revoke_token(self, token_id: str) -> Doc:
        """``DELETE /v1/tokens/{id}``: revoke a token (not the last admin one)."""
        return self.request("DELETE", _path("/v1/tokens/{}", token_id))

    # ---- estimation ----

    def estimate(self, spec: Mapping[str, Any], detail: Optional[str] = None) -> Doc:
        """``POST /v1/estimate``: the estimate of a spec (as ``stepcast
        estimate --json``) with its error ``band`` from the ledger; the
        spec's ``cluster.profile`` names one of :meth:`calibrations`."""
        query = [("detail", detail)] if detail is not None else []
        return self.request("POST", "/v1/estimate", query=query, json=dict(spec))

    def plan(self, spec: Mapping[str, Any], gpus: int, *, up_to: bool = False, top: int = 10,
             objective: str = "time", wait: bool = True, poll: float = 0.25,
             progress: Optional[Callable[[int, int], None]] = None, timeout: Optional[float] = None) -> Doc:
        """``POST /v1/plans``: the best configurations of a spec on ``gpus``
        GPUs (``spec``'s ``parallel`` and ``options`` give what is fixed, the
        rest is searched; ``parallel.global_batch`` is required). With
        ``wait`` (the default) polls :meth:`plan_status` until the plan is
        done and returns it (the document of ``stepcast plan --json`` with
        ``id`` and ``state``); ``progress`` gets (done, total) at each poll.
        Without ``wait``, returns ``{"id", "state"}`` (or the plan, when the
        space was small enough to plan at once: not kept, so without an
        ``id``). A plan in the background is kept and needs a write token.
        Raises StepcastError
        ``plan_failed`` or ``plan_cancelled``, or ``timeout``."""
        body = {"spec": dict(spec), "gpus": gpus, "up_to": up_to, "top": top, "objective": objective}
        return self._plan("/v1/plans", body, wait, poll, progress, timeout)

    def plan_from_model(self, model: str, gpus: int, *, up_to: bool = False, top: int = 10,
                        objective: str = "time", wait: bool = True, poll: float = 0.25,
                        progress: Optional[Callable[[int, int], None]] = None,
                        timeout: Optional[float] = None) -> Doc:
        """``POST /v1/models/{id}/plan``: :meth:`plan` from a built model
        instead of a spec: each candidate is the model's what-if on that
        configuration (tp, pp, dp and micro_batch searched), so the job's
        own kernels and overheads carry over. Its job's ``config``
        (:meth:`put_job`) gives the model's layers, hidden, heads, seq and
        global_batch. Waits, polls and raises as :meth:`plan`."""
        body = {"gpus": gpus, "up_to": up_to, "top": top, "objective": objective}
        return self._plan(_path("/v1/models/{}/plan", model), body, wait, poll, progress, timeout)

    def resume_plan(self, plan: str, *, wait: bool = True, poll: float = 0.5,
                    progress: Optional[Callable[[int, int], None]] = None,
                    timeout: Optional[float] = None) -> Doc:
        """``POST /v1/plans/{id}/resume``: run an interrupted plan (one a crash
        or a shutdown stopped) again from its stored request, under its id;
        waited for as :meth:`plan`."""
        return self._plan(_path("/v1/plans/{}/resume", plan), None, wait, poll, progress, timeout)

    def _plan(self, path: str, body: Optional[Doc], wait: bool, poll: float,
              progress: Optional[Callable[[int, int], None]], timeout: Optional[float]) -> Doc:
        started = self.request("POST", path, json=body)
        if not wait:
            return started
        deadline = None if timeout is None else time.monotonic() + timeout
        p = started
        while p["state"] == "running":
            if deadline is not None and time.monotonic() >= deadline:
                raise StepcastError(None, "timeout", f"plan {p['id']} is still running after {timeout} s")
            time.sleep(poll)
            p = self.plan_status(p["id"])
            if progress is not None and "progress" in p:
                progress(p["progress"]["done"], p["progress"]["total"])
        if p["state"] != "done":
            raise StepcastError(None, "plan_" + p["state"], f"plan {p['id']}: {p.get('error') or p['state']}")
        return p

    def plan_status(self, plan: str) -> Doc:
        """``GET /v1/plans/{id}``: ``{"id", "state": "running", "progress"}``
        while it runs, then the plan with its ``state``."""
        return self.request("GET", _path("/v1/plans/{}", plan))

    def cancel_plan(self, plan: str) -> Doc:
        """``DELETE /v1/plans/{id}``: cancel a running plan (its state becomes
        ``cancelled``), or forget a finished one."""
        return self.request("DELETE", _path("/v1/plans/{}", plan))

    def hardware(self, gpu: Optional[str] = None) -> Doc:
        """``GET /v1/hardware``: ``{"hardware": [...]}``; with ``gpu``, that
        profile (``GET /v1/hardware/{id}``)."""
        return self.request("GET", _path("/v1/hardware/{}", gpu) if gpu is not None else "/v1/hardware")

    def calibrations(self) -> Doc:
        """``GET /v1/calibrations``: ``{"calibrations": [...]}`` (without profiles)."""
        return self.list("/v1/calibrations", "calibrations")

    def calibration(self, name: str) -> Doc:
        """``GET /v1/calibrations/{id}``: a calibration with its profile and report."""
        return self.request("GET", _path("/v1/calibrations/{}", name))

    def calibrate_nccl_tests(self, name: str, output: Union[PathLike, str, bytes], *, gpu: Optional[str] = None,
                             kind: Optional[str] = None, ranks: Optional[int] = None,
                             nodes: Optional[int] = None) -> Doc:
        """``POST /v1/calibrations/nccl-tests``: one nccl-tests output (a file
        name, or its text or bytes) fitted and kept as calibration ``name``."""
        query = [("name", name)] + [(k, v) for k, v in (("gpu", gpu), ("kind", kind), ("ranks", ranks),
                                                        ("nodes", nodes)) if v is not None]
        if isinstance(output, bytes):
            return self.request("POST", "/v1/calibrations/nccl-tests", query=query, body=output)
        if isinstance(output, str) and "\n" in output:
            return self.request("POST", "/v1/calibrations/nccl-tests", query=query, body=output.encode())
        return self.request("POST", "/v1/calibrations/nccl-tests", query=query, file=output)

    def calibrate_gemms(self, name: str, table: Union[PathLike, str, bytes], *, gpu: Optional[str] = None) -> Doc:
        """``POST /v1/calibrations/gemms``: one GEMM microbenchmark table (a
        file name, or its text or bytes; ``profiler/gemm-bench.sh`` writes
        it) fitted and kept as calibration ``name``."""
        query = [("name", name)] + ([("gpu", gpu)] if gpu is not None else [])
        if isinstance(table, bytes):
            return self.request("POST", "/v1/calibrations/gemms", query=query, body=table)
        if isinstance(table, str) and "\n" in table:
            return self.request("POST", "/v1/calibrations/gemms", query=query, body=table.encode())
        return self.request("POST", "/v1/calibrations/gemms", query=query, file=table)

    def calibrate_model(self, model: str, name: str, *, gpu: Optional[str] = None) -> Doc:
        """``POST /v1/models/{id}/calibration``: the model's traces fitted
        (``stepcast calibrate traces``) and kept as calibration ``name``."""
        query = [("name", name)] + ([("gpu", gpu)] if gpu is not None else [])
        return self.request("POST", _path("/v1/models/{}/calibration", model), query=query)

    # ---- the validation ledger ----

    def validations(self, model: Optional[str] = None, kind: Optional[str] = None, *,
                    in_sample: bool = False) -> Doc:
        """``GET /v1/validations``: the entries with MAPE per model, kind and
        month, and the bands; ``in_sample`` counts in-sample entries too."""
        query = [(k, v) for k, v in (("model", model), ("kind", kind)) if v is not None]
        if in_sample:
            query.append(("in_sample", "true"))
        return self.list("/v1/validations", "entries", query)

    def add_validation(self, measured_step_ms: float, *, model: Optional[str] = None,
                       spec: Optional[Mapping[str, Any]] = None, set: Optional[Mapping[str, Any]] = None,
                       source: Optional[str] = None, run_at: Optional[str] = None,
                       in_sample: bool = False) -> Doc:
        """``POST /v1/validations``: a measured step time with the prediction
        the server makes now (``model``: its replay; ``spec``: its estimate);
        the entry with its ``error_pct``."""
        body: Dict[str, Any] = {"measured_step_ms": measured_step_ms, "in_sample": in_sample}
        for key, value in (("model", model), ("spec", spec), ("set", set), ("source", source),
                           ("run_at", run_at)):
            if value is not None:
                body[key] = dict(value) if isinstance(value, Mapping) else value
        return self.request("POST", "/v1/validations", json=body)

    def delete_validation(self, entry: int) -> Doc:
        """``DELETE /v1/validations/{id}`` (admin)."""
        return self.request("DELETE", _path("/v1/validations/{}", entry))
