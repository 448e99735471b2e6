#!/bin/sh
# `stepcast estimate` end to end: the whole process for a GPT-3 175B-like
# spec on 3,072 H100 (tp 8, pp 48, dp 8, full recomputation, sequence
# parallelism) at each level of detail; the best of 3 runs of each, wall
# and CPU time, against its target (stage 50 ms, layer 500 ms, kernel 2 s).
cd "$(dirname "$0")/../.." || exit 1
make -s build/stepcast || exit 1
spec=tests/bench/specs/dense-96l-h24576-h100.json
for level in stage:50 layer:500 kernel:2000; do
    detail=${level%:*} target=${level#*:}
    echo "command: build/stepcast estimate --spec $spec --detail $detail --json"
    best=
    for i in 1 2 3; do
        t=$( { /usr/bin/time -f '%e %U %S' build/stepcast estimate --spec "$spec" --detail "$detail" --json \
               >/dev/null; } 2>&1 | tail -n 1)
        ms=$(echo "$t" | awk '{printf "%.0f %.0f", $1 * 1000, ($2 + $3) * 1000}')
        wall=${ms% *}
        if [ -z "$best" ] || [ "$wall" -lt "${best% *}" ]; then best=$ms; fi
    done
    verdict=ok
    [ "${best% *}" -le "$target" ] || verdict="over target"
    echo "  $detail: ${best% *} ms wall, ${best#* } ms CPU (target $target ms): $verdict"
done
