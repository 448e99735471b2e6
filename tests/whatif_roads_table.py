#!/usr/bin/env python3
"""tests/whatif_roads_table.py [--tests BIN]: the table of the two roads on
the measured steps, for docs/lab/what-if-on-traced-jobs.md.

Runs the test that holds them (whatif_roads_from_the_measured_eager_steps,
tests/golden/test_golden_whatif.c) and prints its figures as a Markdown
table: for each real trace of data/calibration/torch-steps (GPU, model)
and each target (tp 2/4/8, dp 8/64/512, pp 2/4 at four micro-batches a
step, cp 2), the what-if's ratio of the traced step beside the estimate's
ratio of the same two descriptions, their difference, and, for the cases
the test holds on the GPUs' part (the step less its wait on the host),
that part's difference, marked *. The test's own verdict is its exit
status and last line, printed after the table."""
import argparse
import re
import subprocess
import sys

TEST = "whatif_roads_from_the_measured_eager_steps"
TARGETS = ["tp=2", "tp=4", "tp=8", "dp=8", "dp=64", "dp=512", "pp=2", "pp=4", "cp=2"]
LINE = re.compile(r"^\s+(\S+)\s+(\S+)\s+(\S+)\s+what-if x([\d.]+)\s+estimate x([\d.]+)\s+([+-]?[\d.]+)%\s+"
                  r"GPUs only\s+([+-]?[\d.]+)%\s+\(([^)]*)\)\s*(.*)$")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", default="build/tests/stepcast-tests")
    a = ap.parse_args()
    run = subprocess.run([a.tests, "-v", TEST], capture_output=True, text=True)
    rows, order = {}, []
    for line in run.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        gpu, model, target, w, e, d, dd, _, why = m.groups()
        key = "%s %s" % (gpu, model)
        if key not in rows:
            rows[key] = {}
            order.append(key)
        cell = "x%s / x%s (%+.1f%%" % (w, e, float(d))
        if "GPUs' part" in why:
            cell += "; GPUs %+.1f%%" % float(dd)
        cell += ")" + (" *" if why else "")
        rows[key][target] = cell
    if not rows:
        sys.stdout.write(run.stdout + run.stderr)
        print("no figures from %s %s" % (a.tests, TEST))
        return 1
    print("| GPU, traced model | " + " | ".join(TARGETS) + " |")
    print("|---" * (len(TARGETS) + 1) + "|")
    for key in order:
        print("| %s | %s |" % (key, " | ".join(rows[key].get(t, "") for t in TARGETS)))
    tail = [ln for ln in run.stdout.splitlines() if ln.strip()][-2:]
    print()
    print("\n".join(tail))
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
