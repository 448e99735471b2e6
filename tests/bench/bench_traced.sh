#!/bin/sh
# The commands that build a traced model and read it, on the shared
# traces (tests/bench/traced.py).
cd "$(dirname "$0")/../.." || exit 1
make -s build/stepcast || exit 1
exec python3 tests/bench/traced.py
