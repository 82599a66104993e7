#!/usr/bin/env bash
# keep-night.sh NIGHTS_DIR NIGHT_NAME SHARD_STORE...
#
# Files tonight's runs as one store, NIGHTS_DIR/NIGHT_NAME/<scenario>/<run>/, for the history
# that the nightly workflow carries from night to night (`lockchaos history NIGHTS_DIR/*`), then
# prunes NIGHTS_DIR to the newest KEEP_NIGHTS nights.
#
# From each shard store it takes every run folder, STORE/<scenario>/<run> exactly two levels
# deep (as harness::run_store::run_folders finds them), that holds a results.json, and of it only
# what the history and a later `lockchaos check --recheck` read: results.json, scenario.toml,
# run.json, history.jsonl and report.html. Not logs/, not the parties' event files
# (workers/*.jsonl, resource.jsonl, nemesis.jsonl): history.jsonl already holds their events
# merged, and both stay in the night's shard artifacts. Only regular files and real folders are
# taken: a symlink, whether to a file, a run folder or a scenario folder, is never followed, so
# nothing outside a shard store gets into the history.
#
# Night names start with their date, YYYY-MM-DD (the workflow names a night
# `$(date -u +%F)-<run id>`), so name order is time order: `lockchaos history` takes the nights
# oldest first in that order, and pruning drops the first names.
#
# Prints one line per pruned night and "kept N runs of NIGHT_NAME (SIZE)". Exit 1, with one line
# saying why and nothing filed, when NIGHT_NAME is no night's name (a path, `..`, no date first),
# already exists or would sort before a night already kept, or when no shard store holds a run
# with a results.json; 2 on a usage error.
set -euo pipefail

# How many nights the history keeps. The nights travel in GitHub's Actions cache, which holds
# 10 GB per repository, and every night saves a new entry (a cache key cannot be overwritten)
# that stays until 7 days go by without its being used, so about 8 entries of the whole history
# are stored at once, beside Swatinem/rust-cache's. No real store was at hand to measure
# (/work/main/store and results/ hold none; a run needs Docker and the node image), so the
# figure is an estimate from the files' kinds: report.html rendered by reports::run_report and
# history.jsonl serialised from histories shaped like the catalog's runs (sections of work_ms
# over time_limit_secs) measure 76 KB for a 25 s run with 1 s sections (25 KB history, 45 KB
# report), 310 KB for a 20 s baseline with 100 ms sections and about 600 KB for the 120 s
# Jepsen-style runs, results.json 3 KB; over the 103 scenarios of the catalog that comes to
# about 160 KB a run, so 3 runs of each scenario are about 50 MB a night and 30 nights 1.5 GB,
# about 110 MB compressed (zstd packed those files 14 to 1; a real history is less regular, so
# count on 10 to 1: 150 MB). Eight entries of that is about 1.2 GB of the 10 GB.
# KEEP_NIGHTS in the environment overrides it (the tests use a few).
keep_nights="${KEEP_NIGHTS:-30}"

# What a run folder keeps: the files the history and a recheck read.
kept_files=(results.json scenario.toml run.json history.jsonl report.html)

refuse() {
  echo "keep-night: $*" >&2
  exit 1
}

if (($# < 3)); then
  echo "usage: keep-night.sh NIGHTS_DIR NIGHT_NAME SHARD_STORE..." >&2
  exit 2
fi
[[ $keep_nights =~ ^[1-9][0-9]*$ ]] || {
  echo "keep-night: KEEP_NIGHTS must be a whole number of nights, 1 or more, not '$keep_nights'" >&2
  exit 2
}
nights_dir=$1
night=$2
shift 2

# The night's name: one folder name that starts with its date.
[[ $night != */* ]] || refuse "refusing night '$night': a night's name is one folder name, not a path"
[[ $night != *..* ]] || refuse "refusing night '$night': a night's name must not contain '..'"
[[ $night =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}[A-Za-z0-9._-]*$ ]] ||
  refuse "refusing night '$night': a night's name starts with its date, YYYY-MM-DD, then letters, digits, '.', '_' or '-'"
for shard in "$@"; do
  [[ -d $shard ]] || refuse "no shard store at '$shard'"
done

mkdir -p -- "$nights_dir"
[[ ! -e $nights_dir/$night && ! -L $nights_dir/$night ]] || refuse "refusing night '$night': $nights_dir/$night already exists"

# The nights kept, oldest first (their names' order, byte by byte).
nights_kept() {
  find "$nights_dir" -mindepth 1 -maxdepth 1 -type d -name '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' -printf '%f\n' | LC_ALL=C sort
}
newest=$(nights_kept | tail -n 1)
if [[ -n $newest ]] && [[ $(printf '%s\n%s\n' "$newest" "$night" | LC_ALL=C sort | tail -n 1) != "$night" ]]; then
  refuse "refusing night '$night': it sorts before '$newest', the newest night kept, and name order is time order"
fi

# Copied into a hidden folder first and renamed at the end, so a step cut short leaves no half
# night among the nights (a hidden one left by an earlier cut is removed here).
find "$nights_dir" -mindepth 1 -maxdepth 1 -name '.incoming-*' -exec rm -rf -- {} +
incoming="$nights_dir/.incoming-$night"
trap 'rm -rf -- "$incoming"' EXIT
mkdir -- "$incoming"

runs=0
for shard in "$@"; do
  # -H: the shard store named may itself be a link; nothing under it is followed. -type d leaves
  # out links to folders, at either level.
  while IFS= read -r -d '' rel; do
    run="$shard/$rel"
    scenario=${rel%%/*}
    name=${rel#*/}
    if [[ -z $(find "$run" -mindepth 1 -maxdepth 1 -type f -name results.json) ]]; then
      echo "keep-night: left out $run: no results.json" >&2
      continue
    fi
    # Two shards can start a scenario's runs in the same second: the later one gets -2, -3, ...
    # as two runs of one store do.
    out=$name
    n=1
    while [[ -e $incoming/$scenario/$out ]]; do
      n=$((n + 1))
      out="$name-$n"
    done
    mkdir -p -- "$incoming/$scenario/$out"
    for file in "${kept_files[@]}"; do
      find "$run" -mindepth 1 -maxdepth 1 -type f -name "$file" -exec cp -p -- {} "$incoming/$scenario/$out/" \;
    done
    runs=$((runs + 1))
  done < <(find -H "$shard" -mindepth 2 -maxdepth 2 -type d -printf '%P\0' | LC_ALL=C sort -z)
done
# A night with no run is not filed: it would push a real night out and stand as "tonight" with
# nothing to say.
((runs > 0)) || refuse "refusing night '$night': no run folder with a results.json in $*"

mv -- "$incoming" "$nights_dir/$night"
trap - EXIT
size=$(du -sh -- "$nights_dir/$night" | cut -f1)

# Prune to the newest keep_nights nights.
mapfile -t all < <(nights_kept)
if ((${#all[@]} > keep_nights)); then
  for old in "${all[@]:0:${#all[@]}-keep_nights}"; do
    rm -rf -- "${nights_dir:?}/$old"
    echo "pruned night $old"
  done
fi
if ((runs == 1)); then
  echo "kept 1 run of $night ($size)"
else
  echo "kept $runs runs of $night ($size)"
fi
