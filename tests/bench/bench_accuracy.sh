#!/bin/sh
# Replay error on every shared trace with steps (tests/bench/accuracy.py).
cd "$(dirname "$0")/../.." || exit 1
exec python3 tests/bench/accuracy.py
