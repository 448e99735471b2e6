#!/bin/sh
# profiler/gpu-smoke.sh [BUILD_DIR]: the profiler on a real GPU.
#
# Compiles a small two-stream CUDA program with nvcc (a copy and a producer
# kernel on one stream, an event record, a wait on it from a second stream,
# a consumer kernel, a memset and a copy back, five steps each in an NVTX
# range "ProfilerStep#N"), runs it under the injection (CUDA_INJECTION64_PATH
# and NVTX_INJECTION64_PATH both naming libstepcast_prof.so), then validates
# the trace: stepcast ingests it, the steps, kernels on both streams, launch
# flows, the cross-stream wait with its wait_on_* arguments, the device
# properties and the memcpy sizes are there, and a step window
# (STEPCAST_PROF_STEPS=2-3) keeps only its steps. Ends with
# `N passed, N failed`; exit status 1 on any failure, 2 when there is no GPU
# or no nvcc (nothing was checked).
set -u
cd "$(dirname "$0")/.." || exit 2
build=${1:-build}
lib=$(pwd)/$build/libstepcast_prof.so
cli=$build/stepcast
nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-smoke: no GPU here (nvidia-smi -L failed): nothing checked"
    exit 2
fi
if [ ! -x "$nvcc" ]; then
    echo "gpu-smoke: no nvcc at $nvcc (set NVCC or CUDA_HOME): nothing checked"
    exit 2
fi
make -s BUILD="$build" "$build/libstepcast_prof.so" "$build/stepcast" || exit 1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/smoke.cu" <<'CUDA'
#include <cstdio>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

__global__ void produce(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) for (int k = 0; k < 200; k++) a[i] = a[i] * 0.999f + 1.0f;
}

__global__ void consume(const float *a, float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i] * 2.0f;
}

int main() {
    const int n = 1 << 22;
    const size_t bytes = n * sizeof(float);
    float *h_a, *h_b, *d_a, *d_b;
    cudaStream_t s1, s2;
    cudaEvent_t ev;
    CHECK(cudaMallocHost(&h_a, bytes));
    CHECK(cudaMallocHost(&h_b, bytes));
    CHECK(cudaMalloc(&d_a, bytes));
    CHECK(cudaMalloc(&d_b, bytes));
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    for (int i = 0; i < n; i++) h_a[i] = 1.0f;
    for (int step = 0; step < 5; step++) {
        char name[32];
        std::snprintf(name, sizeof name, "ProfilerStep#%d", step);
        nvtxRangePushA(name);
        CHECK(cudaMemcpyAsync(d_a, h_a, bytes, cudaMemcpyHostToDevice, s1));
        produce<<<(n + 255) / 256, 256, 0, s1>>>(d_a, n);
        CHECK(cudaEventRecord(ev, s1));
        CHECK(cudaStreamWaitEvent(s2, ev, 0));
        consume<<<(n + 255) / 256, 256, 0, s2>>>(d_a, d_b, n);
        CHECK(cudaMemsetAsync(d_a, 0, bytes, s2));
        CHECK(cudaMemcpyAsync(h_b, d_b, bytes, cudaMemcpyDeviceToHost, s2));
        CHECK(cudaStreamSynchronize(s2));
        nvtxRangePop();
    }
    CHECK(cudaDeviceSynchronize());
    std::printf("smoke: b[0] = %g\n", h_b[0]);
    return 0;
}
CUDA
echo "== gpu-smoke: $nvcc -O2 -o smoke smoke.cu"
"$nvcc" -O2 -o "$tmp/smoke" "$tmp/smoke.cu" || exit 1

run() { # run DIR [VAR=VALUE...]: the program under the injection
    out=$1
    shift
    mkdir -p "$out"
    env CUDA_INJECTION64_PATH="$lib" NVTX_INJECTION64_PATH="$lib" STEPCAST_PROF_DIR="$out" \
        "$@" "$tmp/smoke" >"$out.log" 2>&1
    status=$?
    cat "$out.log"
    return $status
}

echo "== gpu-smoke: the whole run"
run "$tmp/all" || { echo "gpu-smoke: the program failed under the injection"; exit 1; }
echo "== gpu-smoke: steps 2-3 only"
run "$tmp/window" STEPCAST_PROF_STEPS=2-3 || { echo "gpu-smoke: the program failed (window)"; exit 1; }

python3 - "$tmp" "$cli" <<'PY'
import glob, json, subprocess, sys
tmp, cli = sys.argv[1], sys.argv[2]
passed = failed = 0
def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL " + name + (": " + detail if detail else ""))

def trace(d):
    files = glob.glob(tmp + "/" + d + "/stepcast_*.pt.trace.json")
    check(d + ": one trace written", len(files) == 1, str(files))
    return json.load(open(files[0])) if files else None

t = trace("all")
if t:
    ev = [e for e in t["traceEvents"] if e.get("ph") == "X"]
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    streams = {e["tid"] for e in kernels}
    check("kernels: 10 on two streams", len(kernels) == 10 and len(streams) == 2,
          "%d kernels on streams %s" % (len(kernels), sorted(streams)))
    steps = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    check("NVTX ranges: ProfilerStep#0..4", sorted(e["name"] for e in steps) ==
          ["ProfilerStep#%d" % i for i in range(5)], str([e["name"] for e in steps]))
    waits = [e for e in ev if e.get("cat") == "cuda_sync" and e["name"] == "Stream Wait Event"]
    prod = {e["tid"] for e in kernels if "produce" in e["name"]}
    ok = len(waits) == 5 and all(e["args"].get("wait_on_stream") in prod and
                                 "wait_on_cuda_event_record_corr_id" in e["args"] for e in waits)
    check("cuda_sync: 5 waits on the producer's stream, with the record's correlation", ok,
          json.dumps(waits[:1]))
    records = [e for e in ev if e.get("cat") == "cuda_event"]
    check("cuda_event: 5 records", len(records) == 5, str(len(records)))
    flows = [e for e in t["traceEvents"] if e.get("cat") == "ac2g"]
    check("ac2g flows: an s and an f per GPU op",
          len([f for f in flows if f["ph"] == "f"]) >= 25 and len([f for f in flows if f["ph"] == "s"]) >= 25,
          "%d flows" % len(flows))
    copies = [e for e in ev if e.get("cat") == "gpu_memcpy"]
    check("copies: 10 of 16 MiB", len(copies) == 10 and all(e["args"]["bytes"] == 1 << 24 for e in copies),
          str(len(copies)))
    check("gpu_memset: 5", len([e for e in ev if e.get("cat") == "gpu_memset"]) == 5)
    props = t.get("deviceProperties", [])
    check("deviceProperties: name and SM count", props and props[0].get("name") and props[0].get("numSms", 0) > 0,
          json.dumps(props))
    info = t.get("stepcast_profiler", {})
    check("nothing dropped", info.get("records_dropped_by_cupti") == 0 and
          info.get("events_dropped_over_memory_cap") == 0, json.dumps(info))
    base = t["baseTimeNanoseconds"]
    check("timestamps are CLOCK_REALTIME ns", abs(base + ev[0]["ts"] * 1000 -
          info["clock_start"]["realtime_ns"]) < 600e9, "base %d" % base)
    r = subprocess.run([cli, "inspect", "--json"] + glob.glob(tmp + "/all/*.json"),
                       capture_output=True, text=True)
    check("stepcast inspect reads it", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        doc = json.loads(r.stdout)
        rank = doc["ranks"][0]
        check("stepcast: 5 steps, nothing a replay needs missing",
              len(rank["steps"]) == 5 and rank["lacks"] == [], json.dumps(rank["lacks"]))
    r = subprocess.run([cli, "replay"] + glob.glob(tmp + "/all/*.json"), capture_output=True, text=True)
    print(r.stdout + r.stderr)
    check("stepcast replay runs on it", r.returncode == 0 and "0 inferred" in r.stdout, r.stderr)
w = trace("window")
if w:
    steps = sorted(e["name"] for e in w["traceEvents"] if e.get("ph") == "X" and
                   e["name"].startswith("ProfilerStep#"))
    check("window 2-3: only its steps", steps == ["ProfilerStep#2", "ProfilerStep#3"], str(steps))
    kernels = [e for e in w["traceEvents"] if e.get("cat") == "kernel"]
    check("window 2-3: their 4 kernels", len(kernels) == 4, str(len(kernels)))
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PY
