#!/bin/sh
# Ingest throughput and peak memory against Python's json.load (tests/bench/ingest.py).
cd "$(dirname "$0")/../.." || exit 1
make -s build/gentrace build/bench-load || exit 1
exec python3 tests/bench/ingest.py
