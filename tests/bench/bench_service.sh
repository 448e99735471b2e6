#!/bin/sh
# tests/bench/bench_service.sh: stepcastd under load, measured with wrk.
#
# Starts the daemon on an ephemeral port with a temporary data directory,
# uploads a job (the 8 DLRM ranks from ../shared/traces when present, else
# data/sample, else an 8-rank job from gentrace), builds its model, then
# runs wrk against GET /v1/models/{id}/replay on the cached model, against
# /healthz, and against POST /v1/estimate twice: one spec over and over
# (answered from the memo), and a new spec each request (another
# gpu_hour_usd: estimated every time). Prints requests/s, p50 and p99
# latency with the commands.
# Knobs: BUILD (build dir), DURATION (s, default 10), CONNECTIONS (16),
# THREADS (wrk threads, 1), HTTP_THREADS (the daemon's, default its own: 4).
set -eu
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-16}
THREADS=${THREADS:-1}
HTTP_THREADS=${HTTP_THREADS:-4}
command -v wrk >/dev/null || { echo "bench_service: wrk is not installed (scripts/deps.sh installs it)"; exit 1; }
. tests/bench/daemon.sh
bench_tmp
bench_daemon_start bench_service --http-threads "$HTTP_THREADS"

shared=${STEPCAST_SHARED:-../shared}/traces/param/et_replay/tests/inputs/dlrm_kineto.tar.gz
if [ -f "$shared" ]; then
    input=$shared
    what="DLRM, 8 ranks (shared traces)"
elif ls data/sample/*.json* >/dev/null 2>&1; then
    input=data/sample
    what="data/sample"
else
    [ -x "$B/gentrace" ] || make -s BUILD="$B" "$B/gentrace"
    "$B/gentrace" --ranks 8 --steps 3 --gzip "$tmp/gen" >/dev/null
    input=$tmp/gen
    what="gentrace, 8 ranks x 3 steps"
fi
"$B/stepcast" upload --job bench "$input" >/dev/null 2>"$tmp/upload.log" || { cat "$tmp/upload.log"; exit 1; }
model=$("$B/stepcast" build --job bench --wait)
"$B/stepcast" replay --model "$model" --json >/dev/null # the first query computes and memoises it

run() { # NAME PATH [wrk options]
    name=$1 path=$2
    shift 2
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency \
        -H "Authorization: Bearer $STEPCAST_TOKEN" "$@" "$url$path")
    rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
    p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    errs=$(echo "$out" | awk '/Non-2xx|Socket errors/ {print}')
    printf '%-36s %10s req/s   p50 %8s   p99 %8s   %s\n' "$name" "$rps" "$p50" "$p99" "${errs:-no errors}"
}

# a GPT-3 2.7B-sized spec on 64 A100s (tp 2, pp 2, dp 16); %s: its GPU-hour price
spec='{"model":{"layers":32,"hidden":2560,"heads":32,"seq":2048,"vocab":51200},'\
'"parallel":{"tp":2,"pp":2,"dp":16,"micro_batch":2,"global_batch":512},'\
'"cluster":{"gpu":"a100-sxm4-80gb","gpu_hour_usd":%s}}'
cat >"$tmp/estimate_same.lua" <<EOF
wrk.method = "POST"
wrk.body = string.format('$spec', "2")
wrk.headers["Content-Type"] = "application/json"
EOF
cat >"$tmp/estimate_new.lua" <<EOF
local n = 0
wrk.headers["Content-Type"] = "application/json"
request = function()
    n = n + 1
    return wrk.format("POST", nil, nil, string.format('$spec', tostring(n)))
end
EOF

echo "service: $(nproc) cores, $what, model $model"
echo "daemon:  $B/stepcastd --http-threads $HTTP_THREADS (log level info, to a file)"
echo "load:    wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s --latency -H 'Authorization: Bearer ...' URL"
run "GET /v1/models/{id}/replay" "/v1/models/$model/replay"
run "GET /healthz" "/healthz"
run "POST /v1/estimate, memoised" "/v1/estimate" -s "$tmp/estimate_same.lua"
run "POST /v1/estimate, a new spec each" "/v1/estimate" -s "$tmp/estimate_new.lua"
