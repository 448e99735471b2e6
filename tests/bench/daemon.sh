# tests/bench/daemon.sh: sourced by the benches that run stepcastd.
#   bench_tmp                           make a temporary folder, $tmp, removed
#       at exit with the daemon still running (pid)
#   bench_wait_port PORTFILE LOG WHAT   wait until a daemon wrote its port,
#       else say WHAT did not start, show its log and exit
#   bench_daemon_start NAME [FLAGS...]  start ${D:-$B/stepcastd} on an
#       ephemeral port with an admin token ($tmp/admin.token), its log
#       appended to $tmp/daemon.log; sets pid and url, and exports
#       STEPCAST_SERVER and STEPCAST_TOKEN for the command line's remote mode
#   bench_daemon_stop                   stop it (SIGTERM)
#   bench_hwm                           its peak resident memory, "N kB"
bench_tmp() {
    tmp=$(mktemp -d)
    pid=""
    trap bench_cleanup EXIT INT TERM
}
bench_cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}

bench_wait_port() {
    n=0
    while [ ! -s "$1" ]; do
        n=$((n + 1))
        [ $n -gt 1000 ] && { echo "$3 did not start"; cat "$2"; exit 1; }
        sleep 0.01
    done
}

bench_daemon_start() {
    name=$1
    shift
    rm -f "$tmp/port"
    "${D:-${B:-build}/stepcastd}" --data-dir "$tmp/data" --listen 127.0.0.1:0 --port-file "$tmp/port" \
        --admin-token-file "$tmp/admin.token" "$@" 2>>"$tmp/daemon.log" &
    pid=$!
    bench_wait_port "$tmp/port" "$tmp/daemon.log" "$name: stepcastd"
    url="http://127.0.0.1:$(cat "$tmp/port")"
    STEPCAST_SERVER=$url
    STEPCAST_TOKEN=$(cat "$tmp/admin.token")
    export STEPCAST_SERVER STEPCAST_TOKEN
}

bench_daemon_stop() {
    kill "$pid" && wait "$pid" 2>/dev/null || true
    pid=""
}

bench_hwm() { sed -n 's/^VmHWM:[[:space:]]*//p' "/proc/$pid/status"; }
