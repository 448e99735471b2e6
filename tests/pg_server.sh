#!/bin/sh
# tests/pg_server.sh: a throwaway PostgreSQL server for the tests that run
# stepcastd on --store postgresql://...
#
#   tests/pg_server.sh start DIR   initdb + pg_ctl start in DIR (an empty
#                                  folder; again: start what is there);
#                                  prints the libpq URL to use
#   tests/pg_server.sh stop DIR    stop it (immediate shutdown)
#
# The server listens only on a Unix socket in DIR (listen_addresses=''), so
# it touches no network and no system service. PostgreSQL refuses to run as
# root: as root it runs as the `postgres` user (runuser), DIR chowned to it;
# otherwise as the caller. Exit status 77: PostgreSQL is not installed (the
# Debian package `postgresql`, which scripts/deps.sh installs).
set -eu

cmd=${1:?start|stop} dir=${2:?DIR}

bindir=$(pg_config --bindir 2>/dev/null || true)
if [ ! -x "$bindir/initdb" ]; then
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] && bindir=$d
    done
fi
if [ ! -x "$bindir/initdb" ] || [ ! -x "$bindir/pg_ctl" ]; then
    echo "no PostgreSQL server (initdb, pg_ctl): install the Debian package postgresql" >&2
    exit 77
fi

as=""
if [ "$(id -u)" = 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
        echo "running as root and there is no user 'postgres' to run PostgreSQL as" >&2
        exit 77
    fi
    chown postgres "$dir"
    as="runuser -u postgres --"
fi

case $cmd in
start)
    # trust: only this socket's folder reaches the server; fsync off: a
    # test's server does not outlive a crash of the machine
    if [ ! -d "$dir/data" ] && ! $as "$bindir/initdb" -D "$dir/data" -U stepcast -A trust -E UTF8 --no-sync \
        >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        exit 1
    fi
    if ! $as "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses='' -k $dir -c fsync=off" start >/dev/null; then
        cat "$dir/server.log" >&2
        exit 1
    fi
    echo "postgresql:///postgres?host=$dir&user=stepcast"
    ;;
stop)
    $as "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
    ;;
*)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
