#!/bin/sh
# tests/fuzz/replay.sh BUILD_DIR: run every fuzz target over its corpus
# (tests/fuzz/corpus/<target>/), then fuzz each briefly from that corpus.
# Prints one line per input and the runner's summary `N passed, N failed`.
set -u
dir=${1:-build/fuzz}
runs=${FUZZ_RUNS:-20000}
passed=0
failed=0
for bin in "$dir"/fuzz_*; do
    [ -x "$bin" ] || continue
    name=${bin##*/fuzz_}
    corpus=tests/fuzz/corpus/$name
    for f in "$corpus"/*; do
        [ -f "$f" ] || continue
        if "$bin" "$f" >/dev/null 2>&1; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
            echo "FAIL fuzz_$name $f"
            "$bin" "$f" 2>&1 | tail -n 20
        fi
    done
    scratch=$(mktemp -d)
    if "$bin" -runs="$runs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        "$scratch" "$corpus" >"$scratch.log" 2>&1; then
        passed=$((passed + 1))
        echo "ok   fuzz_$name: $runs fuzzing runs ($(grep -c . "$corpus"/* 2>/dev/null | wc -l) seeds)"
    else
        failed=$((failed + 1))
        echo "FAIL fuzz_$name: fuzzing found a failure; the input is in $scratch"
        tail -n 40 "$scratch.log"
        cp "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-* tests/fuzz/ 2>/dev/null
    fi
    rm -rf "$scratch" "$scratch.log"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
