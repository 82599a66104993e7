"""The common single-Redis lock snippet, written with redis-py (python3-redis 4.3.4):
acquire = SET key <random token> NX PX ttl, retried every lock.retry_ms until the request's
timeout_ms; release = EVAL of the Lua compare-and-delete. No fencing token (token null);
validity_ms = ttl_ms minus the time the successful SET took.

Backend: redis-single. Reads config.host, config.port; lock.ttl_ms, lock.retry_ms.
Capabilities: none.
"""
import secrets
import time

import redis

import redis_io
from protocol_io import Fail, Info, log, ms_since, serve

RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"


class Client:
    def __init__(self, req):
        cfg, lock = req["config"], req["lock"]
        self.ttl_ms = int(lock.get("ttl_ms", 2000))
        self.retry_s = int(lock.get("retry_ms", 50)) / 1000
        self.r = redis_io.client(cfg)
        self.tokens = {}  # key -> our token while we believe we hold it

    def acquire(self, req):
        key, token = req["key"], secrets.token_hex(16)
        deadline = time.monotonic() + req["timeout_ms"] / 1000
        while True:
            redis_io.connected(self.r)
            sent = time.monotonic()
            try:
                ok = self.r.set(key, token, nx=True, px=self.ttl_ms)
            except redis.ResponseError as e:  # the server answered with an error: not set
                raise Fail(f"SET refused: {e}") from e
            except redis.RedisError as e:  # sent, no answer: the SET may have taken the lock
                raise Info(f"SET NX PX: {e}") from e
            if ok:
                took = ms_since(sent)
                self.tokens[key] = token
                return {"type": "acquire_ok", "token": None, "validity_ms": max(0, self.ttl_ms - took)}
            if time.monotonic() + self.retry_s > deadline:
                raise Fail(f"lock held by another client for {req['timeout_ms']} ms")
            time.sleep(self.retry_s)

    def release(self, req):
        token = self.tokens.pop(req["key"], None)
        if token is None:
            raise Fail("this client does not hold the lock")
        redis_io.connected(self.r)
        try:
            deleted = self.r.eval(RELEASE, 1, req["key"], token)
        except redis.ResponseError as e:
            raise Fail(f"EVAL refused: {e}") from e
        except redis.RedisError as e:
            raise Info(f"compare-and-delete: {e}") from e
        if deleted != 1:
            raise Fail("the key is no longer ours (expired, or taken by another client)")
        return {"type": "release_ok"}


def init(req):
    c = Client(req)
    log(f"redis_article: {req['client']} -> {req['config'].get('host')}:{req['config'].get('port')}")
    return [], {"acquire": c.acquire, "release": c.release}


if __name__ == "__main__":
    serve(init)
