#!/bin/sh
# What taking a what-if's notes of each trace costs a model's build
# (build/bench-notes, tests/bench/bench_notes.c): the build with them
# against the build without, medians of 5 alternating rounds in one run,
# and the notes' bytes against the events and the graph, on an 8-rank
# gentrace job and two of the shared traces.
cd "$(dirname "$0")/../.." || exit 1
make -s build/gentrace build/bench-notes || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
build/gentrace --ranks 8 --steps 8 --layers 24 --modules "$tmp/gen" >/dev/null || exit 1
echo "gentrace 8 ranks (--steps 8 --layers 24 --modules): build/bench-notes rank0..7.json"
build/bench-notes "$tmp"/gen/rank*.json || exit 1
data=${STEPCAST_SHARED:-../shared}/traces/HolisticTraceAnalysis/tests/data
for t in trace_diff/control/control.json.gz nccl_parser_config/nccl_data.json.gz; do
    if [ -f "$data/$t" ]; then
        echo "$t: build/bench-notes $t"
        build/bench-notes "$data/$t" || exit 1
    else
        echo "$t: absent: skipped"
    fi
done
