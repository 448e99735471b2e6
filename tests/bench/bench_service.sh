#!/bin/sh
# tests/bench/bench_service.sh: stepcastd under load, measured with wrk.
#
# Starts the daemon on an ephemeral port with a temporary data directory,
# uploads a job (the 8 DLRM ranks from ../shared/traces when present, else
# data/sample, else an 8-rank job from gentrace), builds its model, then
# runs wrk against GET /v1/models/{id}/replay on the cached model and
# against /healthz. Prints requests/s and p99 latency with the commands.
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
tmp=$(mktemp -d)
pid=""
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

"$B/stepcastd" --data-dir "$tmp/data" --listen 127.0.0.1:0 --port-file "$tmp/port" \
    --admin-token-file "$tmp/admin.token" --http-threads "$HTTP_THREADS" 2>"$tmp/daemon.log" &
pid=$!
i=0
while [ ! -s "$tmp/port" ]; do
    i=$((i + 1))
    [ $i -gt 500 ] && { echo "bench_service: stepcastd did not start"; cat "$tmp/daemon.log"; exit 1; }
    sleep 0.01
done
url="http://127.0.0.1:$(cat "$tmp/port")"
export STEPCAST_SERVER="$url"
export STEPCAST_TOKEN="$(cat "$tmp/admin.token")"

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

run() { # NAME PATH
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency \
        -H "Authorization: Bearer $STEPCAST_TOKEN" "$url$2")
    rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    errs=$(echo "$out" | awk '/Non-2xx|Socket errors/ {print}')
    printf '%-34s %10s req/s   p99 %8s   %s\n' "$1" "$rps" "$p99" "${errs:-no errors}"
}

echo "service: $(nproc) cores, $what, model $model"
echo "daemon:  $B/stepcastd --http-threads $HTTP_THREADS (log level info, to a file)"
echo "load:    wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s --latency -H 'Authorization: Bearer ...' URL"
run "GET /v1/models/{id}/replay" "/v1/models/$model/replay"
run "GET /healthz" "/healthz"
