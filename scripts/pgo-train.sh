#!/bin/sh
# scripts/pgo-train.sh BUILD: the runs whose profile the optimised build is
# compiled with (Makefile, PGO). BUILD/stepcast and BUILD/gentrace are the
# instrumented programs: they read, build and replay the embedded sample job
# (gzip) and a generated two-rank job (plain JSON, CUDA syncs and a polling
# loop), and each run adds to the profile in BUILD/pgo. No measured trace
# the benchmarks time is among them.
set -eu
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/gentrace" --ranks 2 --steps 6 --layers 8 --cuda-sync --poll-loop "$work/job" >/dev/null
for cmd in inspect "replay --json" critical-path; do
    "$build/stepcast" $cmd data/sample/*.json.gz >/dev/null
    "$build/stepcast" $cmd "$work"/job/rank*.json >/dev/null
done
