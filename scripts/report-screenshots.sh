#!/usr/bin/env bash
# Regenerates docs/images/report-*.png: runs one small example audit per kind
# with `memaudit run` and screenshots its report.html in headless Chromium.
# Each audit takes seconds to a minute on 2 cores.
#
#   scripts/build.sh && scripts/report-screenshots.sh [KIND...]
#
# KIND: membership, exposure, exposure-sweep, forgetting, unlearning,
# relational (default: all). The run directories are kept under
# memaudit-runs/screenshots-<timestamp>/.
set -euo pipefail
cd "$(dirname "$0")/.."

memaudit=build/bin/memaudit
chromium=${CHROMIUM:-chromium}
size=${SCREENSHOT_SIZE:-1400,1600}  # width,height in px: the report's 70em column fits
if [[ ! -x $memaudit ]]; then
  echo "report-screenshots: $memaudit not found; build first (scripts/build.sh)" >&2
  exit 1
fi
command -v "$chromium" >/dev/null || {
  echo "report-screenshots: $chromium not found (scripts/install-deps.sh installs it)" >&2
  exit 1
}

# kind -> the audit run for it: spec, then memaudit run flags.
declare -A audits=(
  [membership]="examples/quickstart.yaml"
  [exposure]="examples/secret-sharer.yaml"
  [exposure-sweep]="examples/secret-sharer-sweep.yaml"
  [forgetting]="examples/forgetting-inject.yaml --workers 3"
  [unlearning]="examples/unlearning-scratch.yaml"
  [relational]="examples/relational.yaml -w 2"
)
kinds=("$@")
((${#kinds[@]})) || kinds=(membership exposure exposure-sweep forgetting unlearning relational)

runs=memaudit-runs/screenshots-$(date +%Y%m%d-%H%M%S)
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
mkdir -p "$runs" docs/images
for kind in "${kinds[@]}"; do
  [[ -n ${audits[$kind]:-} ]] || {
    echo "report-screenshots: unknown kind $kind (one of: ${!audits[*]})" >&2
    exit 2
  }
  read -r -a args <<<"${audits[$kind]}"
  dir=$runs/$kind
  echo "== $kind: memaudit run ${args[*]}"
  start=$SECONDS
  # A stuck audit ends the script instead of hanging it (SIGTERM stops the
  # local services too).
  timeout "${AUDIT_TIMEOUT:-900}" "$memaudit" run "${args[@]}" --dir "$dir" \
    >"$runs/$kind.out" 2>"$runs/$kind.err" || {
    cat "$runs/$kind.err" >&2
    echo "report-screenshots: memaudit run ${args[*]} failed or timed out" >&2
    exit 1
  }
  png=docs/images/report-$kind.png
  "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile" \
    --window-size="$size" --hide-scrollbars --screenshot="$PWD/$png" \
    "file://$PWD/$dir/report.html" 2>/dev/null
  echo "   $((SECONDS - start)) s, $png"
done
