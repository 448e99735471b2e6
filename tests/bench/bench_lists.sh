#!/bin/sh
# tests/bench/bench_lists.sh: a large ledger listed, as issue 31 measured it.
#
# Starts the daemon on a temporary data directory, writes ENTRIES ledger
# entries (121,000) and JOBS jobs (20,000) into its catalog with sqlite3,
# restarts it, then times GET /v1/validations and GET /v1/jobs (one
# request each, the default page) and all the pages of each at limit=1000
# (the requests' times summed),
# printing each answer's bytes, seconds and the daemon's peak RSS
# (VmHWM) after it. STEPCASTD names another daemon binary (an older
# build, to compare: it answers every row at once).
# Knobs: BUILD (build dir), STEPCASTD, ENTRIES, JOBS.
set -eu
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
D=${STEPCASTD:-$B/stepcastd}
ENTRIES=${ENTRIES:-121000}
JOBS=${JOBS:-20000}
command -v sqlite3 >/dev/null || { echo "bench_lists: sqlite3 is not installed"; exit 1; }
. tests/bench/daemon.sh
bench_tmp

bench_daemon_start bench_lists
bench_daemon_stop
sqlite3 "$tmp/data/catalog.db" <<SQL
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $ENTRIES)
INSERT INTO validations(model, kind, spec, measured_ms, predicted_ms, source, run_at, version, created_ns)
SELECT NULL, 'estimate', '{"model":{"layers":32,"hidden":4096,"heads":32,"seq":4096},"parallel":{"tp":8,"pp":1,"dp":16}}',
       100 + i % 50, 104 + i % 47, 'bench row ' || i, '2026-10-01', 'bench', i FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $JOBS)
INSERT INTO jobs(id, description, created_ns, updated_ns)
SELECT printf('job-%06d', i), '{"config":{"tp":8,"pp":4,"dp":16},"steps_per_day":10000}', i, i FROM n;
SQL
bench_daemon_start bench_lists
auth="Authorization: Bearer $(cat "$tmp/admin.token")"
echo "stepcastd: $D; $ENTRIES ledger entries, $JOBS jobs; peak RSS after start $(bench_hwm)"
one() { # NAME PATH
    out=$(curl -s -o "$tmp/body" -w '%{http_code} %{size_download} %{time_total}' -H "$auth" "$url$2")
    echo "$1: GET $2: status, bytes, s: $out; peak RSS $(bench_hwm)"
}
all() { # NAME PATH: every page at limit=1000 (seconds: the requests', summed)
    cursor="" pages=0 bytes=0 secs=0
    while :; do
        set -- "$1" "$2" $(curl -s -o "$tmp/body" -w '%{size_download} %{time_total}' -H "$auth" \
            "$url$2?limit=1000${cursor:+&cursor=$cursor}")
        bytes=$((bytes + $3))
        secs=$(echo "$secs + $4" | bc)
        pages=$((pages + 1))
        cursor=$(sed -n 's/.*"next_cursor":"\([0-9a-f]*\)".*/\1/p' "$tmp/body")
        [ -n "$cursor" ] || break
    done
    echo "$1: every page of $2 at limit=1000: $pages pages, $bytes bytes, $secs s; peak RSS $(bench_hwm)"
}
one ledger /v1/validations
one jobs /v1/jobs
if grep -q next_cursor "$tmp/body"; then
    all ledger /v1/validations
    all jobs /v1/jobs
fi
