#!/usr/bin/env python3
"""Do the intervals cover a re-run? Runs one spec K times with K different
seeds (`memaudit run`, each its own cluster) and, for every reported metric
with a re-run interval (membership: each attack's AUC, balanced accuracy and
TPR at each FPR point; forgetting: every curve point's means; unlearning:
AUC, DegCount, DegRate; exposure and relational with `replicates` >= 2: the
numbers across replicates), counts the ordered pairs of runs (i, j), i != j,
whose run-j value lies inside run i's interval: the re-run interval the CLI
table prints (docs/scoring.md, "Re-run intervals") and the sampling interval
beside it. A 95% interval that accounts
for everything a re-run changes (training randomness, the data split, the
examples) covers at least about 90% of them; one that accounts only for the
sampling of examples covers less. Prints one line per metric, the mean
coverage, what an exactly calibrated interval would show in as many runs
(simulated: even it leaves some metrics under 90% in a short bench, whose
pairs share runs), and the command that reproduces it.

  /usr/bin/python3 bench/interval_coverage.py [--runs K] [SPEC]
  /usr/bin/python3 bench/interval_coverage.py --runs 8 examples/quickstart.yaml
"""
import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy

TARGET = 0.90
# Student's t 0.975 quantiles for 1..10 degrees of freedom (the prediction
# interval across trials or replicates, scoring/intervals.h).
T975 = [12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
        2.262157, 2.228139]


# Fields that name a list item better than its index.
LABELS = ("attack", "variant", "defense", "feature", "classifier", "metric", "fpr_target",
          "steps_since_injection", "step", "repeats")


def label(item, index):
    if isinstance(item, dict):
        parts = [str(item[k]).lower() for k in LABELS if k in item]
        if parts:
            return "/".join(parts)
    return str(index)


def metrics(results, path="", out=None):
    """{metric path: (value, (re-run low, high), (sampling low, high))} of one results JSON:
    every number the results give a re-run interval, whatever the kind. A TrialMean
    (forgetting trials, exposure or relational replicates) is {mean, low, high,
    rerun_low, rerun_high}; elsewhere a number X has X_rerun_low/high beside X_low/high."""
    out = {} if out is None else out
    if isinstance(results, dict):
        if "mean" in results and "rerun_low" in results:
            out[path] = (results["mean"], (results["rerun_low"], results["rerun_high"]),
                         (results.get("low", 0.0), results.get("high", 0.0)))
            return out
        for key, value in results.items():
            base = key[:-len("_rerun_low")] if key.endswith("_rerun_low") else None
            if base is not None and base in results:
                out[f"{path} {base}".strip()] = (
                    results[base], (value, results[base + "_rerun_high"]),
                    (results.get(base + "_low", 0.0), results.get(base + "_high", 0.0)))
        for key, value in results.items():
            if key != "spec" and isinstance(value, (dict, list)):
                metrics(value, f"{path} {key}".strip(), out)
    elif isinstance(results, list):
        for i, item in enumerate(results):
            metrics(item, f"{path}[{label(item, i)}]", out)
    return out


def coverage(runs, name, which):
    """Share of ordered pairs (i, j), i != j, with run j's value in run i's interval."""
    pairs = list(itertools.permutations(range(len(runs)), 2))
    inside = sum(runs[i][name][which][0] <= runs[j][name][0] <= runs[i][name][which][1]
                 for i, j in pairs)
    return inside / len(pairs)


def calibrated_reference(runs, per_run, benches=4000):
    """What an exactly calibrated 95% re-run interval would show in a bench of `runs` runs:
    (share of metrics at >= TARGET, mean coverage), simulated on normal values. per_run: the
    trials or replicates each run's interval is across (mean +- t * sd * sqrt(2/n), whose
    width varies from run to run); None for a bootstrap interval (fixed width 1.96 * sqrt(2) *
    SE). Even then a bench of few runs shows some metrics below TARGET: its pairs share runs."""
    rng = numpy.random.default_rng(7)
    n = per_run or 1
    values = rng.normal(size=(benches, runs, n))
    means = values.mean(axis=2)
    if per_run is None:
        half = numpy.full(means.shape, 1.959964 * 2 ** 0.5)
    else:
        # Beyond 10 degrees of freedom the 10's quantile: a little wide.
        t = T975[min(n - 1, len(T975)) - 1]
        half = t * values.std(axis=2, ddof=1) * (2 / n) ** 0.5
    inside = numpy.abs(means[:, None, :] - means[:, :, None]) <= half[:, :, None]
    cover = (inside.sum(axis=(1, 2)) - runs) / (runs * (runs - 1))
    return float((cover >= TARGET).mean()), float(cover.mean())


def replicates_of(node):
    """The first `across_replicates.replicates` in a results JSON; None without one."""
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
    if isinstance(node, dict) and isinstance(node.get("across_replicates"), dict):
        return node["across_replicates"].get("replicates")
    return next((n for n in map(replicates_of, children) if n), None)


def per_run_count(results):
    """The trials or replicates (>= 2) a t interval runs across; None for a bootstrap interval."""
    f = results.get("forgetting") or {}
    n = f["trials"] if f.get("trials") and not f.get("construction") else replicates_of(results)
    return int(n) if n and int(n) > 1 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("spec", nargs="?", default="examples/quickstart.yaml")
    ap.add_argument("--runs", type=int, default=8, help="re-runs, each with its own seed (default 8)")
    ap.add_argument("--memaudit", default=os.environ.get("MEMAUDIT_BIN", "build/bin/memaudit"))
    a = ap.parse_args()
    text = open(a.spec).read()
    if not re.search(r"^seed:", text, re.M):
        sys.exit("the spec needs a top-level seed: line")
    work = tempfile.mkdtemp(prefix="memaudit-coverage-")
    runs = []
    try:
        for k in range(a.runs):
            spec = os.path.join(work, f"spec-{k}.yaml")
            with open(spec, "w") as f:
                f.write(re.sub(r"^seed:.*$", f"seed: {1000 + k}", text, count=1, flags=re.M))
            out = os.path.join(work, f"results-{k}.json")
            subprocess.run([a.memaudit, "run", spec, "--dir", os.path.join(work, f"run-{k}"),
                            "--json", out], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            results = json.load(open(out))
            if k == 0:
                per_run = per_run_count(results)  # the spec's, the same in every run
            runs.append(metrics(results))
            print(f"run {k + 1}/{a.runs} (seed {1000 + k}) done", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{a.spec}: {a.runs} runs, seeds 1000..{999 + a.runs}; coverage = share of ordered "
          f"pairs (i, j) whose run-j value is inside run i's 95% interval (target >= {TARGET:.0%}): "
          "the re-run interval (the CLI table's) and, for comparison, the sampling one")
    names = [n for n in runs[0] if all(n in r for r in runs)]
    wide = max([len(n) for n in names] + [6])
    print(f"{'metric':{wide}s} {'re-run':>8s} {'width':>7s} {'sampling':>9s} {'width':>7s} {'sd':>7s}")
    below, covered = 0, 0.0
    for name in names:
        rerun, sampling = coverage(runs, name, 1), coverage(runs, name, 2)
        values = [r[name][0] for r in runs]
        mean = sum(values) / len(values)
        sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
        width = lambda w: sum(r[name][w][1] - r[name][w][0] for r in runs) / len(runs)
        below += rerun < TARGET
        covered += rerun
        print(f"{name:{wide}s} {rerun:8.1%} {width(1):7.4f} {sampling:9.1%} {width(2):7.4f} {sd:7.4f}"
              f"{'' if rerun >= TARGET else '  < target'}")
    print(f"{below} of {len(names)} metrics' re-run intervals below the target; mean coverage "
          f"{covered / len(names):.1%}")
    share, mean = calibrated_reference(a.runs, per_run)
    shape = f"Student's t across {per_run}" if per_run else "fixed width"
    print(f"for comparison, an exactly calibrated 95% interval ({shape}, simulated) shows "
          f">= {TARGET:.0%} for about {share:.0%} of metrics in {a.runs} runs, mean coverage "
          f"{mean:.1%}")
    print(f"reproduce: /usr/bin/python3 bench/interval_coverage.py --runs {a.runs} {a.spec}")


if __name__ == "__main__":
    main()
