#!/bin/sh
# tests/bench/bench_replicas.sh: throughput of one, two and three stepcastd
# replicas on one PostgreSQL (tests/pg_server.sh: a server of its own in a
# temporary folder, a Unix socket only), measured with wrk.
#
# The replicas share one blob directory (--blobs). The sample job
# (data/sample) is uploaded through the first replica, its model built
# once through the second (whichever replica takes it from the queue),
# and each replica replays it once (loaded from its blob and memoised). Then, for 1, 2 and 3 replicas, one wrk per
# replica runs at once, CONNECTIONS connections split between them: GET
# /v1/models/{id}/replay (cached replays) and POST /v1/estimate with a new
# spec each request (new estimates). Prints the requests/s summed over the
# replicas (the better of two measurements), the ratio to one replica
# measured in the same run, and the worst replica's p99. Each replica runs
# its catalog statements on a pool of STORE_CONNECTIONS PostgreSQL
# connections (every request looks its token up); STORE_CONNECTIONS=1 is
# the single connection of before the pool.
# Knobs: BUILD (build dir), DURATION (s per measurement, default 5),
# CONNECTIONS (12), HTTP_THREADS (each replica's, default 2),
# STORE_CONNECTIONS (each replica's pool, default 4).
set -eu
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
DURATION=${DURATION:-5}
CONNECTIONS=${CONNECTIONS:-12}
HTTP_THREADS=${HTTP_THREADS:-2}
STORE_CONNECTIONS=${STORE_CONNECTIONS:-4}
command -v wrk >/dev/null || { echo "bench_replicas: wrk is not installed (scripts/deps.sh installs it)"; exit 1; }
. tests/bench/daemon.sh
tmp=$(mktemp -d)
chmod 711 "$tmp"
mkdir "$tmp/pg"
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    sh tests/pg_server.sh stop "$tmp/pg" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

set +e
store=$(sh tests/pg_server.sh start "$tmp/pg")
rc=$?
set -e
if [ $rc = 77 ]; then
    echo "bench_replicas: skipped: no PostgreSQL server (the Debian package postgresql)"
    exit 0
fi
[ $rc = 0 ] || exit 1

admin="bench-admin-token-0123456789"
urls=""
for i in 1 2 3; do
    STEPCAST_ADMIN_TOKEN=$admin "$B/stepcastd" --store "$store" --data-dir "$tmp/data$i" --blobs "$tmp/blobs" --listen 127.0.0.1:0 \
        --port-file "$tmp/port$i" --http-threads "$HTTP_THREADS" --store-connections "$STORE_CONNECTIONS" --replica-name "bench-$i" \
        2>"$tmp/daemon$i.log" &
    pids="$pids $!"
    bench_wait_port "$tmp/port$i" "$tmp/daemon$i.log" "bench_replicas: replica $i"
    urls="$urls http://127.0.0.1:$(cat "$tmp/port$i")"
done
export STEPCAST_TOKEN=$admin
first=$(echo $urls | cut -d' ' -f1)
STEPCAST_SERVER=$first "$B/stepcast" upload --job bench data/sample >/dev/null 2>"$tmp/upload.log" ||
    { cat "$tmp/upload.log"; exit 1; }
second=$(echo $urls | cut -d' ' -f2)
model=$(STEPCAST_SERVER=$second "$B/stepcast" build --job bench --wait)
for u in $urls; do
    STEPCAST_SERVER=$u "$B/stepcast" replay --model "$model" --json >/dev/null
done

spec='{"model":{"layers":32,"hidden":2560,"heads":32,"seq":2048,"vocab":51200},'\
'"parallel":{"tp":2,"pp":2,"dp":16,"micro_batch":2,"global_batch":512},'\
'"cluster":{"gpu":"a100-sxm4-80gb","gpu_hour_usd":%s}}'
for i in 1 2 3; do # each wrk its own prices: every request a spec no replica has memoised
    cat >"$tmp/estimate_new$i.lua" <<EOF
local n = 0
wrk.headers["Content-Type"] = "application/json"
request = function()
    n = n + 1
    return wrk.format("POST", nil, nil, string.format('$spec', tostring(n) .. ".$i"))
end
EOF
done

# measure N PATH [lua]: N wrk at once, one per replica; "RPS P99_MS"
measure() {
    n=$1 path=$2 lua=${3:-}
    c=$((CONNECTIONS / n))
    k=0 wp=""
    for u in $(echo $urls | cut -d' ' -f1-"$n"); do
        k=$((k + 1))
        set -- -t1 -c"$c" -d"${DURATION}s" --latency -H "Authorization: Bearer $admin"
        [ -n "$lua" ] && set -- "$@" -s "$tmp/$lua$k.lua"
        wrk "$@" "$u$path" >"$tmp/wrk$k.out" &
        wp="$wp $!"
    done
    for p in $wp; do wait "$p" || true; done
    cat "$tmp"/wrk[1-"$n"].out | awk '
        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
        /^Requests\/sec:/ { rps += $2 }
        $1 == "99%" { p = ms($2); if (p > p99) p99 = p }
        /Non-2xx|Socket errors/ { err = err " " $0 }
        END { printf "%.0f %.2f%s\n", rps, p99, err }'
    rm -f "$tmp"/wrk[1-3].out
}

# best N PATH [lua]: the better of two measurements (the machine is shared)
best() {
    a=$(measure "$@")
    b=$(measure "$@")
    if [ "${a%% *}" -ge "${b%% *}" ]; then echo "$a"; else echo "$b"; fi
}

echo "replicas: $(nproc) cores; 1 to 3 stepcastd --http-threads $HTTP_THREADS --store-connections $STORE_CONNECTIONS on one PostgreSQL ($(pg_config --version 2>/dev/null || echo PostgreSQL))"
echo "job:      data/sample, model $model; load: wrk -t1 -c$CONNECTIONS/N -d${DURATION}s --latency, one per replica at once, best of 2"
if [ "$(nproc)" -le 2 ]; then
    echo "note:     on $(nproc) cores the replicas and wrk share the same cores: this measures the replicas'"
    echo "          overhead (a PostgreSQL round trip per request, N processes), not scaling"
fi
printf '%-30s %8s %10s %7s %10s\n' "" replicas "req/s" "x one" "p99 ms"
for kind in replay estimate; do
    base=""
    for n in 1 2 3; do
        if [ $kind = replay ]; then
            r=$(best "$n" "/v1/models/$model/replay")
            name="GET /v1/models/{id}/replay"
        else
            r=$(best "$n" "/v1/estimate" estimate_new)
            name="POST /v1/estimate, new spec"
        fi
        rps=${r%% *}
        rest=${r#* }
        [ -z "$base" ] && base=$rps
        printf '%-30s %8s %10s %7s %10s\n' "$name" "$n" "$rps" "$(awk -v a="$rps" -v b="$base" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }')" "$rest"
    done
done
