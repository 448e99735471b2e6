#!/bin/sh
# The kernel model's GEMM times against the GEMM kernels of the real traces
# (fp32 recommendation models on A100 and V100), per GPU, with the model's
# default parameters (estimator/costs/kernel_model.h).
cd "$(dirname "$0")/../.." || exit 1
make -s build/bench-gemm-model || exit 1
shared=${STEPCAST_SHARED:-../shared}/traces
d=$shared/HolisticTraceAnalysis/tests/data
set -- "$d/trace_diff/control/control.json.gz" "$d/trace_diff/test/test.json.gz" \
       "$d/negative_queue_length_values_check/rank0.json.gz"
for t in "$@"; do
    if [ ! -f "$t" ]; then
        echo "skipped: the shared traces are not here ($shared)"
        exit 0
    fi
done
echo "command: build/bench-gemm-model $*"
build/bench-gemm-model "$@"
