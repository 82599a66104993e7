#!/usr/bin/env bash
# How long `lockchaos history` takes, and how much memory, over NIGHTS nights of the whole
# catalog at RUNS runs a scenario (the nightly's shape: 30 nights carried, 3 runs each), and
# `lockchaos check --recheck` over one such night.
#
# A night is made, not run: every shipped scenario's file with a copy of one real run folder's
# results.json, history.jsonl and report.html (TEMPLATE: a finished run folder, e.g. one
# `lockchaos scenario redis-single-baseline --time-limit 2` leaves). The cells' rows and columns
# come from the scenario files, so the page has the catalog's cells; every run reads as the
# template's outcome.
#
# usage: benches/history/nights.sh BIN TEMPLATE_RUN_FOLDER [NIGHTS] [RUNS]
set -euo pipefail
bin=$(realpath "$1")
template=$(realpath "$2")
nights=${3:-30}
runs=${4:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for n in $(seq -w 1 "$nights"); do
  night="$work/nights/2026-11-$n"
  for toml in "$root"/scenarios/*.toml; do
    name=$(basename "$toml" .toml)
    for r in $(seq 1 "$runs"); do
      run="$night/$name/20261101T0000${r}0Z"
      mkdir -p "$run"
      cp "$toml" "$run/scenario.toml"
      cp "$template/results.json" "$template/history.jsonl" "$template/report.html" "$template/run.json" "$run/"
    done
  done
done
folders=$(find "$work/nights" -mindepth 3 -maxdepth 3 -type d | wc -l)
echo "made $nights nights, $folders run folders ($(du -sh "$work/nights" | cut -f1))"

measure() {
  /usr/bin/time -f "%e s wall, %M KiB peak RSS" "$@" >"$work/out" 2>"$work/time" || true
  tail -1 "$work/out"
  tail -1 "$work/time"
}
echo "history over every night:"
measure "$bin" history "$work"/nights/* --store "$work/page"
echo "history.html: $(du -h "$work/page/history.html" | cut -f1)"
echo "check --recheck over one night:"
measure "$bin" check --recheck "$work/nights/2026-11-$(printf %02d 1)"
