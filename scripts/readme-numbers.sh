#!/usr/bin/env bash
# Prints README.md's quickstart block: `memaudit run examples/quickstart.yaml`
# as a terminal shows it once the audit ends (the progress bar in its last
# state), then the machine it ran on. The numbers depend only on the spec and
# its seed, not on the machine or the number of workers; the progress line's
# timings and the run directory are this run's.
#
#   scripts/build.sh && scripts/readme-numbers.sh [memaudit run flags, e.g. -w 3]
set -euo pipefail
cd "$(dirname "$0")/.."

memaudit=build/bin/memaudit
if [[ ! -x $memaudit ]]; then
  echo "readme-numbers: $memaudit not found; build first (scripts/build.sh)" >&2
  exit 1
fi
shown="$memaudit run examples/quickstart.yaml${*:+ $*}"
command=$(printf '%q ' "$memaudit" run examples/quickstart.yaml "$@")

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Under a pseudo-terminal, so memaudit draws its progress bar as in a terminal
# (redrawn in place after \r): what stays on screen is each line's text after
# its last \r.
if ! script --quiet --return --command "$command" /dev/null </dev/null >"$log"; then
  tr -d '\r' <"$log" >&2
  echo "readme-numbers: the quickstart audit failed" >&2
  exit 1
fi

echo "\$ $shown"
awk '{
  sub(/\r$/, "")
  n = split($0, parts, "\r")
  line = parts[n]
  gsub(/\033\[K/, "", line)
  sub(/ +$/, "", line)
  print line
}' "$log"

cpu=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)
os=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-}")
echo
echo "machine: ${cpu:-unknown CPU}, $(nproc) cores${os:+, $os}"
echo "version: $("$memaudit" --version)"
