#!/bin/sh
# HTA's control/test pair: stepcast diff beside HTA's TraceDiff method
# (tests/bench/trace_diff.py).
cd "$(dirname "$0")/../.." || exit 1
exec python3 tests/bench/trace_diff.py
