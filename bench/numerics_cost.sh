#!/usr/bin/env bash
# What portable numerics cost: the same audit with resources.numerics
# portable (the default: LibTorch, oneDNN and OpenBLAS pinned to their AVX2
# kernels) and native (the machine's fastest kernels), interleaved run by run
# so machine load hits both alike. Training time = first lease to last task
# success (coordinator events); `memaudit run`'s wall time is printed too.
# Prints every run, then the medians and native's speed-up over portable.
#
#   bench/numerics_cost.sh [SPEC] [REPS]
#   bench/numerics_cost.sh examples/quickstart.yaml 5
set -euo pipefail
spec=${1:-examples/quickstart.yaml}
reps=${2:-5}
bin=${MEMAUDIT_BIN:-build/bin/memaudit}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for ((rep = 1; rep <= reps; rep++)); do
  for mode in portable native; do
    sed -e '/^  numerics:/d' -e "s/^resources:\$/resources:\n  numerics: $mode/" "$spec" \
      >"$tmp/spec.yaml"
    grep -q "^  numerics: $mode\$" "$tmp/spec.yaml" || {
      echo "the spec needs a top-level 'resources:' block" >&2
      exit 1
    }
    dir="$tmp/run-$mode-$rep"
    start=$(date +%s.%N)
    "$bin" run "$tmp/spec.yaml" --dir "$dir" >"$tmp/log" 2>&1 || {
      cat "$tmp/log" >&2
      exit 1
    }
    end=$(date +%s.%N)
    /usr/bin/python3 - "$dir/coordinator.db" "$mode" "$rep" "$start" "$end" <<'PY' | tee -a "$tmp/runs.tsv"
import sqlite3, sys
db, mode, rep, start, end = sys.argv[1:]
con = sqlite3.connect(db)
first = con.execute("select min(unix_ms) from events where type = 'task_leased'").fetchone()[0]
last = con.execute("select max(unix_ms) from events where type = 'task_succeeded'").fetchone()[0]
print(f"{mode}\t{rep}\t{(last - first) / 1000:.2f}\t{float(end) - float(start):.2f}")
PY
  done
done

/usr/bin/python3 - "$tmp/runs.tsv" "$spec" <<'PY'
import statistics, sys
runs, spec = sys.argv[1:]
rows = [line.split("\t") for line in open(runs).read().splitlines()]
med = {m: (statistics.median(float(r[2]) for r in rows if r[0] == m),
           statistics.median(float(r[3]) for r in rows if r[0] == m)) for m in ("portable", "native")}
print(f"\n{spec}: median over {len(rows) // 2} runs (mode, training s, end-to-end s)")
for m, (train, wall) in med.items():
    print(f"{m:9s} {train:8.2f} {wall:8.2f}")
print(f"native / portable training time: {med['native'][0] / med['portable'][0]:.3f} "
      f"(portable costs {100 * (med['portable'][0] / med['native'][0] - 1):+.1f}%)")
PY
