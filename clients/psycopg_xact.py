"""Postgres transaction-level advisory lock with psycopg 3 (python3-psycopg 3.1.7): the lock and
the protected counter live in one transaction, so the lock's end and the write's commit are one
event. acquire = BEGIN; SET LOCAL idle_in_transaction_session_timeout = <ttl_ms>;
SELECT pg_try_advisory_xact_lock(19523, k) (one simple-protocol query), with a ROLLBACK and a
pause of lock.retry_ms between tries until true or the request's timeout_ms. k = FNV-1a 32 of
the key's UTF-8 bytes as a signed int4 ("ledger" -> -293856116). tx_read / tx_write_commit are
the protocol's SQL on tables ledger and ledger_log, in that transaction. The server ends an
idle holder's transaction (and lock) after ttl_ms: validity_ms = ttl_ms minus the acquire's
last query time. No fencing token (token null).

Outcomes: a statement the server answered with an error (a SQLSTATE) certainly did not take
effect: `fail`. A statement sent without an answer (connection lost, or no answer within
OP_TIMEOUT_S) drops the connection, which ends the transaction: `info` for the acquire's query
and for COMMIT, but `fail` for tx_read and for the write before COMMIT, neither of which can
ever commit then. A session the server ended while we were idle (the idle-in-transaction
timeout) is seen before sending: `fail`. release after the commit, or after the transaction
ended with its connection -> release_ok (nothing left to hold); with the transaction still
open -> ROLLBACK.

Backends: postgres-xact, postgres-xact-pooler, postgres-xact-replicated. Reads config.dsn;
lock.ttl_ms, lock.retry_ms. Capabilities: transactional.
"""
import time

import psycopg

from postgres_io import LOCK_TYPE, connect, fnv1a32, usable
from protocol_io import Fail, Info, deadline, log, ms_since, serve

OP_TIMEOUT_S = 1.5  # no answer within this: outcome unknown (info), connection dropped
TX_READ = """WITH r AS (SELECT COALESCE((SELECT value FROM ledger WHERE key = %(key)s), 0) AS v),
     l AS (INSERT INTO ledger_log (time_ns, client, key, f, value) SELECT %(time_ns)s, %(client)s, %(key)s, 'read', v FROM r)
SELECT v FROM r"""
TX_WRITE = """WITH w AS (INSERT INTO ledger (key, value) VALUES (%(key)s, %(value)s)
           ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value)
INSERT INTO ledger_log (time_ns, client, key, f, value) VALUES (%(time_ns)s, %(client)s, %(key)s, 'write', %(value)s)"""


class Client:
    def __init__(self, req):
        self.dsn = req["config"]["dsn"]
        self.ttl_ms = int(req["lock"].get("ttl_ms", 2000))
        self.retry_s = int(req["lock"].get("retry_ms", 50)) / 1000
        self.conn, self.key, self.open = None, None, False  # key: of the last acquire; open: its transaction

    def run(self, sql, params=None, lost="info", may_connect=False):
        """The last result's cursor. Server error -> Fail; no answer -> Fail if lost="fail" (the
        statement cannot take effect alone), else Info. Either way an error ends the transaction
        (the connection is closed). Only acquire may open a new connection."""
        if not usable(self.conn):
            self.open = False
            if not may_connect:
                raise Fail("the transaction ended with its connection (nothing sent)")
            self.conn = connect(self.dsn)
        try:
            with deadline(OP_TIMEOUT_S):
                cur = self.conn.execute(sql, params)
                while cur.nextset():
                    pass
                return cur
        except (psycopg.Error, TimeoutError) as e:
            self.conn.close()  # ends the transaction, and the lock, if any
            self.open = False
            if getattr(e, "sqlstate", None) is not None or lost == "fail":
                raise Fail(f"{sql.split(None, 1)[0]}: {e}") from e
            raise Info(f"{sql.split(None, 1)[0]}: {e}") from e

    def acquire(self, req):
        if self.open:
            raise Fail(f"already holding {self.key}")
        sql = (f"BEGIN; SET LOCAL idle_in_transaction_session_timeout = {self.ttl_ms}; "
               f"SELECT pg_try_advisory_xact_lock({LOCK_TYPE}, {fnv1a32(req['key'])})")
        deadline_at = time.monotonic() + req["timeout_ms"] / 1000
        while True:
            sent = time.monotonic()
            if self.run(sql, may_connect=True).fetchone()[0]:
                self.key, self.open = req["key"], True
                return {"type": "acquire_ok", "token": None, "validity_ms": max(0, self.ttl_ms - ms_since(sent))}
            self.run("ROLLBACK", lost="fail")  # a lost answer drops the connection: rolled back too
            if time.monotonic() + self.retry_s > deadline_at:
                raise Fail(f"lock held by another transaction for {req['timeout_ms']} ms")
            time.sleep(self.retry_s)

    def in_tx(self, req):
        if not self.open or req["key"] != self.key:
            raise Fail("no open transaction holds this lock")

    def tx_read(self, req):
        self.in_tx(req)
        # Its log row lasts only if the transaction commits, which after any error (the
        # connection closed) it cannot: a read without an answer certainly left no record.
        params = {"key": req["key"], "client": req["client"], "time_ns": req["time_ns"]}
        return {"type": "tx_read_ok", "value": self.run(TX_READ, params, lost="fail").fetchone()[0]}

    def tx_write_commit(self, req):
        self.in_tx(req)
        params = {k: req[k] for k in ("key", "value", "client", "time_ns")}
        self.run(TX_WRITE, params, lost="fail")  # no COMMIT sent yet: it cannot have committed
        self.open = False
        status = self.run("COMMIT").statusmessage
        if status != "COMMIT":  # COMMIT of a failed transaction answers ROLLBACK
            raise Fail(f"COMMIT answered {status}")
        return {"type": "tx_write_commit_ok"}

    def release(self, req):
        if self.key != req["key"]:
            raise Fail("this client took no such lock")
        self.key = None
        if self.open:  # still in the transaction: give the lock back without writing
            self.open = False
            try:
                self.run("ROLLBACK")
            except Fail as e:  # the transaction (and lock) had ended already, or ends with the connection
                log(f"release: {e}")
        return {"type": "release_ok"}


def init(req):
    c = Client(req)
    log(f"psycopg_xact: {req['client']} -> {c.dsn}; idle_in_transaction_session_timeout {c.ttl_ms} ms")
    return ["transactional"], {"acquire": c.acquire, "release": c.release, "tx_read": c.tx_read,
                               "tx_write_commit": c.tx_write_commit}


if __name__ == "__main__":
    serve(init)
