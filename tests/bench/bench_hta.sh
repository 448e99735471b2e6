#!/bin/sh
# stepcast beside HTA on HTA's traces: HTA's load + critical path against
# `stepcast replay --json` and `stepcast critical-path`, median of 5 runs,
# with peak memory (tests/bench/hta.py).
cd "$(dirname "$0")/../.." || exit 1
make -s build/stepcast || exit 1
exec python3 tests/bench/hta.py
