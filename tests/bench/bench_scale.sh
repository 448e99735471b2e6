#!/bin/sh
# Jobs of many GB: 512 ranks of 100 MB (51 GB of JSON) folded and
# --no-fold, 4,096 ranks of 20 MB (82 GB) folded, on the command line and
# through the daemon (upload, build, replay): wall, CPU, peak RSS per MB of
# trace, per task and per rank (tests/bench/scale.py). The traces are
# generated gzip-compressed (about 15 GB of disk for both jobs and the
# daemon's copy), removed afterwards. Long: 36 minutes on 2 idle cores.
cd "$(dirname "$0")/../.." || exit 1
make -s build/gentrace build/stepcast build/stepcastd || exit 1
exec python3 tests/bench/scale.py
