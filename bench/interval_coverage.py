#!/usr/bin/env python3
"""Do the intervals cover a re-run? Runs one membership spec K times with K
different seeds (`memaudit run`, each its own cluster) and, for every
reported metric with an interval (each attack's AUC, balanced accuracy and
TPR at each FPR point), counts the ordered pairs of runs (i, j), i != j,
whose run-j value lies inside run i's interval: the re-run interval the CLI
table prints (scoring/rerun_interval.h) and the sampling interval beside it. A 95% interval that accounts
for everything a re-run changes (training randomness, the data split, the
examples) covers at least about 90% of them; one that accounts only for the
sampling of examples covers less. Prints one line per metric and the
command that reproduces it.

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

TARGET = 0.90


def metrics(results):
    """{metric name: (value, (re-run low, high), (sampling low, high))} of one results JSON."""
    out = {}
    for a in results.get("attacks", []):
        name = a["attack"].lower()
        out[f"{name} AUC"] = (a["auc"], (a.get("auc_rerun_low", 0.0), a.get("auc_rerun_high", 0.0)),
                              (a["auc_low"], a["auc_high"]))
        out[f"{name} balanced accuracy"] = (
            a["balanced_accuracy"],
            (a.get("balanced_accuracy_rerun_low", 0.0), a.get("balanced_accuracy_rerun_high", 0.0)),
            (a["balanced_accuracy_low"], a["balanced_accuracy_high"]))
        for p in a.get("operating_points", []):
            out[f"{name} TPR@{p['fpr_target']:g}"] = (
                p.get("tpr", 0.0), (p.get("tpr_rerun_low", 0.0), p.get("tpr_rerun_high", 0.0)),
                (p.get("tpr_low", 0.0), p.get("tpr_high", 0.0)))
    return out


def coverage(runs, name, which):
    """Share of ordered pairs (i, j), i != j, with run j's value in run i's interval."""
    pairs = list(itertools.permutations(range(len(runs)), 2))
    inside = sum(runs[i][name][which][0] <= runs[j][name][0] <= runs[i][name][which][1]
                 for i, j in pairs)
    return inside / len(pairs)


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
            runs.append(metrics(json.load(open(out))))
            print(f"run {k + 1}/{a.runs} (seed {1000 + k}) done", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{a.spec}: {a.runs} runs, seeds 1000..{999 + a.runs}; coverage = share of ordered "
          f"pairs (i, j) whose run-j value is inside run i's 95% interval (target >= {TARGET:.0%}): "
          "the re-run interval (the CLI table's) and, for comparison, the sampling one")
    print(f"{'metric':44s} {'re-run':>8s} {'width':>7s} {'sampling':>9s} {'width':>7s} {'sd':>7s}")
    below = 0
    for name in runs[0]:
        rerun, sampling = coverage(runs, name, 1), coverage(runs, name, 2)
        values = [r[name][0] for r in runs]
        mean = sum(values) / len(values)
        sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
        width = lambda w: sum(r[name][w][1] - r[name][w][0] for r in runs) / len(runs)
        below += rerun < TARGET
        print(f"{name:44s} {rerun:8.1%} {width(1):7.4f} {sampling:9.1%} {width(2):7.4f} {sd:7.4f}"
              f"{'' if rerun >= TARGET else '  < target'}")
    print(f"{below} of {len(runs[0])} metrics' re-run intervals below the target")
    print(f"reproduce: /usr/bin/python3 bench/interval_coverage.py --runs {a.runs} {a.spec}")


if __name__ == "__main__":
    main()
