#!/bin/sh
# profiler/gemm-bench.sh [--compile-only] [--build DIR] [--out FILE.csv] [--quick]
#                        [--dtypes fp16,bf16,tf32,fp32,fp8]
#
# The GEMM microbenchmark on a real GPU: compiles profiler/gemm_bench.cu
# with nvcc against cuBLAS into BUILD (default build), runs it on GPU 0 and
# writes its table (the shapes of a transformer's step in each dtype, the
# mean time of one call) to FILE.csv or stdout, for
#
#   build/stepcast calibrate gemms --out PROFILE.json FILE.csv
#
# which fits the kernel model to it and writes a cluster profile naming the
# device (README, "calibrate"). The whole grid is about 55 TFLOP of work
# per dtype, each shape run at least eight times; --quick runs a tenth of
# the shapes. --compile-only builds and stops (the
# profiler's tests run it wherever nvcc is). Exit status 2 when there is
# no nvcc or no GPU (nothing measured), 1 on a failure.
set -u
cd "$(dirname "$0")/.." || exit 2
build=build
out=
compile_only=0
args=
while [ $# -gt 0 ]; do
    case $1 in
    --compile-only) compile_only=1 ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --quick) args="$args --quick" ;;
    --dtypes) args="$args --dtypes $2"; shift ;;
    *) echo "usage: profiler/gemm-bench.sh [--compile-only] [--build DIR] [--out FILE.csv] [--quick] [--dtypes LIST]" >&2
       exit 2 ;;
    esac
    shift
done
nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
if [ ! -x "$nvcc" ]; then
    echo "gemm-bench: no nvcc at $nvcc (set NVCC or CUDA_HOME): nothing measured" >&2
    exit 2
fi
mkdir -p "$build" || exit 1
bin=$build/gemm_bench
if [ ! -x "$bin" ] || [ profiler/gemm_bench.cu -nt "$bin" ]; then
    "$nvcc" -O2 -std=c++17 -Xcompiler -Wall,-Wextra -o "$bin" profiler/gemm_bench.cu -lcublasLt -lcublas || exit 1
fi
[ "$compile_only" -eq 1 ] && exit 0
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gemm-bench: no GPU here (nvidia-smi -L failed): nothing measured" >&2
    exit 2
fi
# shellcheck disable=SC2086
if [ -n "$out" ]; then
    "$bin" $args >"$out.tmp" && mv "$out.tmp" "$out" && echo "gemm-bench: wrote $out" >&2
else
    "$bin" $args
fi
