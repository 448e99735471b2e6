#!/bin/sh
# The fits of `stepcast calibrate traces` on the real traces (fp32
# recommendation models on A100 and V100), one GPU at a time: the GEMMs'
# kernel_fixed_us and gemm_ceiling_scale, the memory-bound ops'
# hbm_fraction, each with the model's error before and after (BENCHMARKS.md,
# "Kernel model: GEMMs of the real traces" and "Memory-bound kernels of the
# real traces").
cd "$(dirname "$0")/../.." || exit 1
make -s build/stepcast || exit 1
shared=${STEPCAST_SHARED:-../shared}/traces
d=$shared/HolisticTraceAnalysis/tests/data/trace_diff
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
for t in "$d/control/control.json.gz" "$d/test/test.json.gz"; do
    if [ ! -f "$t" ]; then
        echo "skipped: the shared traces are not here ($shared)"
        exit 0
    fi
    echo "command: build/stepcast calibrate traces --out P.json $t"
    build/stepcast calibrate traces --out "$out/P.json" "$t" | sed -n '/^GEMMs/,/^GPU profile/p' || exit 1
done
