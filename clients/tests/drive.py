"""Drives two instances of a client program through the protocol (docs/client-protocol.md) and
checks their answers: A acquires, B's short acquire fails, A releases, B acquires; with
`transactional` a read / write-commit round each; with `renew` / `session` one call each; an
unknown request and a release of nothing are refused. Options add an expiry phase (hold past
the TTL, then release) and a pause phase (docker pause a server container the run created).

  /usr/bin/python3 clients/tests/drive.py clients/redis_article.py --backend redis-single \
      --config '{"host": "172.18.0.2", "port": 6379}' [--lock '{"ttl_ms": 2000}'] [--expire]

Programs run as in lockchaos: `python3 clients/x.py` from the parent of clients/, as user
nobody when the driver runs as root; their stderr goes to /tmp/refc-drive/<program>-<A|B>.log.
Ends with "N passed, N failed"; exit code 1 when a check failed.
"""
import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCK = {"ttl_ms": 2000, "acquire_timeout_ms": 5000, "retry_ms": 50, "node_timeout_ms": 100, "drift_factor": 0.01, "renew_ms": 0}
START = time.monotonic()
RESULTS = [0, 0]


def stamp():
    return f"{(time.monotonic() - START) * 1000:8.0f}ms"


class Program:
    def __init__(self, name, args, process):
        self.name, self.process, self.next_id = name, process, 0
        os.makedirs("/tmp/refc-drive", exist_ok=True)
        self.logpath = f"/tmp/refc-drive/{os.path.basename(args.program)}-{name}.log"
        cmd = [args.python, args.program]
        if os.geteuid() == 0 and not args.as_root:
            os.chmod("/tmp/refc-drive", 0o1777)
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + cmd
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        self.p = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(self.logpath, "w"), text=True, bufsize=1, env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.p.stdout:
            self.lines.put(line)

    def ask(self, kind, wait_s=10, **fields):
        rid, self.next_id = self.next_id, self.next_id + 1
        req = {"id": rid, "type": kind, **fields}
        print(f"{stamp()} {self.name} -> {json.dumps(req)}", flush=True)
        sent = time.monotonic()
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        try:
            line = self.lines.get(timeout=wait_s)
        except queue.Empty:
            line = "null"
        took = (time.monotonic() - sent) * 1000
        print(f"{stamp()} {self.name} <- {line.strip()}   ({took:.0f} ms)", flush=True)
        resp = json.loads(line) or {}
        if resp and resp.get("id") != rid:
            check(False, f"answer carries id {resp.get('id')}, asked {rid}")
        return resp

    def children(self):
        """The program's child processes (pid and command), e.g. etcdctl."""
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                if ppid == self.p.pid or (ppid in [int(c[0]) for c in out]):
                    with open(f"/proc/{pid}/cmdline") as f:
                        out.append((pid, f.read().replace("\0", " ").strip()))
            except (OSError, IndexError, ValueError):
                pass
        return [c for c in out if "python" not in c[1]]


def check(ok, what):
    RESULTS[0 if ok else 1] += 1
    print(f"{'  ok  ' if ok else '  FAIL'} {what}", flush=True)
    return ok


def expect(resp, kind, what):
    return check(resp.get("type") == kind, f"{what}: {kind} (got {resp.get('type')})")


def tx_round(prog, key, expect_value=None):
    r = prog.ask("tx_read", key=key, client=prog.process, time_ns=time.time_ns())
    if expect(r, "tx_read_ok", f"{prog.name} reads in its transaction") and expect_value is not None:
        check(r["value"] == expect_value, f"{prog.name} reads {expect_value}, the value the last commit wrote")
    value = r.get("value", 0) + 1
    expect(prog.ask("tx_write_commit", key=key, value=value, client=prog.process, time_ns=time.time_ns()),
           "tx_write_commit_ok", f"{prog.name} writes {value} and commits")
    return value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("program")
    ap.add_argument("--backend", required=True)
    ap.add_argument("--config", required=True, help="init's config, JSON")
    ap.add_argument("--lock", default="{}", help="init's lock fields over the defaults, JSON")
    ap.add_argument("--key", default="ledger")
    ap.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3")
    ap.add_argument("--as-root", action="store_true", help="do not drop to user nobody")
    ap.add_argument("--expire", action="store_true", help="hold past the TTL: session_lost true, release fail")
    ap.add_argument("--pause", metavar="CONTAINER:SECONDS", help="docker pause a server while A holds")
    ap.add_argument("--pause-keeps-lock", action="store_true", help="the lock outlives the pause (no expiry)")
    args = ap.parse_args()
    lock = {**LOCK, **json.loads(args.lock)}
    ttl_s, key = lock["ttl_ms"] / 1000, args.key
    a, b = Program("A", args, 1), Program("B", args, 2)
    caps = {}
    for prog in (a, b):
        r = prog.ask("init", client=f"client-{prog.process}", process=prog.process, backend=args.backend,
                     config=json.loads(args.config), lock=lock)
        expect(r, "init_ok", f"{prog.name} init")
        caps = set(r.get("capabilities", []))
    tx = "transactional" in caps

    print(f"--- contention (capabilities {sorted(caps)})")
    ra = a.ask("acquire", key=key, timeout_ms=3000)
    expect(ra, "acquire_ok", "A acquires the free lock")
    kids = a.children()
    if kids:
        print(f"         A's child processes while holding: {kids}")
    t0 = time.monotonic()
    expect(b.ask("acquire", key=key, timeout_ms=600), "fail", "B's 600 ms acquire fails while A holds")
    check(time.monotonic() - t0 >= 0.5, "B waited about its timeout before failing")
    if "renew" in caps:
        expect(a.ask("renew", key=key), "renew_ok", "A renews")
    if "session" in caps:
        r = a.ask("session_lost", key=key)
        expect(r, "session_lost_ok", "A asks about its session") and check(r["lost"] is False, "A's session is not lost")
    value = tx_round(a, key) if tx else None
    expect(a.ask("release", key=key), "release_ok", "A releases")
    rb = b.ask("acquire", key=key, timeout_ms=3000)
    expect(rb, "acquire_ok", "B acquires after A's release")
    if ra.get("token") is not None and rb.get("token") is not None:
        check(rb["token"] > ra["token"], f"B's token {rb['token']} is above A's {ra['token']}")
    if tx:
        tx_round(b, key, expect_value=value)
    expect(b.ask("release", key=key), "release_ok", "B releases")
    expect(a.ask("release", key=key), "fail", "A's second release: nothing held")
    expect(a.ask("frobnicate", key=key), "fail", "an unknown request is refused")

    if args.expire:
        print(f"--- expiry: A holds past the TTL ({ttl_s}s)")
        expect(a.ask("acquire", key=key, timeout_ms=3000), "acquire_ok", "A acquires")
        time.sleep(ttl_s + 1.5)
        if "session" in caps:
            r = a.ask("session_lost", key=key)
            expect(r, "session_lost_ok", "A asks about its session") and check(r["lost"] is True, "A's session is lost")
        if "renew" in caps:
            expect(a.ask("renew", key=key), "fail", "A's renew after expiry fails")
        if tx:
            expect(a.ask("tx_write_commit", key=key, value=-1, client=1, time_ns=time.time_ns()), "fail",
                   "A's commit after the idle-in-transaction timeout fails")
        expect(a.ask("release", key=key), "release_ok" if tx else "fail", "A's release after expiry")
        expect(b.ask("acquire", key=key, timeout_ms=3000), "acquire_ok", "B acquires")
        expect(b.ask("release", key=key), "release_ok", "B releases")

    if args.pause:
        container, seconds = args.pause.rsplit(":", 1)
        print(f"--- pause: {container} frozen {seconds}s while A holds")
        expect(a.ask("acquire", key=key, timeout_ms=3000), "acquire_ok", "A acquires")
        subprocess.run(["docker", "pause", container], check=True)
        r = b.ask("acquire", key=key, timeout_ms=1000)
        check(r.get("type") in ("fail", "info"), f"B's acquire during the pause is not ok (got {r.get('type')})")
        if tx:
            expect(a.ask("tx_read", key=key, client=1, time_ns=time.time_ns()), "fail",
                   "A's read during the pause gets no answer: fail (it cannot commit now)")
        time.sleep(float(seconds))
        if "session" in caps:
            r = a.ask("session_lost", key=key)
            check(r.get("type") == "info" or r.get("lost") is True,
                  f"A is not told its session is fine during the pause (got {r.get('type')}, lost {r.get('lost')})")
        subprocess.run(["docker", "unpause", container], check=True)
        if tx:
            expect(a.ask("tx_write_commit", key=key, value=-2, client=1, time_ns=time.time_ns()), "fail",
                   "A's commit after the pause (longer than the idle-in-transaction timeout) fails")
        r = a.ask("release", key=key)
        if tx:
            expect(r, "release_ok", "A's release: nothing left to hold")
        elif args.pause_keeps_lock:
            expect(r, "release_ok", "A still held its lock after the pause, and releases it")
        else:
            check(r.get("type") in ("fail", "info"), f"A's release after losing its grant is not ok (got {r.get('type')})")
        expect(b.ask("acquire", key=key, timeout_ms=3000), "acquire_ok", "B acquires")
        expect(b.ask("release", key=key), "release_ok", "B releases")

    for prog in (a, b):
        prog.p.stdin.close()
        check(prog.p.wait(timeout=10) == 0, f"{prog.name} exits 0 when stdin closes")
    print(f"{RESULTS[0]} passed, {RESULTS[1]} failed")
    sys.exit(1 if RESULTS[1] else 0)


if __name__ == "__main__":
    main()
