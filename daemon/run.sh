#!/bin/sh
# daemon/run.sh BUILD_DIR: what `make run` does.
#
# Starts stepcastd on the embedded default store under ./var (port 8750),
# loads the sample job in data/sample/ when there is one, with its
# description (data/sample-config.json: what-ifs start from it), and builds
# its model, prints the URL, the admin token, the dashboard's URL and an example
# query, then stays in the foreground until Ctrl-C (the daemon drains and
# exits).
set -eu
B=${1:-build}
mkdir -p var
# a daemon already serving var/ (it holds var/lock) is left alone
if [ -e var/lock ] && ! flock -n var/lock true; then
    echo "make run: stepcastd (pid $(cat var/lock)) already serves ./var at http://127.0.0.1:$(cat var/port 2>/dev/null); stop it first to start another"
    exit 0
fi
rm -f var/port
"$B/stepcastd" --data-dir var --admin-token-file var/admin.token --port-file var/port 2>>var/stepcastd.log &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid; exit 0' INT TERM
i=0
while [ ! -s var/port ]; do
    if ! kill -0 $pid 2>/dev/null || [ $i -gt 1000 ]; then
        echo "make run: stepcastd did not start; the end of var/stepcastd.log:" >&2
        tail -n 5 var/stepcastd.log >&2
        exit 1
    fi
    i=$((i + 1))
    sleep 0.01
done
url="http://127.0.0.1:$(cat var/port)"
if [ -r var/admin.token ]; then
    token=$(cat var/admin.token)
else
    echo "make run: var/admin.token is gone but the store has an admin token: restore the file," >&2
    echo "or remove var/ to start afresh" >&2
    kill -TERM $pid
    wait $pid
    exit 1
fi
export STEPCAST_SERVER="$url" STEPCAST_TOKEN="$token"

model=""
if ls data/sample/*.json* >/dev/null 2>&1; then
    new=$("$B/stepcast" upload --job sample data/sample/*.json* 2>&1 >/dev/null |
        sed -n 's/.*(\([0-9]*\) new).*/\1/p')
    "$B/stepcast" job config --job sample --description "$(cat data/sample-description.txt)" data/sample-config.json >/dev/null
    model=$("$B/stepcast" models --job sample | awk '$3 == "ready" { m = $1 } END { print m }')
    if [ "${new:-1}" != 0 ] || [ -z "$model" ]; then
        model=$("$B/stepcast" build --job sample --wait)
    fi
else
    echo "make run: no sample data in data/sample/: nothing loaded"
fi

echo
echo "stepcastd $("$B/stepcastd" --version | cut -d' ' -f2) is serving $url (store: ./var, log: var/stepcastd.log)"
echo "admin token: $token   (also in var/admin.token)"
echo "dashboard:   $url/   (open it in a browser and paste the token)"
if [ -n "$model" ]; then
    echo "the sample job's model: $model; try:"
    echo "  curl -H 'Authorization: Bearer $token' $url/v1/models/$model/replay"
    echo "  curl -H 'Authorization: Bearer $token' -d '{\"set\":{\"dp\":8}}' $url/v1/models/$model/whatif"
else
    echo "try:"
    echo "  curl -H 'Authorization: Bearer $token' $url/v1/jobs"
fi
echo "or the CLI: STEPCAST_SERVER=$url STEPCAST_TOKEN=\$(cat var/admin.token) $B/stepcast jobs"
echo "Ctrl-C stops it."
wait $pid
