#!/bin/sh
# The dashboard's Plan view drawing 2,000 rows in chromium (median of 3
# runs, tests/browser/bench_plan.mjs), against a plain table of the same
# rows in the same run. Needs chromium and node_modules (scripts/deps.sh).
cd "$(dirname "$0")/../.." || exit 1
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ] || [ ! -d node_modules/playwright-core ]; then
    echo "no chromium or playwright-core (scripts/deps.sh installs them): skipped"
    exit 0
fi
make -s build/stepcastd || exit 1
echo "command: node tests/browser/bench_plan.mjs build"
node tests/browser/bench_plan.mjs build
