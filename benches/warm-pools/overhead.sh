#!/usr/bin/env bash
# benches/warm-pools/overhead.sh BINARY STORE cold|warm SCENARIO...: `lockchaos scenario S --time-limit 1
# --test-count 10` (with --cold for cold) for each scenario; prints the median overhead (duration minus
# the time limit) of runs 2..10, the first run apart (a warm series builds its pool then), the
# stages' medians, the outcomes and how many runs fell back to cold nodes (run.json nodes).
bin=$1; store=$2; mode=$3; shift 3
flag=""; [ "$mode" = cold ] && flag="--cold"
for s in "$@"; do "$bin" scenario "$s" --time-limit 1 --test-count 10 --store "$store" --quiet $flag >/dev/null 2>&1; done
python3 - "$store" <<'PY'
import json,glob,sys,statistics as st
by={}
for f in sorted(glob.glob(sys.argv[1]+'/*/*/run.json')):
    d=json.load(open(f)); sc=f.split('/')[-3]
    r=json.load(open(f.replace('run.json','results.json')))
    stages={x['stage']:x['secs'] for x in d['stages']}
    by.setdefault(sc,[]).append((r['duration_secs']-r['time_limit_secs'], stages, d.get('nodes',{}), r['outcome']))
for sc,runs in by.items():
    med=lambda k: st.median([x[1].get(k,0) for x in runs[1:]])
    outs={}
    for x in runs: outs[x[3]]=outs.get(x[3],0)+1
    cold=[x[2].get('built_cold_because') for x in runs if x[2].get('built_cold_because')]
    print(f"{sc}: runs {len(runs)} overhead median (runs 2..) {st.median([x[0] for x in runs[1:]]):.2f} first {runs[0][0]:.2f} | "+' '.join(f"{k} {med(k):.2f}" for k in ['provision','backend','stop','teardown','check','report'])+f" | {outs} cold-fallbacks {len(cold)} {cold[:1]}")
PY
