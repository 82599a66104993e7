"""What the psycopg reference clients share: the advisory lock's key, and their connection.

The key is the two-int4 form (lock type, resource id) lockchaos's own Postgres clients use:
(19523 = 0x4c43, FNV-1a 32 of the lock name's UTF-8 bytes as a signed int4).
"""
import psycopg

from protocol_io import Fail, log

LOCK_TYPE = 19523  # 0x4c43, the first int4 of the two-key advisory lock
CONNECT_TIMEOUT_S = 2  # libpq's connect_timeout (it treats less than 2 as 2)


def fnv1a32(name):
    """FNV-1a 32 of name's UTF-8 bytes, as a signed int4. fnv1a32("ledger") == -293856116."""
    h = 0x811C9DC5
    for b in name.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def connect(dsn):
    """An autocommit connection with no prepared statements (it runs unchanged behind
    PgBouncer); Fail when it cannot be made: nothing was sent."""
    try:
        return psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, prepare_threshold=None)
    except psycopg.Error as e:
        raise Fail(f"cannot connect: {e}") from e


def usable(conn):
    """Open, and not ended by the server meanwhile: reading what it sent while we were idle
    (e.g. FATAL: terminating connection due to administrator command, or the idle-in-transaction
    timeout) finds it closed, and closes it."""
    if conn is None or conn.closed or conn.broken:
        return False
    try:  # the first read takes the FATAL message, the second finds the socket closed
        conn.pgconn.consume_input()
        conn.pgconn.consume_input()
    except psycopg.OperationalError as e:
        log(f"the server ended the session: {e}")
        conn.close()
        return False
    return True
