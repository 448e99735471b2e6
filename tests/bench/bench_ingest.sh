#!/bin/sh
# Ingest throughput and peak memory against Python's json.load
# (tests/bench/ingest.py), after gzip inflate alone, zlib against ISA-L's
# igzip (build/bench-inflate, tests/bench/bench_inflate.c); `stepcast inspect`
# against json.load, back to back and as single runs 3 s apart, and the
# floor of a structural-index parse beside the trace reader
# (build/bench-index, tests/bench/bench_index.c).
cd "$(dirname "$0")/../.." || exit 1
make -s build/gentrace build/bench-load build/bench-inflate build/bench-index build/stepcast || exit 1
data=${STEPCAST_SHARED:-../shared}/traces/HolisticTraceAnalysis/tests/data
set --
for t in negative_queue_length_values_check/rank0.json.gz nccl_parser_config/nccl_data.json.gz \
         ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz \
         trace_diff/control/control.json.gz trace_diff/test/test.json.gz; do
    [ -f "$data/$t" ] && set -- "$@" "$data/$t"
done
if [ $# -gt 0 ]; then
    echo "gzip inflate of the shared traces: build/bench-inflate FILE.gz..."
    build/bench-inflate "$@" || exit 1
else
    echo "gzip inflate: the shared traces are absent: skipped"
fi
exec python3 tests/bench/ingest.py
