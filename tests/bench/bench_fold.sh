#!/bin/sh
# Rank folding on generated jobs of 128 and 256 ranks with a straggler:
# time, memory and replay folded against unfolded (tests/bench/fold.py).
cd "$(dirname "$0")/../.." || exit 1
make -s build/gentrace build/stepcast || exit 1
exec python3 tests/bench/fold.py
