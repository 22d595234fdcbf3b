#!/usr/bin/env bash
# The GPU examples (examples/gpu/) are valid specs, one of every audit kind,
# against the data examples/gpu/make-data.py writes: what scripts/gpu-check.sh
# runs on a GPU machine, checked here without one.
#   tests/gpu_examples_test.sh PYTHON SOURCE_DIR BIN_DIR
set -euo pipefail
python=$1 src=$2 bin=$3
data=/tmp/memaudit-gpu-data
"$python" "$src/examples/gpu/make-data.py" "$data" >/dev/null
kinds=()
for spec in "$src"/examples/gpu/*.yaml; do
  line=$("$bin/memaudit" validate "$spec" --data-root "$data")
  echo "$line"
  kinds+=("$(echo "$line" | sed -n 's/.*: valid \([a-z_]*\) audit$/\1/p')")
done
every=$(printf '%s\n' "${kinds[@]}" | sort -u | grep -c .)
echo "kinds: $every (${kinds[*]})"
[ "$every" -eq 6 ] || { echo "want one example of each of the 6 kinds" >&2; exit 1; }
