#!/bin/sh
# tests/fuzz/long.sh BUILD_DIR [NAME...]: `make fuzz`'s long runs: each
# fuzz target of BUILD_DIR (or those named) fuzzed from its corpus
# (tests/fuzz/corpus/<name>/) until FUZZ_RUNS executions (1,000,000) or
# FUZZ_SECONDS (600), whichever comes first. One line per target: its
# executions, seconds and crashes; a crash's input is copied to
# tests/fuzz/ and the script fails. New inputs go to a scratch directory,
# not into the corpus. Prints the runner's summary `N passed, N failed`.
set -u
dir=${1:-build/fuzz}
shift 2>/dev/null || true
runs=${FUZZ_RUNS:-1000000}
secs=${FUZZ_SECONDS:-600}
passed=0
failed=0
for bin in "$dir"/fuzz_*; do
    [ -x "$bin" ] || continue
    name=${bin##*/fuzz_}
    if [ $# -gt 0 ]; then
        case " $* " in *" $name "*) ;; *) continue ;; esac
    fi
    scratch=$(mktemp -d)
    "$bin" -runs="$runs" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$scratch/" "$scratch" "tests/fuzz/corpus/$name" >"$scratch.log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch.log" | tail -n 1)
    took=$(sed -n 's/.*Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$scratch.log" | tail -n 1)
    crashes=$(ls "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-* "$scratch"/oom-* 2>/dev/null | wc -l)
    if [ "$rc" -eq 0 ] && [ "$crashes" -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok   fuzz_$name: ${execs:-?} executions in ${took:-?} s, 0 crashes"
    else
        failed=$((failed + 1))
        echo "FAIL fuzz_$name: ${execs:-?} executions, exit $rc, $crashes failing inputs (copied to tests/fuzz/)"
        tail -n 40 "$scratch.log"
        mv "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-* "$scratch"/oom-* tests/fuzz/ 2>/dev/null
    fi
    rm -rf "$scratch" "$scratch.log"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
