#!/usr/bin/env python3
"""A toy lock client, written from scratch against the protocol (docs/client-protocol.md).

The lock: Redis `SET key token NX PX ttl`, released by a compare-and-delete script, spoken in
raw RESP over a socket (no library), for backend redis-single. No fencing token, no renew.

lockchaos's own tests also use it to misbehave on purpose:
  --crash-after N   exit (status 7) on the N-th request after init, without answering it
  --tamper          at init, try to write the worker's event file and the run folder; say on
                    stderr what happened
  --ticker          start a child process that prints `tick <ns>` to stderr every 100 ms
"""
import json, os, socket, subprocess, sys, time

args = sys.argv[1:]
crash_after = int(args[args.index("--crash-after") + 1]) if "--crash-after" in args else None
RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"


class Redis:
    def __init__(self, host, port, timeout):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = self.sock.makefile("rb")

    def call(self, *words):
        out = b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in (str(x).encode() for x in words))
        self.sock.sendall(out)
        line = self.buf.readline()
        kind, rest = line[:1], line[1:].strip()
        if kind == b"$":
            return None if rest == b"-1" else self.buf.read(int(rest) + 2)[:-2]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        return int(rest) if kind == b":" else rest.decode()


def tamper():
    for path in ["/lockchaos/events.jsonl", "/lockchaos/run/resource.jsonl", "/lockchaos/worker.json"]:
        try:
            with open(path, "a") as f:
                f.write('{"forged": true}\n')
            print(f"tamper: wrote {path}", file=sys.stderr)
        except OSError as e:
            print(f"tamper: {path}: {e.__class__.__name__}", file=sys.stderr)


def answer(req, **fields):
    print(json.dumps({"id": req["id"], **fields}), flush=True)


redis, addr, token, ttl_ms, retry_ms, handled = None, None, None, 2000, 50, 0
for line in sys.stdin:
    req = json.loads(line)
    kind = req["type"]
    if kind != "init":
        handled += 1
        if crash_after is not None and handled >= crash_after:
            sys.exit(7)
    try:
        if kind == "init":
            ttl_ms, retry_ms = req["lock"]["ttl_ms"], req["lock"]["retry_ms"]
            # Connect at the first request, not here: init must not need the backend.
            addr = (req["config"]["host"], req["config"]["port"])
            if "--tamper" in args:
                tamper()
            if "--ticker" in args:
                subprocess.Popen(["sh", "-c", "while :; do echo tick $(date +%s%N) >&2; sleep 0.1; done"])
            answer(req, type="init_ok", capabilities=[])
        elif kind == "acquire":
            redis = redis or Redis(*addr, timeout=2)
            deadline = time.monotonic() + req["timeout_ms"] / 1000
            token = os.urandom(8).hex()
            while True:
                sent = time.monotonic()
                if redis.call("SET", req["key"], token, "NX", "PX", ttl_ms) == "OK":
                    answer(req, type="acquire_ok", token=None, validity_ms=max(0, ttl_ms - int((time.monotonic() - sent) * 1000)))
                    break
                if time.monotonic() >= deadline:
                    answer(req, type="fail", error="lock held by another client")
                    break
                time.sleep(retry_ms / 1000)
        elif kind == "release":
            redis = redis or Redis(*addr, timeout=2)
            gone = redis.call("EVAL", RELEASE, 1, req["key"], token) == 1
            answer(req, type="release_ok") if gone else answer(req, type="fail", error="not ours any more")
        else:
            answer(req, type="fail", error=f"toy_lock has no {kind}")
    except (OSError, RuntimeError) as e:
        # Sent or not, we cannot tell: unknown. Reconnect for the next request.
        answer(req, type="info", error=str(e))
        redis = None
