#!/bin/sh
# What-ifs and plans of one built model through the daemon (BENCHMARKS.md
# "What-if on traced jobs"): the daemon's CPU per what-if (19 distinct
# sets over 5 rounds) and per plan from the model, medians of 5 rounds, on a
# torch-steps trace and, when ../shared is there, HTA's control trace. The
# what-ifs and plans read the notes the model took of its traces when it
# was built: no trace is read again. The first what-if's CPU and the
# bytes the model cache holds are printed too.
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
echo '{"tp":1,"pp":1,"dp":1,"vocab":50304,"dtype":"bf16","mlp":"gelu","framework":"pytorch","master_weights":"bf16","tied_embeddings":true,"bias":false,"global_batch":8,"layers":8,"hidden":1024,"heads":16,"kv_heads":16,"ffn":4096,"seq":1024,"micro_batch":8}' >"$tmp/ts.json"
echo "torch-steps h100-sxm gpt-h1024-s1024-b8:"
python3 tests/bench/model_whatifs.py build/stepcastd data/calibration/torch-steps/h100-sxm/gpt-h1024-s1024-b8.pt.trace.json.gz \
    "$tmp/ts.json" "$tmp/ts.out.json" || exit 1
control=../shared/traces/HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz
if [ -f "$control" ]; then
    echo '{"tp":1,"pp":1,"dp":8,"zero_stage":1}' >"$tmp/ctl.json"
    echo "HTA control (rank 3, 34.8 MB of JSON; its plan is 422: the description has no layers):"
    python3 tests/bench/model_whatifs.py build/stepcastd "$control" "$tmp/ctl.json" "$tmp/ctl.out.json" 3 || exit 1
fi
