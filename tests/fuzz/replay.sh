#!/bin/sh
# tests/fuzz/replay.sh BUILD_DIR: run every fuzz target over its corpus
# (tests/fuzz/corpus/<target>/), then fuzz each briefly from that corpus.
# Prints one line per input and the runner's summary `N passed, N failed`.
# JOBS targets (default: the cores) run at a time, each one's lines printed
# when its batch ends, in the targets' order.
set -u
dir=${1:-build/fuzz}
runs=${FUZZ_RUNS:-20000}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# one target: its lines on stdout, its passed and failed counts in $out/NAME.n
target() {
    bin=$1 name=$2 passed=0 failed=0
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
    echo "$passed $failed" >"$out/$name.n"
}

# the targets started since the last batch ended: wait, then print them
batch=
finish() {
    wait
    for name in $batch; do
        cat "$out/$name.log"
    done
    batch=
}

running=0
all=
for bin in "$dir"/fuzz_*; do
    [ -x "$bin" ] || continue
    name=${bin##*/fuzz_}
    target "$bin" "$name" >"$out/$name.log" 2>&1 &
    batch="$batch $name"
    all="$all $name"
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        finish
        running=0
    fi
done
finish
passed=0
failed=0
for name in $all; do
    if [ ! -f "$out/$name.n" ]; then
        echo "FAIL fuzz_$name: ended without its counts"
        failed=$((failed + 1))
        continue
    fi
    read -r p f <"$out/$name.n"
    passed=$((passed + p))
    failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
