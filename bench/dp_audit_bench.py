#!/usr/bin/env python3
"""One training run against many: the one-run DP audit's wall time and ε lower bound
beside a LiRA membership audit's on the same recipe, as a ratio.

The recipe: an MLP 784-128-10 on Fashion-MNIST, momentum SGD (lr 0.05, momentum 0.9),
batch 64, E epochs, one thread everywhere.

  one run  `memaudit run` of a dp_audit: 1000 mislabelled input canaries, each in the
           training set with probability 1/2, one model on the other 9000 examples
           and the included canaries; the (ε, δ = 1e-5) lower bound at 95%
           (docs/audits/dp-audit.md).
  LiRA     `memaudit run` of a membership audit of N models, each on a random half
           of a pool of 19,000 (so each trains on about as many examples as the one
           run), online LiRA; its ε lower bound at each FPR point is
           ln((TPR_low - δ) / FPR_high) from the 95% Clopper-Pearson bounds of the
           operating point (docs/scoring.md), the best over the points.

N doubles from 8 until LiRA's bound reaches the one run's (or --max-models). Printed:
each audit's wall time (median of R repetitions) and ε lower bound, and the ratio
LiRA wall / one-run wall at the smallest N that reaches the one run's bound (the
price of reaching that bound the classical way). Both bounds are lower bounds on the
same training recipe's ε, from different canaries: mislabelled examples for the one
run, natural examples for LiRA.

  /usr/bin/python3 bench/dp_audit_bench.py                 # R = 3, E = 20
  /usr/bin/python3 bench/dp_audit_bench.py --reps 1 --epochs 10 --max-models 16
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DELTA = 1e-5

RECIPE = """  model:
    architecture: mlp
    hidden: [128]
  training:
    optimizer: sgd
    learning_rate: 0.05
    momentum: 0.9
    epochs: {epochs}
    batch_size: 64
"""


def one_run_spec(epochs):
    return ("name: bench-one-run\nseed: 7\nresources: {{threads_per_task: 1}}\n"
            "dp_audit:\n  dataset: {{pool_size: 10000}}\n" + RECIPE +
            "  canaries: 1000\n  canary_type: input\n  delta: {delta}\n").format(
                epochs=epochs, delta=DELTA)


def lira_spec(epochs, models):
    return ("name: bench-lira\nseed: 7\nresources: {{threads_per_task: 1}}\n"
            "membership:\n  dataset: {{pool_size: 19000}}\n" + RECIPE +
            "  reference_models: {models}\n  attacks: [lira_online]\n"
            "  fpr_points: [0.1, 0.01, 0.001]\n").format(epochs=epochs, models=models)


def run(memaudit, spec_text, workdir, name):
    """Runs one audit; returns (wall seconds, results dict)."""
    spec = os.path.join(workdir, name + ".yaml")
    with open(spec, "w") as f:
        f.write(spec_text)
    out = os.path.join(workdir, name)
    start = time.monotonic()
    done = subprocess.run([memaudit, "run", spec, "-w", "1", "--dir", out],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit("memaudit run %s failed (%d):\n%s" % (name, done.returncode, done.stderr[-2000:]))
    with open(os.path.join(out, "results.json")) as f:
        return wall, json.load(f)


def lira_epsilon(results):
    """The best ln((TPR_low - δ) / FPR_high) over the operating points."""
    best = 0.0
    for point in results["attacks"][0].get("operating_points", []):
        tpr_low, fpr_high = point.get("tpr_low", 0.0), point.get("fpr_high", 0.0)
        if fpr_high > 0 and tpr_low > DELTA:
            best = max(best, math.log((tpr_low - DELTA) / fpr_high))
    return best


def median_run(memaudit, spec_text, workdir, name, reps):
    walls, results = [], None
    for r in range(reps):
        wall, results = run(memaudit, spec_text, workdir, "%s-%d" % (name, r))
        walls.append(wall)
    return statistics.median(walls), results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--max-models", type=int, default=64)
    parser.add_argument("--memaudit", default=os.path.join(ROOT, "build", "bin", "memaudit"))
    args = parser.parse_args()
    if not os.path.exists(args.memaudit):
        sys.exit("%s: not built (bash scripts/build.sh)" % args.memaudit)
    with tempfile.TemporaryDirectory(prefix="memaudit-dp-bench-") as workdir:
        one_wall, one = median_run(args.memaudit, one_run_spec(args.epochs), workdir, "one",
                                   args.reps)
        one_eps = one["dp_audit"]["epsilon_lower"]
        print("one run: %6.1f s  epsilon lower bound %.3f  (1000 canaries, delta %g)" %
              (one_wall, one_eps, DELTA))
        models, reached = 8, None  # online LiRA needs at least 6
        while models <= args.max_models:
            wall, results = median_run(args.memaudit, lira_spec(args.epochs, models), workdir,
                                       "lira%d" % models, args.reps)
            eps = lira_epsilon(results)
            print("LiRA, %2d models: %6.1f s  epsilon lower bound %.3f  (%4.1fx the one run's "
                  "wall time)" % (models, wall, eps, wall / one_wall))
            if eps >= one_eps:
                reached = (models, wall)
                break
            models *= 2
        if reached:
            print("ratio: LiRA needs %d models and %.1fx the one run's wall time to reach its "
                  "epsilon lower bound" % (reached[0], reached[1] / one_wall))
        else:
            print("ratio: LiRA at %d models stays below the one run's bound; > %.1fx its wall "
                  "time" % (args.max_models, wall / one_wall))


if __name__ == "__main__":
    main()
