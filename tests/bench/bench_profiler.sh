#!/bin/sh
# The profiler's costs (profiler/tests/bench.c): CUPTI records converted per
# second against memcpy of the same bytes and against the bare record
# iterator, the Kineto JSON written per second, and the lock-free buffer
# lending CUPTI's threads pay for. Needs a CUDA toolkit with CUPTI (no GPU).
cd "$(dirname "$0")/../.." || exit 1
if ! grep -q '^HAVE_CUPTI := 1' build/config.mk 2>/dev/null; then
    echo "bench_profiler: no CUDA toolkit with CUPTI: not measured"
    exit 0
fi
make -s prof-bench || exit 1
echo "command: build/tests/prof-bench 2000000"
exec build/tests/prof-bench 2000000
