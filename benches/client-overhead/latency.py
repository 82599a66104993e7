#!/usr/bin/env python3
"""Lock operations per second and acquire/release latency of the runs in a store.

usage: latency.py STORE   (a store written by `lockchaos scenario ... --store STORE`)
"""
import glob, json, statistics, sys

for results in sorted(glob.glob(f"{sys.argv[1]}/*/*/results.json")):
    run = results.rsplit("/", 1)[0]
    r = json.load(open(results))
    open_at, took = {}, {"acquire": [], "release": []}
    for line in open(f"{run}/history.jsonl"):
        e = json.loads(line)
        if e["f"] in took and e["process"] != "nemesis":
            if e["type"] == "invoke":
                open_at[(e["process"], e["f"])] = e["time"]
            elif e["type"] == "ok" and (e["process"], e["f"]) in open_at:
                took[e["f"]].append((e["time"] - open_at.pop((e["process"], e["f"]))) / 1e6)
    ops = len(took["acquire"]) + len(took["release"])
    secs = r["time_limit_secs"]
    print(f"{r['scenario']}: {ops / secs:.0f} lock ops/s; acquire median {statistics.median(took['acquire']):.2f} ms, "
          f"release median {statistics.median(took['release']):.2f} ms ({len(took['acquire'])} rounds in {secs} s)")
