#!/bin/sh
# tests/bench/bench.sh: what `make bench` runs: every tests/bench/bench_*.sh
# in name order. Each prints its figures with the commands that produced
# them; BENCHMARKS.md keeps the results.
set -u
cd "$(dirname "$0")/../.."
make -s -j"$(nproc 2>/dev/null || echo 2)" all || exit 1
status=0
for b in tests/bench/bench_*.sh; do
    [ -f "$b" ] || continue
    echo "== $b"
    sh "$b" || status=1
    echo
done
exit $status
