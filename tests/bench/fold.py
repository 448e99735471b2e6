#!/usr/bin/env python3
"""tests/bench/fold.py: rank folding (model/graph.h, MODEL_FOLD_OVER) on
generated data-parallel jobs with a straggler.

For gentrace jobs of 128 and 256 ranks (`gentrace --ranks R --steps S
--layers L --gzip --slow-rank 7 --slow-factor 1.3`, ranks up to 3% apart
in speed), generated into a temporary folder and removed after:
`stepcast replay --json --no-fold DIR` and `stepcast replay --json --fold
DIR` (load, build, replay, print), each's wall time, CPU time and peak RSS
(wait4), the graph's tasks, how many ranks were folded into how many, and
how far the folded replay is from the unfolded one: each rank's steps (a
folded rank's through its representative, less how much later it entered
the first step), each step's mean and longest over the job's ranks, and
the mean |error| against the measured steps. Fails (exit 1) when a
figure is 0.5% or more apart, or the straggler was folded.

Knobs: FOLD_RANKS (default "128 256"), FOLD_STEPS (10), FOLD_LAYERS (32),
BUILD (build)."""
import json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale import run  # noqa: E402  (wall s, peak RSS bytes, CPU s) of a command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
RANKS = [int(r) for r in os.environ.get("FOLD_RANKS", "128 256").split()]
STEPS = os.environ.get("FOLD_STEPS", "10")
LAYERS = os.environ.get("FOLD_LAYERS", "32")
SLOW = 7


def per_rank(doc):
    """{(rank, k): replayed ms} for every rank of the job, folded or not."""
    steps, seen = {}, {}
    for s in doc["steps"]:
        k = seen.get(s["rank"], 0)
        seen[s["rank"]] = k + 1
        steps[(s["rank"], k)] = s["replayed_ms"]
    for g in doc.get("folding", {}).get("groups", []):
        for r, after in zip(g["ranks"][1:], g["first_step_after_ms"][1:]):
            for k in range(seen[g["rank"]]):
                steps[(r, k)] = steps[(g["rank"], k)] - (after if k == 0 else 0)
    return steps


def compare(whole, folded):
    """(worst rank-step %, worst step-mean %, worst step-max %) apart."""
    a, b = per_rank(whole), per_rank(folded)
    if set(a) != set(b):
        sys.exit("bench_fold: the folded replay has other ranks or steps than the unfolded one")
    worst = max(abs(b[key] - a[key]) / a[key] * 100 for key in a)
    ks = sorted({k for _, k in a})
    mean = mx = 0.0
    for k in ks:
        va = [v for (r, kk), v in a.items() if kk == k]
        vb = [b[(r, kk)] for (r, kk) in a if kk == k]
        mean = max(mean, abs(sum(vb) - sum(va)) / sum(va) * 100)
        mx = max(mx, abs(max(vb) - max(va)) / max(va) * 100)
    return worst, mean, mx


def main():
    gentrace, stepcast = os.path.join(BUILD, "gentrace"), os.path.join(BUILD, "stepcast")
    print("| ranks | trace MB (gzip) | road | graph tasks | ranks folded into | wall s | CPU s | peak RSS MB | "
          "mean abs error % |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    failed = False
    rows = []
    for ranks in RANKS:
        tmp = tempfile.mkdtemp(prefix="stepcast-fold-")
        try:
            job = os.path.join(tmp, "job")
            subprocess.run([gentrace, "--ranks", str(ranks), "--steps", STEPS, "--layers", LAYERS, "--gzip",
                            "--slow-rank", str(SLOW), "--slow-factor", "1.3", job], check=True)
            mb = sum(os.path.getsize(os.path.join(job, f)) for f in os.listdir(job)) / 1e6
            docs = {}
            for road in ("--no-fold", "--fold"):
                out = os.path.join(tmp, road + ".json")
                dt, rss, cpu = run([stepcast, "replay", "--json", road, job], out)
                with open(out) as f:
                    doc = docs[road] = json.load(f)
                fold = doc.get("folding")
                into = "%d -> %d" % (fold["ranks"], fold["representatives"]) if fold else "-"
                print("| %d | %.1f | %s | %d | %s | %.2f | %.2f | %.0f | %.3f |" % (
                    ranks, mb, road, doc["graph"]["tasks"], into, dt, cpu, rss / 1e6, doc["mean_abs_error_pct"]))
            worst, mean, mx = compare(docs["--no-fold"], docs["--fold"])
            err = abs(docs["--fold"]["mean_abs_error_pct"] - docs["--no-fold"]["mean_abs_error_pct"])
            alone = [g for g in docs["--fold"]["folding"]["groups"] if SLOW in g["ranks"]]
            rows.append((ranks, worst, mean, mx, err, not alone))
            failed |= max(worst, mean, mx, err) >= 0.5 or bool(alone)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print()
    print("| ranks | folded vs unfolded: worst rank-step % | worst step mean over ranks % | worst step max % | "
          "mean abs error, points apart | straggler kept apart |")
    print("|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print("| %d | %.3f | %.3f | %.3f | %.3f | %s |" % (r[0], r[1], r[2], r[3], r[4], "yes" if r[5] else "NO"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
