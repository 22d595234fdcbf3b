#!/usr/bin/env bash
# The folders' layering: a library source includes only its own folder and
# folders of lower layers, so no folder is both above and below another.
# Tests, test helpers, benchmarks and fuzzers may include anything.
# An audit kind's layer files (audits/<kind>/<layer>*.cc) belong to their
# layer; the rest of a kind's folder (attack tables, signal layouts) sits
# below the spec layer. Prints each include that breaks the order.
set -euo pipefail
cd "$(dirname "$0")/.."

# Lowest first; folders on one line are one layer and may not include each other.
layers=(
  "common/base common/metrics"
  "common/training common/security"
  "common/messages common/rpc data scoring tokenizers"
  "engine audits"
  "spec"
  "services/coordinator services/worker services/scorer cli"
)
declare -A rank
for i in "${!layers[@]}"; do
  for folder in ${layers[$i]}; do rank[$folder]=$i; done
done

# The layer folder a path belongs to ("" when none: generated code, headers
# of other projects).
folder_of() {
  case "$1" in
    audits/*/spec*) echo spec ;;
    audits/*/worker*) echo services/worker ;;
    audits/*/scorer*) echo services/scorer ;;
    audits/*/cli*) echo cli ;;
    audits/*) echo audits ;;
    common/* | services/*) echo "$1" | cut -d/ -f1-2 ;;
    *) echo "$1" | cut -d/ -f1 ;;
  esac
}

status=0
while read -r file; do
  from=$(folder_of "$file")
  [ -n "${rank[$from]:-}" ] || continue
  while read -r include; do
    [ -e "$include" ] || continue
    to=$(folder_of "$include")
    [ "$to" = "$from" ] && continue
    if [ -z "${rank[$to]:-}" ] || [ "${rank[$to]}" -ge "${rank[$from]}" ]; then
      echo "$file includes $include: $from may include only lower layers (scripts/check-layers.sh)"
      status=1
    fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done < <(git ls-files -- '*.cc' '*.h' |
  grep -v -E '(_test\.cc|_fixture\.h)$|^(common/testing|tests|bench|fuzz)/')
exit "$status"
