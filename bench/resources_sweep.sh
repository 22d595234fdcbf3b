#!/usr/bin/env bash
# Training time of one audit for several values of one `resources` field,
# interleaved value by value so machine load hits all of them alike.
# Training time = first lease to last task success (coordinator events), so
# process start-up and scoring are left out; the end-to-end wall time of
# `memaudit run` is printed too. Prints every run, then the medians and the
# speed-up of each value against the first one (the baseline).
#
#   bench/resources_sweep.sh FIELD [SPEC] [REPS] [VALUES...]
#   bench/resources_sweep.sh models_per_task examples/quickstart.yaml 5 1 4 8
#   bench/resources_sweep.sh numerics examples/quickstart.yaml 5 portable native
set -euo pipefail
field=${1:?usage: bench/resources_sweep.sh FIELD [SPEC] [REPS] [VALUES...]}
spec=${2:-examples/quickstart.yaml}
reps=${3:-5}
shift $(($# < 3 ? $# : 3))
values=("$@")
[[ ${#values[@]} -gt 0 ]] || values=(1 4)
bin=${MEMAUDIT_BIN:-build/bin/memaudit}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for ((rep = 1; rep <= reps; rep++)); do
  for p in "${values[@]}"; do
    # The spec with the field set (replacing any value it has).
    sed -e "/^  $field:/d" -e "s/^resources:\$/resources:\n  $field: $p/" \
      "$spec" >"$tmp/spec.yaml"
    grep -q "^  $field: $p\$" "$tmp/spec.yaml" || {
      echo "the spec needs a top-level 'resources:' block" >&2
      exit 1
    }
    dir="$tmp/run-$p-$rep"
    start=$(date +%s.%N)
    "$bin" run "$tmp/spec.yaml" --dir "$dir" >"$tmp/log" 2>&1 || {
      cat "$tmp/log" >&2
      exit 1
    }
    end=$(date +%s.%N)
    python3 - "$dir/coordinator.db" "$p" "$rep" "$start" "$end" <<'EOF' | tee -a "$tmp/runs.tsv"
import sqlite3, sys
db, p, rep, start, end = sys.argv[1:]
con = sqlite3.connect(db)
first = con.execute("select min(unix_ms) from events where type = 'task_leased'").fetchone()[0]
last = con.execute("select max(unix_ms) from events where type = 'task_succeeded'").fetchone()[0]
print(f"{p}\t{rep}\t{(last - first) / 1000:.2f}\t{float(end) - float(start):.2f}")
EOF
  done
done

python3 - "$tmp/runs.tsv" "$spec" "$field" <<'EOF'
import re, statistics, sys
runs, spec, field = sys.argv[1:]
found = re.search(r"^\s*reference_models:\s*(\d+)", open(spec).read(), re.M)
models = int(found.group(1)) if found else 0
rows = [line.split("\t") for line in open(runs).read().splitlines()]
print(f"\n{spec}: {models or 'no reference'} models; median over {max(int(r[1]) for r in rows)} "
      f"runs ({field}, training s, models/h, end-to-end s, training range s, "
      "speed-up vs the first value)")
baseline = None
for p in dict.fromkeys(r[0] for r in rows):
    train = [float(r[2]) for r in rows if r[0] == p]
    wall = [float(r[3]) for r in rows if r[0] == p]
    t = statistics.median(train)
    baseline = baseline or t
    per_hour = f"{models * 3600 / t:.0f}" if models else "-"
    print(f"{p}\t{t:.2f}\t{per_hour}\t{statistics.median(wall):.2f}\t"
          f"{min(train):.2f}-{max(train):.2f}\t{baseline / t:.2f}x")
EOF
