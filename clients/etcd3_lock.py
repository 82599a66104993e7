"""python-etcd3's lock, etcd3.Lock (python3-etcd3 0.12.0), as client.lock(name, ttl=ttl_s) gives
it: each try grants a lease of ttl_s and puts /locks/<name> = uuid under it in a transaction
that requires the key absent (a waiter would watch the key between tries, but see acquire()).
The lease is never kept alive on its own: the lock lapses ttl_s after its grant unless renewed
(Lock.refresh()).
Release deletes the key if its value is still our uuid.

Token: the lock key's create_revision, read with client.get(lock.key) right after acquiring,
only if the value read is still our uuid (else null). create_revision, not mod_revision: it is
the revision of the transaction that created our key, so a later holder's key always has a
higher one (the two are equal here, as nothing modifies the key after its creation).
validity_ms = the granted lease TTL minus the time since the successful try's grant was sent.

Backend: etcd. Reads config.endpoints[0] (python-etcd3 talks to one endpoint; with
lock.one_member_each there is one); lock.retry_ms; lock.ttl_ms (rounded up to whole seconds;
etcd may raise it to its minimum, and the granted TTL is the one used).
Capabilities: renew (Lock.refresh(): one LeaseKeepAlive; TTL <= 0 means the lease is gone),
session (the lease's remaining TTL from LeaseTimeToLive: -1 once it expired or was revoked).
"""
import time

import etcd3

from protocol_io import Fail, Info, log, ms_since, serve, ttl_seconds

OP_TIMEOUT_S = 1.5  # gRPC deadline of one unary call; past it the outcome is unknown (info)


class Client:
    def __init__(self, req):
        ep = req["config"]["endpoints"][0]
        self.ttl_s = ttl_seconds(req["lock"])
        self.retry_s = int(req["lock"].get("retry_ms", 50)) / 1000
        self.etcd = etcd3.client(host=ep["host"], port=int(ep.get("port", 2379)), timeout=OP_TIMEOUT_S)
        self.lock = None
        # Lock.acquire() grants a new lease on each try; note when the last grant went out.
        self.grant_sent = 0.0
        inner = self.etcd.lease

        def timed_lease(ttl, lease_id=None):
            self.grant_sent = time.monotonic()
            return inner(ttl, lease_id)

        self.etcd.lease = timed_lease

    def acquire(self, req):
        # Lock.acquire(timeout=t) cannot wait with Debian bookworm's tenacity 8.2.1: when the
        # first try finds the key taken, tenacity calls the lock's wait(previous_attempt_number,
        # delay_since_first_attempt) with one argument (retry_state) and the call raises
        # TypeError (kragniz/python-etcd3 issue #2149). acquire(timeout=0) makes one try and
        # returns False without reaching that wait, so this polls it every lock.retry_ms
        # instead of the library's watch on the key.
        lock = self.etcd.lock(req["key"], ttl=self.ttl_s)
        deadline = time.monotonic() + req["timeout_ms"] / 1000
        while True:
            try:
                got = lock.acquire(timeout=0)
            except etcd3.exceptions.Etcd3Exception as e:  # a lease or the transaction may have gone through
                raise Info(f"Lock.acquire: {type(e).__name__}: {e}") from e
            if got:
                break
            if time.monotonic() + self.retry_s > deadline:
                raise Fail(f"lock held by another client for {req['timeout_ms']} ms")
            time.sleep(self.retry_s)
        validity = max(0, lock.lease.ttl * 1000 - ms_since(self.grant_sent))
        self.lock = lock
        token = None
        try:
            value, meta = self.etcd.get(lock.key)
            if value == lock.uuid:
                token = meta.create_revision
            else:
                log(f"acquired, but {lock.key} no longer holds our uuid: token null")
        except Exception as e:  # noqa: BLE001 - the grant stands; only its token is unknown
            log(f"acquired; reading {lock.key} for its create_revision failed ({e}): token null")
        return {"type": "acquire_ok", "token": token, "validity_ms": validity}

    def held(self, key):
        if self.lock is None or self.lock.name != key:
            raise Fail("this client does not hold the lock")
        return self.lock

    def release(self, req):
        lock = self.held(req["key"])
        self.lock = None
        try:
            deleted = lock.release()
        except etcd3.exceptions.Etcd3Exception as e:
            raise Info(f"Lock.release: {type(e).__name__}: {e}") from e
        if not deleted:
            raise Fail(f"{lock.key} no longer holds our uuid (lease expired, or another holder)")
        return {"type": "release_ok"}

    def renew(self, req):
        lock = self.held(req["key"])
        sent = time.monotonic()
        try:
            answers = lock.refresh()
        except etcd3.exceptions.Etcd3Exception as e:
            raise Info(f"Lock.refresh: {type(e).__name__}: {e}") from e
        ttl = answers[-1].TTL if answers else 0
        if ttl <= 0:
            raise Fail(f"lease {lock.lease.id:x} is gone (keep-alive answered TTL {ttl})")
        return {"type": "renew_ok", "validity_ms": max(0, ttl * 1000 - ms_since(sent))}

    def session_lost(self, req):
        lock = self.held(req["key"])
        try:
            left = lock.lease.remaining_ttl
        except etcd3.exceptions.Etcd3Exception as e:  # the backend told us nothing
            raise Info(f"LeaseTimeToLive: {type(e).__name__}: {e}") from e
        return {"type": "session_lost_ok", "lost": left <= 0}


def init(req):
    c = Client(req)
    log(f"etcd3_lock: {req['client']} -> {req['config']['endpoints'][0]}, lease TTL {c.ttl_s}s")
    return ["renew", "session"], {"acquire": c.acquire, "release": c.release, "renew": c.renew,
                                  "session_lost": c.session_lost}


if __name__ == "__main__":
    serve(init)
