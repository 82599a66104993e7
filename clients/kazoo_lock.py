"""kazoo's Lock (kazoo 2.10.0 from PyPI, in this client's environment): ZooKeeper's lock recipe as
a Python service takes it, KazooClient(hosts, timeout=ttl).Lock("/lockchaos/<key>", client):
an ephemeral sequential znode under the lock path, a watch on the one ahead; acquire(timeout=...)
blocks until its node is first or the timeout passes (then it removes its node), release()
deletes it.

Token: our lock node's creation zxid (czxid), read with exists() right after acquire (null when
that fails or the node is gone): zxids only grow, so a later holder's node has a higher one.
The session timeout is lock.ttl_ms: kazoo asks the ensemble for it (the nodes grant 1 s to
60 s as asked).

Backend: zookeeper. Reads config.connect (every server: kazoo fails over); lock.ttl_ms.
Capabilities: session (lost = kazoo's state listener saw LOST, the session expired, since the
grant; SUSPENDED alone is a connection that may come back within the session).
"""
import threading

from kazoo.client import KazooClient, KazooState
from kazoo.version import __version__ as kazoo_version
from kazoo.exceptions import KazooException, LockTimeout, NoNodeError

from protocol_io import Fail, Info, log, serve

OP_TIMEOUT_S = 1.5  # one request's deadline (exists, the release's delete)


class Client:
    def __init__(self, req):
        self.name = req["client"]
        self.connect_string = req["config"]["connect"]
        self.session_s = int(req["lock"].get("ttl_ms", 2000)) / 1000
        self.zk, self.lock = None, None
        self.lost = threading.Event()

    def on_state(self, state):
        log(f"kazoo_lock: {self.name}: connection {state}")
        if state == KazooState.LOST:
            self.lost.set()

    def client(self):
        """Connects at the first request (init must not need the backend)."""
        if self.zk is None:
            zk = KazooClient(hosts=self.connect_string, timeout=self.session_s)
            zk.add_listener(self.on_state)
            try:
                zk.start(timeout=OP_TIMEOUT_S * 2)
            except Exception as e:  # noqa: BLE001 - kazoo's start raises a plain timeout too
                zk.stop()
                raise Fail(f"connect {self.connect_string}: {e}") from e
            self.zk = zk
        return self.zk

    def acquire(self, req):
        zk = self.client()
        lock = zk.Lock(f"/lockchaos/{req['key']}", self.name)
        self.lost.clear()
        try:
            got = lock.acquire(timeout=req["timeout_ms"] / 1000)
        except LockTimeout as e:
            raise Fail(f"not granted within {req['timeout_ms']} ms") from e
        except KazooException as e:
            raise Info(f"Lock.acquire: {type(e).__name__}: {e}") from e
        if not got:
            raise Fail(f"not granted within {req['timeout_ms']} ms")
        self.lock = lock
        token = None
        try:
            stat = zk.exists(f"{lock.path}/{lock.node}")
            if stat is None:
                log(f"kazoo_lock: {self.name}: granted {lock.node}, but the node is gone")
            else:
                token = stat.czxid
        except KazooException as e:
            log(f"kazoo_lock: {self.name}: granted; reading its node's czxid failed: {e}")
        return {"type": "acquire_ok", "token": token}

    def release(self, req):
        lock, self.lock = self.lock, None
        if lock is None:
            raise Fail("this client does not hold the lock")
        try:
            lock.release()
        except NoNodeError as e:
            raise Fail(f"release: the node is gone: {e}") from e
        except KazooException as e:
            raise Info(f"release: {type(e).__name__}: {e}") from e
        return {"type": "release_ok"}

    def session_lost(self, req):
        return {"type": "session_lost_ok", "lost": self.lost.is_set()}


def init(req):
    c = Client(req)
    log(f"kazoo_lock (kazoo {kazoo_version}): {c.name} -> {c.connect_string}, session timeout {c.session_s}s")
    return ["session"], {"acquire": c.acquire, "release": c.release, "session_lost": c.session_lost}


if __name__ == "__main__":
    serve(init)
