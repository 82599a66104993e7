"""sherlock's Redis lock, sherlock.RedisLock (sherlock 0.4.0 from PyPI: see below), as
an application gets it from RedisLock(name, client=redis_client, expire=ttl_s, timeout=...,
retry_interval=...): a Lua script runs SETNX key uuid4 and then EXPIRE key ttl_s; a blocking
acquire tries it again every retry_interval until `timeout` seconds of sleeping have passed.
Release runs a script that deletes the key if it still holds our uuid. One RedisLock per key,
kept for the program's life, as an application keeps one (sherlock's RedisLock.__del__ releases).
No fencing token (token null); validity_ms = the EXPIRE the lock sent minus the time since its
successful try was sent.

The bug this client exists for: sherlock 0.4.0's RedisLock._renew() (sherlock/lock.py, lines
505-515) calls self._release_func, the release script, where it means self._renew_func: a
renewal of a lock we hold deletes its key and returns True. The client answers what the library
says, renew_ok, while the lock is free for anyone (py-sherlock/sherlock issue #66; 0.4.1 calls
the renew script).

Backend: redis-single. Reads config.host, config.port; lock.ttl_ms (EXPIRE takes whole seconds:
rounded up), lock.retry_ms.
Capabilities: renew (RedisLock.renew()).

sherlock is not in Debian: its scenarios install it from PyPI into their client environment
(`python = ["sherlock==0.4.0", "redis==4.3.4"]`: its `redis` extra wants redis>=4.3.4,<5, pinned
to the node image's version), and the program imports it as any other package.
"""
import time

import redis
import sherlock

import redis_io
from protocol_io import Fail, Info, log, ms_since, serve, ttl_seconds


class Client:
    def __init__(self, req, sherlock):
        cfg, lock = req["config"], req["lock"]
        self.sherlock = sherlock
        self.expire_s = ttl_seconds(lock)  # an int: EXPIRE refuses "2.0"
        self.retry_s = int(lock.get("retry_ms", 50)) / 1000
        self.r = redis_io.client(cfg)
        self.locks = {}  # key -> its RedisLock, made at the first acquire
        self.lock = None  # the RedisLock we hold (or believe we hold)

    def lock_for(self, key):
        if key not in self.locks:
            self.locks[key] = self.sherlock.RedisLock(key, client=self.r, expire=self.expire_s,
                                                      retry_interval=self.retry_s)
        return self.locks[key]

    def acquire(self, req):
        lock = self.lock_for(req["key"])
        lock.timeout = req["timeout_ms"] / 1000
        # acquire() does not say when its successful script went out: time each _acquire.
        last_try = [0.0]

        def timed_acquire(_inner=type(lock)._acquire):
            last_try[0] = time.monotonic()
            return _inner(lock)

        lock._acquire = timed_acquire
        redis_io.connected(self.r)
        try:
            lock.acquire()
        except self.sherlock.LockTimeoutException as e:
            raise Fail(f"lock held by another client for {req['timeout_ms']} ms") from e
        except redis.RedisError as e:
            # A refused script is no proof that nothing happened either: a Lua error after its
            # SETNX leaves the key set.
            raise Info(f"RedisLock.acquire: {type(e).__name__}: {e}") from e
        self.lock = lock
        return {"type": "acquire_ok", "token": None, "validity_ms": max(0, self.expire_s * 1000 - ms_since(last_try[0]))}

    def held(self, key):
        if self.lock is None or self.lock.lock_name != key:
            raise Fail("this client does not hold the lock")
        return self.lock

    def renew(self, req):
        lock = self.held(req["key"])
        redis_io.connected(self.r)
        sent = time.monotonic()
        try:
            renewed = lock.renew()  # 0.4.0: the release script (see above)
        except redis.RedisError as e:
            raise Info(f"RedisLock.renew: {type(e).__name__}: {e}") from e
        if not renewed:  # the script found another uuid, or none: nothing changed
            raise Fail(f"renew: {lock.lock_name} no longer holds our uuid")
        return {"type": "renew_ok", "validity_ms": max(0, self.expire_s * 1000 - ms_since(sent))}

    def release(self, req):
        lock = self.held(req["key"])
        self.lock = None
        redis_io.connected(self.r)
        try:
            lock.release()
        except self.sherlock.LockException as e:  # the script found another uuid, or none: nothing deleted
            raise Fail(f"release: {e}") from e
        except redis.RedisError as e:
            raise Info(f"RedisLock.release: {type(e).__name__}: {e}") from e
        return {"type": "release_ok"}


def init(req):
    c = Client(req, sherlock)
    log(f"sherlock_lock: {req['client']} -> {req['config'].get('host')}:{req['config'].get('port')}, "
        f"expire {c.expire_s}s, sherlock from {sherlock.__file__}")
    return ["renew"], {"acquire": c.acquire, "release": c.release, "renew": c.renew}


if __name__ == "__main__":
    serve(init)
