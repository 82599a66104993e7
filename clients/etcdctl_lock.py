"""Go's clientv3 concurrency.Mutex, run through the real `etcdctl lock` (etcd-client 3.4.23):
acquire starts `etcdctl --endpoints=... lock --ttl=<ttl_s> <name>` as a child process, which
opens a session (a lease it keeps alive), queues a key <name>/<lease hex> and waits for the keys
before it; when granted it prints that key (then its empty value) and holds the lock until
signalled. The first stdout line within timeout_ms is the grant.

Token: the key's create_revision, from `etcdctl get <key> -w json` (null if that fails or the
key is gone). No validity_ms: the session keeps the lease alive for as long as etcdctl runs.

Release is a signal. etcdctl 3.4.23's lockUntilSignal (etcdctl/ctlv3/command/lock_command.go)
does signal.Notify(sigc, SIGINT, SIGTERM): either one cancels the wait and, once granted, makes
it m.Unlock() (delete its key) and exit 0; the lease is not revoked and lapses after ttl_s.
Measured on 3.4.23 (clients/tests/output/etcdctl_signals.txt): SIGINT and SIGTERM alike delete
the key and exit 0 when held; SIGTERM while waiting deletes the waiter's key and exits 1
("context canceled"); SIGHUP is not handled (exit 129) and leaves the key until the lease ends.
This program sends SIGTERM.

The child matters: it holds the session, so a pause must freeze it too (it is in the client's
container), and it dies with this program (--pdeathsig KILL), as an in-process Mutex would.

Backend: etcd. Reads config.endpoints (all, comma-separated: the Go client fails over);
lock.ttl_ms (rounded up to whole seconds).
Capabilities: session (the child exits with "session expired" once its session's keep-alive
gives up, so lost = the child has exited).
"""
import base64
import json
import queue
import signal
import subprocess
import sys
import threading

from protocol_io import Fail, Info, log, serve, ttl_seconds

OP_TIMEOUT_S = 1.5  # how long release waits for etcdctl to unlock and exit; the get's timeout


class Client:
    def __init__(self, req):
        self.endpoints = ",".join(f"{e['host']}:{e.get('port', 2379)}" for e in req["config"]["endpoints"])
        self.ttl_s = ttl_seconds(req["lock"])
        self.child, self.key, self.last_err, self.err_reader = None, None, "", None

    def etcdctl(self, *args):
        return ["etcdctl", f"--endpoints={self.endpoints}", *args]

    def forward_stderr(self, child):
        for line in child.stderr:
            self.last_err = line.strip()
            log(f"etcdctl[{child.pid}]: {self.last_err}")

    def stop(self, child, grace_s):
        """SIGTERM (unlock or leave the queue), then SIGKILL after grace_s. Returns the exit code."""
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
        try:
            return child.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            return None

    def acquire(self, req):
        if self.child is not None and self.child.poll() is None:
            raise Fail(f"already holding {self.key}")
        self.last_err = ""
        child = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", *self.etcdctl("lock", f"--ttl={self.ttl_s}", req["key"])],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: lines.put(child.stdout.readline()), daemon=True).start()
        self.err_reader = threading.Thread(target=self.forward_stderr, args=(child,), daemon=True)
        self.err_reader.start()
        try:
            line = lines.get(timeout=req["timeout_ms"] / 1000)
        except queue.Empty:
            self.stop(child, 1.0)  # SIGTERM: the Mutex deletes its waiter key
            raise Fail(f"not granted within {req['timeout_ms']} ms")
        if not line:  # stdout closed: etcdctl ended without a grant
            code = child.wait()
            self.err_reader.join(1.0)
            raise Fail(f"etcdctl lock exited with {code}: {self.last_err}")
        self.child, self.key = child, line.strip()
        return {"type": "acquire_ok", "token": self.create_revision(self.key)}

    def create_revision(self, key):
        try:
            out = subprocess.run(self.etcdctl(f"--command-timeout={OP_TIMEOUT_S}s", "get", key, "-w", "json"),
                                 capture_output=True, text=True, timeout=OP_TIMEOUT_S + 1, check=True).stdout
            for kv in json.loads(out).get("kvs", []):
                if base64.b64decode(kv["key"]).decode() == key:
                    return int(kv["create_revision"])
            log(f"{key} is gone already: token null")
        except (subprocess.SubprocessError, ValueError, KeyError, OSError) as e:
            log(f"reading {key}'s create_revision failed ({e}): token null")
        return None

    def held(self, key):
        if self.child is None or not self.key.startswith(key + "/"):
            raise Fail("this client does not hold the lock")
        return self.child

    def release(self, req):
        child = self.held(req["key"])
        self.child = None
        if child.poll() is not None:
            self.err_reader.join(1.0)
            raise Fail(f"etcdctl had exited ({child.returncode}: {self.last_err}): the lock ended with its session")
        code = self.stop(child, OP_TIMEOUT_S)
        self.err_reader.join(1.0)
        if code == 0:
            return {"type": "release_ok"}
        if "session expired" in self.last_err:
            raise Fail(f"the session expired before the unlock (exit {code})")
        raise Info(f"etcdctl did not unlock cleanly (exit {code}: {self.last_err}); killed if it still ran")

    def session_lost(self, req):
        child = self.held(req["key"])
        return {"type": "session_lost_ok", "lost": child.poll() is not None}

    def close(self):
        if self.child is not None:
            self.stop(self.child, OP_TIMEOUT_S)


CURRENT = []  # the Client of the last init, stopped (unlocking) when this program ends


def init(req):
    for old in CURRENT:
        old.close()
    CURRENT[:] = [Client(req)]
    c = CURRENT[0]
    log(f"etcdctl_lock: {req['client']} -> {c.endpoints}, session TTL {c.ttl_s}s")
    return ["session"], {"acquire": c.acquire, "release": c.release, "session_lost": c.session_lost}


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that close() below still runs
    try:
        serve(init)
    finally:
        for c in CURRENT:
            c.close()
