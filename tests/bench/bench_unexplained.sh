#!/bin/sh
# What the traces cannot explain and the opportunities of every shared
# trace (tests/bench/unexplained.py).
cd "$(dirname "$0")/../.." || exit 1
exec python3 tests/bench/unexplained.py
