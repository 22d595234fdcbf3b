#!/usr/bin/env bash
# Runs each spec with two builds' binaries and checks that the results are
# bit for bit the same (every number; the audit id and the code version
# aside). For a change that must not move any number: build the old commit's
# binaries into one folder and the new one's into another, then
#   scripts/compare-results.sh OLD_BIN_DIR NEW_BIN_DIR [SPEC]...
# (default: examples/quickstart.yaml). Exits 1 at the first difference.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 OLD_BIN_DIR NEW_BIN_DIR [SPEC]..." >&2; exit 2; }
old_bin=$1 new_bin=$2
shift 2
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(examples/quickstart.yaml)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The results JSON without what names the run rather than its numbers.
normalized() {
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in ("audit_id", "from_audit_id", "version")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
print(json.dumps(strip(json.load(open(sys.argv[1]))), sort_keys=True, indent=1))
PY
}

for spec in "${specs[@]}"; do
  name=$(basename "$spec" .yaml)
  for side in old new; do
    bin=$old_bin
    [ "$side" = new ] && bin=$new_bin
    "$bin/memaudit" run "$spec" --dir "$work/$name-$side" --json "$work/$name-$side.json" \
      >"$work/$name-$side.log" 2>&1 || { cat "$work/$name-$side.log"; exit 1; }
    normalized "$work/$name-$side.json" >"$work/$name-$side.norm"
  done
  if diff -q "$work/$name-old.norm" "$work/$name-new.norm" >/dev/null; then
    echo "same: $spec ($(wc -c <"$work/$name-new.norm") bytes of results)"
  else
    diff "$work/$name-old.norm" "$work/$name-new.norm" | head -20
    echo "DIFFERENT: $spec" >&2
    exit 1
  fi
done
