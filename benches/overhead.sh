#!/usr/bin/env bash
# benches/overhead.sh BINARY STORE [SCENARIOS...]: 3 runs of each baseline at --time-limit 1; prints
# each run's overhead (results.json duration minus the time limit) and the per-stage medians
# from run.json's stages.
set -u
bin=$(realpath "$1"); store=$(realpath -m "$2"); shift 2
scen=${*:-redis-single-baseline redlock-baseline etcd-baseline postgres-session-baseline}
cd "$(dirname "$0")/.."
for s in $scen; do
  "$bin" scenario "$s" --time-limit 1 --test-count 3 --store "$store" --quiet >/dev/null 2>&1
done
python3 - "$store" <<'PY'
import json,glob,sys,statistics as st
store=sys.argv[1]
by={}
for f in sorted(glob.glob(store+'/*/*/run.json')):
    d=json.load(open(f)); sc=f.split('/')[-3]
    stages={x['stage']:x['secs'] for x in d['stages']}
    over=sum(v for k,v in stages.items() if k not in ('clients','workload'))
    try:
        r=json.load(open(f.replace('run.json','results.json'))); over=r['duration_secs']-r['time_limit_secs']
    except Exception: pass
    by.setdefault(sc,[]).append((over,stages))
for sc,runs in by.items():
    med=lambda k: st.median([r[1].get(k,0) for r in runs])
    print(f"{sc}: overhead median {st.median([r[0] for r in runs]):.2f} ({', '.join(f'{r[0]:.2f}' for r in runs)}) | " + ' '.join(f"{k} {med(k):.2f}" for k in ['image','provision','backend','stop','teardown','check','report']))
PY
