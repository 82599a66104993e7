"""Postgres session-level advisory lock with psycopg 3 (python3-psycopg 3.1.7), on one
autocommit connection: acquire = SELECT pg_try_advisory_lock(19523, k) every lock.retry_ms until
true or the request's timeout_ms; release = SELECT pg_advisory_unlock(19523, k), false -> fail.
The lock lasts as long as the session: no expiry, no fencing token (token null, no validity_ms).
k = FNV-1a 32 of the key's UTF-8 bytes as a signed int4: "ledger" -> 0xee7c1c8c = -293856116.
Statements carry no parameters, so psycopg sends them with the simple query protocol, and no
prepared statements are made (prepare_threshold=None): it runs unchanged behind PgBouncer.

A connection found closed before a statement (the server ended the session while we were idle)
is replaced by a new one for an acquire, and makes a release `fail`; its locks ended with it. A statement sent without an answer (error without a server SQLSTATE, or no
answer within OP_TIMEOUT_S) is `info`, and the connection is dropped; a failed connect is `fail`.

Backends: postgres-session, postgres-session-pooler. Reads config.dsn; lock.retry_ms.
Capabilities: none.
"""
import time

import psycopg

from postgres_io import LOCK_TYPE, connect, fnv1a32, usable
from protocol_io import Fail, Info, deadline, log, serve

OP_TIMEOUT_S = 1.5  # no answer within this: outcome unknown (info), connection dropped


class Client:
    def __init__(self, req):
        self.dsn = req["config"]["dsn"]
        self.retry_s = int(req["lock"].get("retry_ms", 50)) / 1000
        self.conn, self.held = None, set()

    def drop(self):
        if self.conn is not None:
            self.conn.close()
        self.conn, self.held = None, set()  # the session's locks end with it

    def select_bool(self, sql):
        """One statement's boolean: Fail if it certainly did not run, Info if it may have."""
        if not usable(self.conn):
            self.drop()
            self.conn = connect(self.dsn)
        try:
            with deadline(OP_TIMEOUT_S):
                return self.conn.execute(sql).fetchone()[0]
        except psycopg.Error as e:
            if e.sqlstate is not None and usable(self.conn):  # the server answered with an error
                raise Fail(f"{sql}: {e.sqlstate} {e}") from e
            self.drop()
            if e.sqlstate is not None:  # e.g. FATAL: the session ended before running it
                raise Fail(f"{sql}: {e.sqlstate} {e}") from e
            raise Info(f"{sql}: {e}") from e
        except TimeoutError as e:
            self.drop()
            raise Info(f"{sql}: {e}") from e

    def acquire(self, req):
        sql = f"SELECT pg_try_advisory_lock({LOCK_TYPE}, {fnv1a32(req['key'])})"
        deadline_at = time.monotonic() + req["timeout_ms"] / 1000
        while not self.select_bool(sql):
            if time.monotonic() + self.retry_s > deadline_at:
                raise Fail(f"lock held by another session for {req['timeout_ms']} ms")
            time.sleep(self.retry_s)
        self.held.add(req["key"])
        return {"type": "acquire_ok", "token": None}

    def release(self, req):
        key = req["key"]
        if key not in self.held or not usable(self.conn):
            self.held.discard(key)
            raise Fail("this session does not hold the lock (not taken, or the connection that held it is gone)")
        self.held.discard(key)
        if not self.select_bool(f"SELECT pg_advisory_unlock({LOCK_TYPE}, {fnv1a32(key)})"):
            raise Fail("pg_advisory_unlock: false, this session did not hold the lock")
        return {"type": "release_ok"}


def init(req):
    c = Client(req)
    log(f"psycopg_session: {req['client']} -> {c.dsn}; ledger's lock is ({LOCK_TYPE}, {fnv1a32('ledger')})")
    return [], {"acquire": c.acquire, "release": c.release}


if __name__ == "__main__":
    serve(init)
