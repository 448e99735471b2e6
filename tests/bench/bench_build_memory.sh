#!/bin/sh
# tests/bench/bench_build_memory.sh: a daemon build's peak memory against
# the estimate its admission counted (daemon/built.h, docs/service.md
# "Build memory"). Uploads a 64-rank gentrace job (3.3 million events held,
# 77 MB gzip), builds it unfolded, and prints the daemon's peak resident
# memory during the build less before it (VmHWM), the estimate logged at
# the build's start, their ratio, and the model's blob, which the build
# streams to its file a chunk at a time instead of holding it.
# Knobs: BUILD (build dir), RANKS (64), STEPS (190).
set -eu
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
RANKS=${RANKS:-64}
STEPS=${STEPS:-190}
. tests/bench/daemon.sh
bench_tmp
"$B/gentrace" --ranks "$RANKS" --steps "$STEPS" --gzip "$tmp/job" >/dev/null
bench_daemon_start bench_build_memory
kb() { bench_hwm | awk '{print $1}'; }

"$B/stepcast" upload --job mem "$tmp/job" >/dev/null
before=$(kb)
"$B/stepcast" build --job mem --no-fold --wait >/dev/null
after=$(kb)
estimate=$(sed -n 's/.*event=start .*estimate=\([0-9]*\).*/\1/p' "$tmp/daemon.log" | head -1)
blob=0
for f in $(find "$tmp/data/blobs" -type f -size +1k); do
    if [ "$(head -c 7 "$f")" = "SCMODEL" ]; then
        blob=$(wc -c <"$f")
    fi
done
echo "$B/gentrace --ranks $RANKS --steps $STEPS --gzip; stepcast upload; stepcast build --no-fold --wait:"
awk -v b="$before" -v a="$after" -v e="$estimate" -v m="$blob" 'BEGIN {
    g = (a - b) * 1024
    printf "  the build grew the daemon by %.1f MiB (VmHWM), its admission estimated %.1f MiB: x%.2f of the estimate\n",
           g / 1048576, e / 1048576, g / e
    printf "  the model blob streamed to its file: %.1f MiB (x%.2f of the growth)\n", m / 1048576, m / g
}'
