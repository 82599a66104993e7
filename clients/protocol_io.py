"""Shared plumbing of the reference client programs (docs/client-protocol.md).

Requests arrive on stdin, one JSON object a line; each gets exactly one response line on
stdout, carrying the request's id, flushed at once. Logs go to stderr. A handler answers by
returning the success response's fields (its "type" included), or by raising Fail (the
operation certainly did not happen) or Info (its outcome is unknown). Any other exception is
answered `info`: the program cannot tell whether the request reached the server.
"""
import json
import math
import signal
import sys
import time
import traceback
from contextlib import contextmanager


class Fail(Exception):
    """The operation certainly did not happen: answered `fail`."""


class Info(Exception):
    """The operation may or may not have happened: answered `info`."""


def log(*parts):
    print(time.strftime("%H:%M:%S"), *parts, file=sys.stderr, flush=True)


def send(rid, kind, **fields):
    sys.stdout.write(json.dumps({"id": rid, "type": kind, **fields}) + "\n")
    sys.stdout.flush()


def ms_since(t0):
    """Whole milliseconds since the time.monotonic() reading t0, rounded up."""
    return math.ceil((time.monotonic() - t0) * 1000)


def ttl_seconds(lock):
    """lock.ttl_ms in whole seconds, rounded up (etcd leases and etcdctl take seconds)."""
    return max(1, math.ceil(int(lock.get("ttl_ms", 2000)) / 1000))


@contextmanager
def deadline(seconds):
    """Raises TimeoutError in the main thread when the block runs longer than `seconds`
    (for libraries whose blocking calls have no timeout of their own)."""

    def expired(_signum, _frame):
        raise TimeoutError(f"no answer within {seconds}s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def serve(init):
    """Answers requests until stdin closes. init(request) returns (capabilities, handlers),
    handlers mapping a request type to a function of the request."""
    handlers = {}
    for line in iter(sys.stdin.readline, ""):
        try:
            req = json.loads(line)
            rid, kind = req["id"], req["type"]
        except (ValueError, KeyError, TypeError):
            log("skipped a line that is not a request:", line.strip()[:200])
            continue
        try:
            if kind == "init":
                capabilities, handlers = init(req)
                send(rid, "init_ok", capabilities=capabilities)
                continue
            handler = handlers.get(kind)
            if handler is None:
                raise Fail(f"unknown request type {kind!r} (or a capability this program lacks, or no init yet)")
            fields = handler(req)
            send(rid, fields.pop("type"), **fields)
        except Fail as e:
            log(f"{kind} #{rid}: fail: {e}")
            send(rid, "fail", error=str(e))
        except Info as e:
            log(f"{kind} #{rid}: info: {e}")
            send(rid, "info", error=str(e))
        except Exception as e:  # noqa: BLE001 - whatever went wrong, the request gets its answer
            log(f"{kind} #{rid}: info after an unexpected error:\n{traceback.format_exc()}")
            send(rid, "info", error=f"{type(e).__name__}: {e}")
