#!/bin/sh
# The pipeline what-if and plans from a traced job (BENCHMARKS.md "What-if
# on traced jobs"): a `stepcast synth` trace of an 8-layer, hidden-4096 job
# (pp 1, dp 8, 8 micro-batches per step) changed to pp 2 and 4 beside
# `stepcast estimate` of the changed spec, and the time of `stepcast plan
# --from-traces` on 64 GPUs (every candidate a what-if, nothing pruned).
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
model='"layers":8,"hidden":4096,"heads":32,"seq":2048'
spec() { echo "{\"model\":{$model},\"parallel\":{\"tp\":1,\"pp\":$1,\"dp\":8,\"micro_batch\":1,\"global_batch\":64},\"cluster\":{\"gpu\":\"a100-sxm4-80gb\"}}"; }
spec 1 >"$tmp/spec1.json"
echo "{\"tp\":1,\"pp\":1,\"dp\":8,\"micro_batch\":1,\"global_batch\":64,$model}" >"$tmp/config.json"
echo "command: build/stepcast synth --spec spec1.json --out DIR --detail kernel"
build/stepcast synth --spec "$tmp/spec1.json" --out "$tmp/trace" --detail kernel >/dev/null || exit 1
for pp in 2 4; do
    spec $pp >"$tmp/spec$pp.json"
    w=$(build/stepcast whatif --config "$tmp/config.json" --set pp=$pp --json "$tmp/trace" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["step_ms"])') || exit 1
    e=$(build/stepcast estimate --spec "$tmp/spec$pp.json" --detail kernel --json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["step_ms"])') || exit 1
    python3 -c "w,e=$w,$e; print(f'pp 1 -> $pp: what-if {w:.3f} ms, estimate {e:.3f} ms, {(w-e)/e*100:+.2f}%')"
done
echo "command: time build/stepcast plan --from-traces --config config.json --gpus 64 --up-to --json DIR"
start=$(date +%s.%N)
build/stepcast plan --from-traces --config "$tmp/config.json" --gpus 64 --up-to --json "$tmp/trace" >"$tmp/plan.json" || exit 1
end=$(date +%s.%N)
python3 - "$tmp/plan.json" "$(echo "$end - $start" | bc)" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
wall = float(sys.argv[2])
best = p["top"][0]
print(f"evaluated {p['evaluated']} what-ifs (pruned {p['pruned']}, infeasible {p['infeasible']}) in {wall:.2f} s, "
      f"{p['evaluated'] / wall:.0f} per second; best {best['parallel']['tp']}x{best['parallel']['pp']}x"
      f"{best['parallel']['dp']} mb {best['parallel']['micro_batch']}: {best['estimate']['step_ms']:.3f} ms")
PY
