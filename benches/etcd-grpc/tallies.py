# Per-scenario tallies from two `lockchaos matrix --quiet` logs (before, after): python3 tallies.py BEFORE.log[,...] AFTER.log[,...]
import re, sys
def parse(paths):
    out, cur = {}, None
    for line in (l for p in paths.split(',') for l in open(p)):
        m = re.match(r'== (\S+) ', line)
        if m:
            cur = m.group(1); out[cur] = {'runs': [], 'tally': ''}
            continue
        m = re.match(r'run \d+/\d+: \S+: outcome (\w+) \(expected (\w+)\) — lost updates (\d+), interleaved sections (\d+), accepted writes (\d+), stale writes rejected (\d+)', line)
        if m and cur:
            out[cur]['runs'].append(m.groups())
        elif line.startswith('tally:') and cur:
            out[cur]['tally'] = line.strip()[len('tally: '):]
    return out
b, a = parse(sys.argv[1]), parse(sys.argv[2])
print('| scenario | expected | before: matched, outcomes | after: matched, outcomes | before: lost / accepted, stale rejected | after: lost / accepted, stale rejected |')
print('|---|---|---|---|---|---|')
for s in sorted(set(b) | set(a)):
    def cell(d):
        if s not in d or not d[s]['runs']: return ('-', '-')
        r = d[s]['runs']
        matched = sum(1 for x in r if x[0] == x[1])
        outs = {}
        for x in r: outs[x[0]] = outs.get(x[0], 0) + 1
        o = ', '.join(f'{k} {v}' for k, v in sorted(outs.items()))
        lost = sum(int(x[2]) for x in r); acc = sum(int(x[4]) for x in r); stale = sum(int(x[5]) for x in r)
        return (f'{matched}/{len(r)} ({o})', f'{lost} / {acc}, {stale} (accepted per run: {",".join(x[4] for x in r)})')
    exp = (b.get(s) or a.get(s))['runs'][0][1] if (b.get(s) or a.get(s))['runs'] else '-'
    cb, ca = cell(b), cell(a)
    print(f'| {s} | {exp} | {cb[0]} | {ca[0]} | {cb[1]} | {ca[1]} |')
