#!/bin/sh
# Replay speed: tasks per second on one core, on a synthetic 8-rank job from
# the project's generator and on real traces.
cd "$(dirname "$0")/../.." || exit 1
make -s build/gentrace build/bench-replay || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
echo "synthetic: build/gentrace --ranks 8 --steps 60 --layers 32 (8 ranks, all-reduces across them)"
build/gentrace --ranks 8 --steps 60 --layers 32 "$tmp/job" || exit 1
echo "  command: build/bench-replay $tmp/job"
build/bench-replay "$tmp/job" || status=1
shared=${STEPCAST_SHARED:-../shared}/traces
for t in HolisticTraceAnalysis/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz \
         param/et_replay/tests/inputs/dlrm_kineto.tar.gz; do
    if [ -f "$shared/$t" ]; then
        echo "real: $t"
        build/bench-replay "$shared/$t" || status=1
    fi
done
exit $status
