# Per scenario, across two stores' runs (python3 ops.py BEFORE_STORE[,...] AFTER_STORE[,...]): acquire / release
# results by type (ok, fail = refused, info = unknown) and the median latency of ok acquires (ms).
import json, os, sys, statistics
def scan(stores):
    out = {}
    for store in stores.split(','):
        out.update(scan_one(store))
    return out
def scan_one(store):
    out = {}
    for s in sorted(os.listdir(store)):
        p = os.path.join(store, s)
        if not os.path.isdir(p) or s == 'latest': continue
        c = {}; lat = []
        for run in sorted(os.listdir(p)):
            h = os.path.join(p, run, 'history.jsonl')
            if not os.path.exists(h): continue
            inv = {}
            for line in open(h):
                e = json.loads(line)
                if e['f'] not in ('acquire', 'release'): continue
                if e['type'] == 'invoke': inv[(e['process'], e['f'])] = e['time']; continue
                k = f"{e['f']}.{e['type']}"; c[k] = c.get(k, 0) + 1
                if e['f'] == 'acquire' and e['type'] == 'ok' and (e['process'], 'acquire') in inv:
                    lat.append((e['time'] - inv[(e['process'], 'acquire')]) / 1e6)
        out[s] = (c, statistics.median(lat) if lat else None)
    return out
b, a = scan(sys.argv[1]), scan(sys.argv[2])
print('| scenario | before acquire ok/fail/info | after acquire ok/fail/info | before release ok/fail/info | after release ok/fail/info | median ok-acquire ms before → after |')
print('|---|---|---|---|---|---|')
for s in sorted(set(b) | set(a)):
    def f(d, op):
        if s not in d: return '-'
        c = d[s][0]; return '/'.join(str(c.get(f'{op}.{t}', 0)) for t in ('ok', 'fail', 'info'))
    def m(d):
        return '-' if s not in d or d[s][1] is None else f'{d[s][1]:.1f}'
    print(f'| {s} | {f(b,"acquire")} | {f(a,"acquire")} | {f(b,"release")} | {f(a,"release")} | {m(b)} → {m(a)} |')
