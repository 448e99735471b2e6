#!/bin/sh
# `stepcast plan` end to end (tests/bench/plan.py): a GPT-3 175B-like model
# (96 layers, hidden 12288, 96 heads, seq 2048, vocab 51200, global batch
# 1536) on exactly 512 a100-sxm4-80gb, everything else searched. The whole
# single-threaded process, best of 5 by CPU time: wall time (target 10 s),
# CPU time, and configurations evaluated per second of each (target 1,000
# on one core). On a machine other work shares, the CPU figure is the one
# to read. build/bench-plan then times the plan inside the process, and
# once with the bound off, evaluating every feasible configuration of the
# same space: the evaluation rate at scale (the plan itself prunes).
cd "$(dirname "$0")/../.." || exit 1
make -s build/stepcast || exit 1
python3 tests/bench/plan.py tests/bench/specs/plan-96l-h12288-a100.json 512 5
make -s build/bench-plan || exit 1
echo "command: build/bench-plan tests/bench/specs/plan-96l-h12288-a100.json 512 (inside the process: the plan best of 5, then one run with the bound off)"
build/bench-plan tests/bench/specs/plan-96l-h12288-a100.json 512
