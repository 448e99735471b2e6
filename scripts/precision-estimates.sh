#!/bin/sh
# scripts/precision-estimates.sh: stepcast's estimates of two dense models
# across GPUs and low-precision recipes (BENCHMARKS.md, "Precision and GPU
# generation"): Llama 3.1 8B at seq 8192, tp 1 cp 2 dp 4 (8 GPUs), and
# Llama 3.1 70B at seq 8192, tp 4 pp 4 dp 2 with sequence parallelism (32
# GPUs), global batch 32, each on H100 (bf16, fp8 tensorwise, blockwise),
# B200 (bf16, fp8 tensorwise, mxfp8, fp4), GB200 and B300.
# Usage: scripts/precision-estimates.sh [STEPCAST] (default build/stepcast);
# the models come from ${STEPCAST_SHARED:-../shared}/models/hf.
set -eu
S=${1:-build/stepcast}
HF=${STEPCAST_SHARED:-../shared}/models/hf
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
printf "%-5s %-9s %-5s %-11s %9s %6s\n" model gpu dtype recipe step_s mfu
for m in 8b 70b; do
    "$S" spec from-hf "$HF/llama-3.1-$m.json" --seq 8192 2>/dev/null >"$T/model.json"
    for row in "h100-sxm bf16 -" "h100-sxm fp8 tensorwise" "h100-sxm fp8 blockwise" "b200 bf16 -" \
               "b200 fp8 tensorwise" "b200 fp8 mxfp8" "b200 fp4 -" "gb200 bf16 -" "gb200 fp8 mxfp8" \
               "b300 bf16 -" "b300 fp8 mxfp8" "b300 fp4 -"; do
        set -- $row
        python3 - "$T/model.json" "$m" "$1" "$2" "$3" >"$T/spec.json" <<'PY'
import json, sys
path, m, gpu, dtype, recipe = sys.argv[1:6]
par = ({"tp": 1, "cp": 2, "dp": 4} if m == "8b" else {"tp": 4, "pp": 4, "dp": 2})
par.update({"micro_batch": 1, "global_batch": 32})
opt = {"dtype": dtype, "sequence_parallel": par["tp"] > 1}
if recipe != "-":
    opt["fp8_recipe"] = recipe
print(json.dumps({"model": json.load(open(path))["model"], "parallel": par, "cluster": {"gpu": gpu},
                  "options": opt}))
PY
        "$S" estimate --spec "$T/spec.json" --json >"$T/out.json"
        python3 - "$T/out.json" "$m" "$1" "$2" "$3" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
print("%-5s %-9s %-5s %-11s %9.3f %6.3f" % (*sys.argv[2:6], o["step_ms"] / 1000, o["mfu"]))
PY
    done
done
