#!/bin/sh
# Many-rank jobs (64, 256, 512 ranks of ~20 MB) built and replayed: wall
# time and peak RSS per MB of trace, on the command line and through the
# daemon (tests/bench/scale.py). Needs ~21 GB of free disk for the largest
# job (its traces and the daemon's copy), removed afterwards.
cd "$(dirname "$0")/../.." || exit 1
make -s build/gentrace build/stepcast build/stepcastd || exit 1
exec python3 tests/bench/scale.py
