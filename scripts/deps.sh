#!/bin/sh
# scripts/deps.sh: find what the build needs, install what is missing, write
# the build's configuration.
#
# Every build target depends on the file this writes ($1, build/config.mk by
# default), so on a fresh Debian 12 machine `make run` or `make check` installs
# the Debian packages it needs (apt-get, as root or through sudo) before the
# first compile. Checks are pkg-config modules and commands; nothing is
# installed when they all pass. Set STEPCAST_NO_INSTALL=1 to only report.
set -eu

out=${1:-build/config.mk}

# pkg-config module -> Debian package
modules="libmicrohttpd:libmicrohttpd-dev jansson:libjansson-dev gsl:libgsl-dev
sqlite3:libsqlite3-dev zlib:zlib1g-dev libcurl:libcurl4-openssl-dev
libcrypto:libssl-dev libarchive:libarchive-dev libprotobuf-c:libprotobuf-c-dev
protobuf:libprotobuf-dev libpq:libpq-dev"
# command -> Debian package (clang and its runtime build the fuzz targets;
# python3 and wrk are the baselines and load generator of `make bench`;
# node, npm and chromium build and test the dashboard; protoc-c compiles the
# Chakra schema; protoc, g++ and libprotobuf build Chakra's own readers,
# which tests/interop runs)
commands="cc:gcc pkg-config:pkg-config clang:clang python3:python3 wrk:wrk
gzip:gzip tar:tar node:nodejs npm:npm chromium:chromium protoc-c:protobuf-c-compiler
protoc:protobuf-compiler g++:g++"
# module of Debian's /usr/bin/python3 -> Debian package: what installs the
# Python client (clients/python) into a venv, offline (an interpreter
# earlier on PATH, such as a pyenv build, may lack them); and what the
# readers of tests/interop import: Chakra's protobuf reader, HTA's packages
pymodules="ensurepip:python3-venv setuptools:python3-setuptools wheel:python3-wheel
pip:python3-pip google.protobuf:python3-protobuf pandas:python3-pandas numpy:python3-numpy
plotly:python3-plotly networkx:python3-networkx pydot:python3-pydot psutil:python3-psutil"

# optional pkg-config module -> Debian package: used where present, installed
# where it can be, and the build falls back without it (ISA-L's igzip
# inflates gzip traces 2-3x faster than zlib, which stays the fallback)
optional_modules="libisal:libisal-dev"

missing=""
add() { case " $missing " in *" $1 "*) ;; *) missing="$missing $1" ;; esac; }

for pair in $commands; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || add "${pair#*:}"
done
if command -v pkg-config >/dev/null 2>&1; then
    for pair in $modules; do
        pkg-config --exists "${pair%%:*}" 2>/dev/null || add "${pair#*:}"
    done
else
    for pair in $modules; do add "${pair#*:}"; done
fi
if [ -x /usr/bin/python3 ]; then
    for pair in $pymodules; do
        /usr/bin/python3 -c "import ${pair%%:*}" 2>/dev/null || add "${pair#*:}"
    done
else
    add python3
    for pair in $pymodules; do add "${pair#*:}"; done
fi
# the PostgreSQL server the tests of --store postgresql:// run
# (tests/pg_server.sh): Debian keeps initdb and pg_ctl off PATH
pg_server=""
for f in /usr/lib/postgresql/*/bin/initdb; do [ -x "$f" ] && pg_server=$f; done
[ -n "$pg_server" ] || add postgresql
# libFuzzer's runtime ships apart from clang on Debian
if command -v clang >/dev/null 2>&1; then
    f=$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || true)
    [ -f "$f" ] || add "libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
else
    add libclang-rt-14-dev
fi

if [ -n "$missing" ]; then
    if [ "${STEPCAST_NO_INSTALL:-0}" = 1 ]; then
        echo "deps: missing Debian packages:$missing" >&2
        exit 1
    fi
    if [ "$(id -u)" = 0 ]; then sudo=""
    elif command -v sudo >/dev/null 2>&1; then sudo="sudo"
    else
        echo "deps: missing Debian packages:$missing; run as root: apt-get install$missing" >&2
        exit 1
    fi
    echo "deps: installing$missing" >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || true
    # shellcheck disable=SC2086
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2
fi

# the optional packages, after the required ones (pkg-config among them):
# a failure to install one only leaves the build without it
optional=""
for pair in $optional_modules; do
    pkg-config --exists "${pair%%:*}" 2>/dev/null || optional="$optional ${pair#*:}"
done
if [ -n "$optional" ] && [ "${STEPCAST_NO_INSTALL:-0}" != 1 ] &&
    { [ "$(id -u)" = 0 ] || command -v sudo >/dev/null 2>&1; }; then
    s=""; [ "$(id -u)" = 0 ] || s=sudo
    [ -n "$missing" ] || $s env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || true
    for pkg in $optional; do
        echo "deps: installing optional $pkg" >&2
        $s env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >&2 ||
            echo "deps: $pkg is not installed; building without it" >&2
    done
fi

# the npm packages of package-lock.json (the dashboard's chart library, the
# browser tests' driver) into node_modules/, again when the lock is newer;
# no browser is downloaded: the tests drive Debian's chromium
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -f "$root/node_modules/.package-lock.json" ] ||
    [ "$root/package-lock.json" -nt "$root/node_modules/.package-lock.json" ]; then
    if [ "${STEPCAST_NO_INSTALL:-0}" = 1 ]; then
        echo "deps: node_modules/ is not installed from package-lock.json: npm ci" >&2
        exit 1
    fi
    echo "deps: npm ci (package-lock.json)" >&2
    (cd "$root" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --prefer-offline >&2)
fi

pcmods="libmicrohttpd jansson gsl sqlite3 zlib libcurl libcrypto libarchive libprotobuf-c libpq"
cuda_home=${CUDA_HOME:-/usr/local/cuda}
have_cupti=0
cupti_lib=""
if [ -f "$cuda_home/include/cupti.h" ]; then
    for d in "$cuda_home/lib64" "$cuda_home/extras/CUPTI/lib64" "$cuda_home/lib"; do
        if [ -e "$d/libcupti.so" ]; then have_cupti=1; cupti_lib=$d; break; fi
    done
fi

# ISA-L inflates gzip where present (model/stream.c), zlib otherwise
isal_cflags=""
isal_libs=""
if pkg-config --exists libisal 2>/dev/null; then
    isal_cflags="-DSTEPCAST_HAVE_ISAL $(pkg-config --cflags libisal)"
    isal_libs="$(pkg-config --libs libisal)"
fi

mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
{
    echo "# written by scripts/deps.sh; delete it to check again"
    echo "DEPS_CFLAGS := $(pkg-config --cflags $pcmods) $isal_cflags"
    echo "DEPS_LIBS := $(pkg-config --libs $pcmods) $isal_libs -lpthread -lm"
    echo "CUDA_HOME := $cuda_home"
    echo "HAVE_CUPTI := $have_cupti"
    echo "CUPTI_LIBDIR := $cupti_lib"
} >"$tmp"
mv "$tmp" "$out"
# (profiler/module.mk says in one line when the profiler is not built)
if [ "$have_cupti" = 1 ]; then
    echo "deps: CUPTI found in $cupti_lib; the profiler will be built" >&2
fi
