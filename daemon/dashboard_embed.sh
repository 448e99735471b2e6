#!/bin/sh
# daemon/dashboard_embed.sh OUT FILE...: the dashboard's files as a C table.
#
# Writes OUT, a C source defining dashboard_files[] (daemon/dashboard.h):
# each FILE's base name and bytes, in the order given. The daemon serves
# only what this table holds, so the dashboard travels inside stepcastd and
# no file name is ever made from request text.
set -eu
out=$1
shift
tmp="$out.tmp.$$"
mkdir -p "$(dirname "$out")"
{
    echo "/* written by daemon/dashboard_embed.sh: do not edit */"
    echo "#include \"daemon/dashboard.h\""
    i=0
    for f in "$@"; do
        [ -r "$f" ] || { echo "dashboard_embed: cannot read '$f' (npm ci installs node_modules/)" >&2; exit 1; }
        echo "static const unsigned char file$i[] = {"
        od -An -v -tx1 "$f" | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'
        echo "};"
        i=$((i + 1))
    done
    echo "const struct dashboard_file dashboard_files[] = {"
    i=0
    for f in "$@"; do
        echo "    {\"$(basename "$f")\", file$i, sizeof file$i},"
        i=$((i + 1))
    done
    echo "};"
    echo "const size_t dashboard_n_files = $i;"
} >"$tmp"
mv "$tmp" "$out"
