#!/usr/bin/env bash
# benches/explore.sh BINARY STORE CAP_SECS SEEDS BASES...: guided against random. For each base,
# seed and strategy, one `lockchaos explore` stopped at its first finding (no shrinking, no
# confirmation) or at CAP_SECS; two searches at a time (the machine's two cores). Prints, per
# search, the search runs and seconds to the first failure (or "cap"), then a table per base.
#   benches/explore.sh target/release/lockchaos /tmp/bench-explore 900 "1 2 3" \
#     redis-single-baseline etcd-baseline scenarios/bases/redis-py-lock-no-timeout.toml
set -u
bin=$(realpath "$1"); store=$(realpath -m "$2"); cap=$3; seeds=$4; shift 4
cd "$(dirname "$0")/.."
mkdir -p "$store"
one() { # base seed strategy
  local name; name=$(basename "$1" .toml)
  local out="$store/$name-$3-$2"
  CI=true "$bin" explore "$1" --seed "$2" --strategy "$3" --budget "$cap" --max-findings 1 \
    --shrink-runs 0 --confirm 0 --store "$out" --quiet >"$out.log" 2>&1
}
jobs=()
for base in "$@"; do for seed in $seeds; do for strategy in guided random; do
  jobs+=("$base $seed $strategy")
done; done; done
running=0
for j in "${jobs[@]}"; do
  one $j &
  running=$((running + 1))
  if [ "$running" -ge 2 ]; then wait -n; running=$((running - 1)); fi
done
wait
python3 - "$store" <<'PY'
import json, glob, sys, statistics as st
store = sys.argv[1]
rows = {}
for f in sorted(glob.glob(store + '/*/explore/*/explore.json')):
    d = json.load(open(f))
    found = d['found'][0] if d['found'] else None
    key = (d['scenario'], d['strategy'])
    r = (d['seed'], found['runs_to_find'] if found else None, found['seconds_to_find'] if found else None, d['runs'], d['elapsed_s'], found['property'] if found else '-')
    rows.setdefault(key, []).append(r)
    print(f"{d['scenario']} {d['strategy']} seed {d['seed']}: " + (f"{found['property']} in run {found['runs_to_find']} after {found['seconds_to_find']:.0f} s" if found else f"cap ({d['runs']} runs, {d['elapsed_s']:.0f} s)"))
print()
print("| base | strategy | seeds | found | runs to first failure | seconds to first failure | capped |")
print("|---|---|---|---|---|---|---|")
for (sc, strat), rs in sorted(rows.items()):
    hit = [r for r in rs if r[1] is not None]
    runs = ', '.join(str(r[1]) if r[1] is not None else 'cap' for r in sorted(rs))
    secs = ', '.join(f"{r[2]:.0f}" if r[2] is not None else 'cap' for r in sorted(rs))
    props = sorted({r[5] for r in hit})
    print(f"| {sc} | {strat} | {len(rs)} | {', '.join(props) or '-'} | {runs} | {secs} | {len(rs) - len(hit)} |")
PY
