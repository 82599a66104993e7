"""What python-etcd3 0.12.0's waiting Lock.acquire() does, call by call, against a real etcd.

Client A takes the lock /locks/wait-demo; client B asks for it with acquire(timeout=None) and
acquire(timeout=5), and every call B's library makes (lease grant, transaction, watch_once) is
logged with its time. Two runs:

  1. With Debian bookworm's tenacity 8.2.1 (the node image's): after B's first failed try,
     tenacity calls the lock's wait(previous_attempt_number, delay_since_first_attempt) with one
     argument (tenacity/__init__.py line 329, `self.wait(retry_state)`) and B's acquire raises
     TypeError, for timeout=None as for timeout=5: watch_once is never called.
  2. With --tenacity DIR, a tenacity 6.1.0 (the version etcd3 0.12.0's requirements pin) put
     first on sys.path: its compat layer calls that wait with two arguments, and B waits on
     watch_once(key, None), a watch with no start revision (etcd3/locks.py line 71). The race
     is staged by hand: A releases at the moment B's library calls watch_once, after its failed
     transaction and before its watch exists on the server. B then sleeps although the key is
     gone, until something else changes the key: here A takes the lock again 6 s later (a PUT),
     which wakes B, which fails, watches again, and gets the lock when A releases. As a
     control, a release 1 s into B's wait (its watch in place) wakes B at once.

Run from the project's root in a container of the node image on an etcd's network (see
clients/tests/README.md):

  python3 -m pip install --no-deps --target /tmp/tenacity-6.1.0 tenacity==6.1.0
  docker run --rm --network refc-net -v $PWD:/p:ro -v /tmp/tenacity-6.1.0:/t:ro -w /p \
      lockchaos-node:bookworm python3 clients/tests/etcd3_wait.py E [--tenacity /t]

Ends with "N passed, N failed"; exit code 1 when a check failed.
"""
import sys
import threading
import time

args = sys.argv[1:]
HOST = args[0]
if "--tenacity" in args:
    sys.path.insert(0, args[args.index("--tenacity") + 1])

import etcd3  # noqa: E402  (after the path)
import tenacity  # noqa: E402

START = time.monotonic()
RESULTS = [0, 0]
KEY = "wait-demo"


def say(*parts):
    print(f"{(time.monotonic() - START) * 1000:8.0f}ms", *parts, flush=True)


def check(ok, what):
    RESULTS[0 if ok else 1] += 1
    say("PASS" if ok else "FAIL", what)


def traced(client, name):
    """Logs every call B's library makes to client.<name>, and its outcome."""
    inner = getattr(client, name)
    calls = []

    def call(*a, **kw):
        shown = ", ".join([repr(x) for x in a] + [f"{k}={v!r}" for k, v in kw.items()])
        say(f"B {name}({shown if name != 'transaction' else 'create(key) == 0 ? put : get'})")
        calls.append(time.monotonic())
        out = inner(*a, **kw)
        if name == "transaction":
            say(f"B transaction -> success={out[0]}")
        return out

    setattr(client, name, call)
    return calls


def fresh():
    c = etcd3.client(host=HOST, port=2379, timeout=1.5)
    c.delete(f"/locks/{KEY}")
    return c


def debian_tenacity():
    say(f"tenacity {tenacity.__file__}")
    a, b = fresh(), etcd3.client(host=HOST, port=2379, timeout=1.5)
    lock_a = a.lock(KEY, ttl=30)
    check(lock_a.acquire(timeout=0), "A acquires")
    for timeout in (None, 5):
        lock_b = b.lock(KEY, ttl=30)
        watches = traced(b, "watch_once")
        traced(b, "lease")
        traced(b, "transaction")
        say(f"B acquire(timeout={timeout})")
        try:
            got = lock_b.acquire(timeout=timeout)
            check(False, f"B acquire(timeout={timeout}) returned {got} instead of raising")
        except TypeError as e:
            say(f"B acquire(timeout={timeout}) raised TypeError: {e}")
            check("delay_since_first_attempt" in str(e), f"acquire(timeout={timeout}) fails in tenacity's call of the lock's wait")
        check(not watches, f"acquire(timeout={timeout}) never called watch_once")
        b = etcd3.client(host=HOST, port=2379, timeout=1.5)
    lock_a.release()


def waiting(lock, result):
    def run():
        result["got"] = lock.acquire(timeout=None)
        result["at"] = time.monotonic()
        say(f"B acquire(timeout=None) returned {result['got']}")

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def old_tenacity():
    say(f"tenacity {tenacity.__file__}")
    # Control: B waits with its watch in place; A's release wakes it at once.
    a, b = fresh(), etcd3.client(host=HOST, port=2379, timeout=1.5)
    lock_a, lock_b = a.lock(KEY, ttl=30), b.lock(KEY, ttl=30)
    check(lock_a.acquire(timeout=0), "control: A acquires")
    traced(b, "watch_once")
    result = {}
    waiting(lock_b, result)
    time.sleep(1)
    released = time.monotonic()
    say("A release (B has been watching for 1 s)")
    lock_a.release()
    time.sleep(1)
    check(result.get("got") is True and result["at"] - released < 0.5,
          f"control: B is granted the lock {((result.get('at') or 0) - released) * 1000:.0f} ms after the release")
    lock_b.release()

    # The race: A's release lands between B's failed transaction and B's watch.
    a, b = fresh(), etcd3.client(host=HOST, port=2379, timeout=1.5)
    lock_a, lock_b = a.lock(KEY, ttl=30), b.lock(KEY, ttl=30)
    check(lock_a.acquire(timeout=0), "race: A acquires")
    traced(b, "transaction")
    inner = b.watch_once
    watches = []

    def watch_once(key, timeout=None, **kw):
        watches.append(time.monotonic())
        if len(watches) == 1:
            say("B's failed try is done; before its watch exists, A releases")
            check(lock_a.release(), "race: A's release deletes the key")
        say(f"B watch_once({key!r}, timeout={timeout}, {kw}) (no start_revision)")
        return inner(key, timeout, **kw)

    b.watch_once = watch_once
    result = {}
    waiting(lock_b, result)
    time.sleep(6)
    value, _ = a.get(f"/locks/{KEY}")
    say(f"6 s later: /locks/{KEY} = {value!r}; B's acquire has {'returned' if 'got' in result else 'not returned'}")
    check(value is None and "got" not in result, "race: the key is free and B still sleeps in watch_once")
    # Something else changes the key: A takes it again (PUT), B wakes, fails, watches again.
    lock_a = a.lock(KEY, ttl=30)
    check(lock_a.acquire(timeout=0), "race: A takes the lock again (a PUT on the key)")
    time.sleep(1)
    check(len(watches) == 2 and "got" not in result, f"race: B woke on the PUT, failed and watches again ({len(watches)} watches)")
    released = time.monotonic()
    lock_a.release()
    time.sleep(1)
    check(result.get("got") is True, f"race: B is granted the lock {((result.get('at') or 0) - released) * 1000:.0f} ms after A's second release")


if __name__ == "__main__":
    (old_tenacity if "--tenacity" in args else debian_tenacity)()
    print(f"{RESULTS[0]} passed, {RESULTS[1]} failed")
    sys.exit(1 if RESULTS[1] else 0)
