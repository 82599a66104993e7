"""redis-py's own lock, redis.lock.Lock (python3-redis 4.3.4), as an application gets it from
client.lock(name, timeout=ttl, blocking_timeout=..., sleep=...): SET NX PX with a uuid1 token,
polled every `sleep` seconds; release, extend and reacquire are Lua scripts that check the token.
No fencing token (token null); validity_ms = the PX the lock sent minus the time its
successful SET took.

Backend: redis-single. Reads config.host, config.port; lock.ttl_ms, lock.retry_ms.
Capabilities: renew (Lock.reacquire()).

  --no-timeout   client.lock(name, timeout=None): a lock with no expiry, as redis-py makes it by
                 default. do_acquire then sends SET NX with no PX, so the key lives until a
                 release deletes it; lock.ttl_ms is not used, acquire_ok has no validity_ms,
                 and there is no renew (reacquire() refuses a lock with no timeout).
                 In 4.3.4 Lock.release() clears the token it kept (self.local.token = None)
                 before do_release() sends the release script, so a release whose round trip
                 fails on a connection error (answered `info`) leaves the key in Redis with no
                 expiry, and the Lock can no longer release it ("Cannot release an unlocked
                 lock"): nobody is granted the lock again. redis-py 8.2.0 keeps the token until
                 the script answers.
  --retry-release  what an application that retries a failed release does: after a release
                 that failed on a connection error (answered `info`), a thread calls
                 Lock.release() again every 200 ms for up to 10 s, until it answers. With 4.3.4
                 the retry raises LockError ("Cannot release an unlocked lock") at once, the
                 token being gone; with 8.2.0 it releases the key once the connection is back.
"""
import sys
import threading
import time

import redis
from redis.exceptions import LockError, LockNotOwnedError

import redis_io
from protocol_io import Fail, Info, log, ms_since, serve

NO_TIMEOUT = "--no-timeout" in sys.argv[1:]
RETRY_RELEASE = "--retry-release" in sys.argv[1:]
RETRY_EVERY_S, RETRY_FOR_S = 0.2, 10


def retry_release(lock):
    """Lock.release() again until it answers, as --retry-release says."""
    deadline = time.monotonic() + RETRY_FOR_S
    while time.monotonic() < deadline:
        time.sleep(RETRY_EVERY_S)
        try:
            lock.release()
            log("release retried: released")
            return
        except LockError as e:  # LockNotOwnedError, or "Cannot release an unlocked lock"
            log(f"release retried: {type(e).__name__}: {e}; giving up")
            return
        except redis.RedisError:
            continue
    log(f"release retried for {RETRY_FOR_S} s; giving up")


class Client:
    def __init__(self, req):
        cfg, lock = req["config"], req["lock"]
        self.ttl_s = None if NO_TIMEOUT else int(lock.get("ttl_ms", 2000)) / 1000
        self.retry_s = int(lock.get("retry_ms", 50)) / 1000
        self.r = redis_io.client(cfg)
        self.lock = None  # the redis.lock.Lock we hold (or believe we hold)

    def acquire(self, req):
        lock = self.r.lock(req["key"], timeout=self.ttl_s, sleep=self.retry_s, blocking_timeout=req["timeout_ms"] / 1000)
        # Lock.acquire() does not say when its successful SET went out: time each do_acquire.
        last_try = [0.0]

        def timed_do_acquire(token, _inner=lock.do_acquire):
            last_try[0] = time.monotonic()
            return _inner(token)

        lock.do_acquire = timed_do_acquire
        redis_io.connected(self.r)
        try:
            got = lock.acquire()
        except redis.ResponseError as e:
            raise Fail(f"SET refused: {e}") from e
        except redis.RedisError as e:
            raise Info(f"Lock.acquire: {e}") from e
        if not got:
            raise Fail(f"lock held by another client for {req['timeout_ms']} ms")
        self.lock = lock
        if lock.timeout is None:  # SET NX without PX: the key never expires
            return {"type": "acquire_ok", "token": None}
        px = int(lock.timeout * 1000)  # what do_acquire sent as PX
        return {"type": "acquire_ok", "token": None, "validity_ms": max(0, px - ms_since(last_try[0]))}

    def held(self, key):
        if self.lock is None or self.lock.name != key:
            raise Fail("this client does not hold the lock")
        return self.lock

    def renew(self, req):
        # reacquire() rather than extend(): reacquire resets the key's TTL to the lock's own
        # timeout (PEXPIRE ttl when the token is still ours), which is what a renewal of a
        # ttl_ms lease means. extend(t) adds t to what is left (the TTL would grow past ttl_ms);
        # extend(t, replace_ttl=True) would do the same as reacquire, with one more argument.
        lock = self.held(req["key"])
        redis_io.connected(self.r)
        sent = time.monotonic()
        try:
            lock.reacquire()
        except LockNotOwnedError as e:
            raise Fail(f"reacquire: {e}") from e
        except redis.ResponseError as e:
            raise Fail(f"reacquire refused: {e}") from e
        except redis.RedisError as e:
            raise Info(f"reacquire: {e}") from e
        return {"type": "renew_ok", "validity_ms": max(0, int(lock.timeout * 1000) - ms_since(sent))}

    def release(self, req):
        lock = self.held(req["key"])
        # Dropped whatever happens: after Lock.release() raised, 4.3.4's Lock has already
        # forgotten its token and could not release the key again anyway.
        self.lock = None
        redis_io.connected(self.r)
        try:
            lock.release()
        except LockNotOwnedError as e:  # the script found another token, or none: expired
            raise Fail(f"release: {e}") from e
        except LockError as e:  # "Cannot release an unlocked lock": nothing sent
            raise Fail(f"release: {e}") from e
        except redis.ResponseError as e:
            raise Fail(f"release refused: {e}") from e
        except redis.RedisError as e:
            if RETRY_RELEASE:
                threading.Thread(target=retry_release, args=(lock,), daemon=True).start()
            raise Info(f"release: {e}") from e
        return {"type": "release_ok"}


def init(req):
    c = Client(req)
    expiry = "no expiry (--no-timeout)" if c.ttl_s is None else f"timeout {c.ttl_s}s"
    log(f"redis_py_lock (redis-py {redis.__version__}): {req['client']} -> {req['config'].get('host')}:{req['config'].get('port')}, {expiry}")
    if c.ttl_s is None:
        return [], {"acquire": c.acquire, "release": c.release}
    return ["renew"], {"acquire": c.acquire, "release": c.release, "renew": c.renew}


if __name__ == "__main__":
    serve(init)
