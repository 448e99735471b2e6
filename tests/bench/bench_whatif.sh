#!/bin/sh
# What-ifs on traced jobs (BENCHMARKS.md "What-if on traced jobs"): the real
# pair trace_diff/control (A100, rank 3 of 8) -> trace_diff/test (V100, rank
# 1 of 2), test's median measured step beside the prediction, and the time
# a what-if takes on the largest shared single-rank trace.
cd "$(dirname "$0")/../.." || exit 1
shared=${STEPCAST_SHARED:-../shared}/traces
d=$shared/HolisticTraceAnalysis/tests/data
control=$d/trace_diff/control/control.json.gz
test=$d/trace_diff/test/test.json.gz
nq=$d/negative_queue_length_values_check/rank0.json.gz
for t in "$control" "$test" "$nq"; do
    if [ ! -f "$t" ]; then
        echo "skipped: the shared traces are not here ($shared)"
        exit 0
    fi
done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
echo '{"tp":1,"pp":1,"dp":8}' >"$tmp/control.json"
echo '{"tp":1,"pp":1,"dp":16}' >"$tmp/nq.json"
echo "command: build/stepcast whatif --config control.json --set dp=2,gpu=v100-sxm2-16gb --json $control"
build/stepcast whatif --config "$tmp/control.json" --set dp=2,gpu=v100-sxm2-16gb --json "$control" >"$tmp/w.json" || exit 1
echo "command: build/stepcast inspect --json $test (its measured steps)"
build/stepcast inspect --json "$test" >"$tmp/t.json" || exit 1
python3 - "$tmp/w.json" "$tmp/t.json" <<'PY'
import json, statistics, sys
w = json.load(open(sys.argv[1]))
steps = [s["duration_ms"] for s in json.load(open(sys.argv[2]))["ranks"][0]["steps"] if not s["partial"]]
median = statistics.median(steps)
print(f"control replayed {w['base_step_ms']:.3f} ms; predicted for dp=2 on v100-sxm2-16gb {w['step_ms']:.3f} ms "
      f"({w['from_measured_ms']:.3f} measured, {w['from_models_ms']:.3f} from models)")
print(f"test's median measured step {median:.3f} ms (of {len(steps)}: {min(steps):.1f} to {max(steps):.1f}); "
      f"error {(w['step_ms'] - median) / median * 100:+.1f}%")
PY
echo "command: time build/stepcast whatif --config nq.json --set gpu=h100-sxm,dp=32 $nq"
start=$(date +%s.%N)
build/stepcast whatif --config "$tmp/nq.json" --set gpu=h100-sxm,dp=32 "$nq" | grep '^step' || exit 1
end=$(date +%s.%N)
echo "wall $(echo "$end - $start" | bc) s (the trace loaded, built, transformed, replayed twice)"
