#!/usr/bin/env bash
# benches/warm-pools/explore-rate.sh BINARY OUT: runs per hour of a 120 s `lockchaos explore`
# campaign (search only: --confirm 0 --shrink-runs 0, seed 7) on the redis-single and etcd
# baselines, cold (--cold) and warm, with --jobs 1 and --jobs 2. One line each in OUT/explore.txt.
B=$(realpath "$1"); out=$(realpath -m "$2"); mkdir -p "$out"
cd "$(dirname "$0")/../.."
for base in redis-single-baseline etcd-baseline; do
  for jobs in 1 2; do
    for m in cold warm; do
      flag=""; [ $m = cold ] && flag=--cold
      st=$out/explore-$base-$m-j$jobs
      start=$(date +%s.%N)
      "$B" explore $base --budget 120 --jobs $jobs --seed 7 --confirm 0 --shrink-runs 0 --store "$st" --quiet $flag > "$st.out" 2>&1
      end=$(date +%s.%N)
      runs=$(find "$st" -name results.json | wc -l)
      echo "$base jobs=$jobs $m runs=$runs wall=$(echo "$end - $start" | bc) runs/h=$(echo "$runs * 3600 / ($end - $start)" | bc)" >> "$out/explore.txt"
    done
  done
done
