#!/bin/sh
# profiler/device-check.sh OUT_DIR [--quick]: everything worth running on a
# lent GPU, in one go, its results under OUT_DIR:
#   nvidia-smi.txt   the GPU and its driver (nvidia-smi -q);
#   gpu-smoke.txt    the profiler on the real driver (profiler/gpu-smoke.sh);
#   gemms.csv        the GEMM microbenchmark (profiler/gemm-bench.sh);
#   calibrate.txt, profile.json
#                    `stepcast calibrate gemms` on it: the kernel model's
#                    error on the GPU's own GEMMs before and after, and the
#                    cluster profile that names the device;
#   torch-steps/     where python3 has PyTorch: profiler/torch-step.py's
#                    training steps, timed (steps.csv) and traced;
#   torch-steps-profiled/, torch-steps-profiled-compile/
#                    the first of them under this profiler's injection,
#                    eager and torch.compile'd (Triton's driver-API
#                    launches), and `stepcast replay` of each trace
#                    (replay.txt; the largest, the training process's);
#   torch-steps-compile/, torch-steps-fsdp/
#                    the first of them torch.compile'd, and sharded with
#                    FSDP2 on this GPU (a process group of one), traced,
#                    with `stepcast inspect` of each trace (inspect.txt):
#                    real traces for the structure recovery.
# Each step runs even when one before it failed. Ends with
# `N passed, N failed` over the steps; exit status 1 on any failure, 2 when
# there is no GPU or no nvcc (nothing measured).
set -u
cd "$(dirname "$0")/.." || exit 2
out=${1:-}
quick=
[ "${2:-}" = "--quick" ] && quick=--quick
if [ -z "$out" ] || [ "${out#-}" != "$out" ]; then
    echo "usage: profiler/device-check.sh OUT_DIR [--quick]" >&2
    exit 2
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "device-check: no GPU here (nvidia-smi -L failed): nothing measured"
    exit 2
fi
mkdir -p "$out" || exit 1
passed=0
failed=0
step() { # NAME COMMAND...: run, count, say
    name=$1
    shift
    if "$@"; then
        passed=$((passed + 1))
        echo "ok   $name"
    else
        failed=$((failed + 1))
        echo "FAIL $name"
    fi
}
nvidia-smi -q >"$out/nvidia-smi.txt" 2>&1
step "build" make -s all
step "gpu-smoke" sh -c 'sh profiler/gpu-smoke.sh >"$1/gpu-smoke.txt" 2>&1' sh "$out"
# shellcheck disable=SC2086
step "gemm-bench" sh profiler/gemm-bench.sh $quick --out "$out/gemms.csv"
step "calibrate gemms" sh -c 'build/stepcast calibrate gemms --out "$1/profile.json" "$1/gemms.csv" >"$1/calibrate.txt" 2>&1' \
    sh "$out"
[ -f "$out/calibrate.txt" ] && cat "$out/calibrate.txt"
if python3 -c 'import torch' >/dev/null 2>&1; then
    step "torch-step" python3 profiler/torch-step.py --out "$out/torch-steps"
    lib=$(pwd)/build/libstepcast_prof.so
    prof=$out/torch-steps-profiled
    for mode in "" --compile; do
        step "torch-step $mode under the profiler, replayed" sh -c '
            CUDA_INJECTION64_PATH="$1" NVTX_INJECTION64_PATH="$1" STEPCAST_PROF_DIR="$2" \
                python3 profiler/torch-step.py --quick --nvtx $3 --out "$2" &&
            build/stepcast replay "$(ls -S "$2"/stepcast_*.pt.trace.json | head -1)" >"$2/replay.txt" 2>&1 &&
            tail -3 "$2/replay.txt"' \
            sh "$lib" "$prof${mode:+-compile}" "$mode"
    done
    for mode in compile fsdp; do
        step "torch-step --$mode, inspected" sh -c '
            python3 profiler/torch-step.py --quick --precision bf16 --$1 --out "$2" &&
            build/stepcast inspect "$2"/*.pt.trace.json >"$2/inspect.txt" 2>&1 && tail -12 "$2/inspect.txt"' \
            sh "$mode" "$out/torch-steps-$mode"
    done
else
    echo "skip torch-step: python3 has no PyTorch"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
