"""psycopg_session.py when the server ends the holder's session (pg_terminate_backend while it
holds the lock): the release must `fail` (the lock ended with the session, and nothing was
sent), and the next acquire must connect anew and succeed.

  /usr/bin/python3 clients/tests/pg_terminate.py "host=... port=5432 dbname=postgres user=postgres"
"""
import json
import os
import subprocess
import sys
import time

import psycopg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
dsn = sys.argv[1]
p = subprocess.Popen([sys.executable, "clients/psycopg_session.py"], cwd=ROOT, stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
n = 0


def ask(kind, **fields):
    global n
    p.stdin.write(json.dumps({"id": n, "type": kind, **fields}) + "\n")
    p.stdin.flush()
    n += 1
    answer = json.loads(p.stdout.readline())
    print(f"-> {kind:8} <- {json.dumps(answer)}", flush=True)
    return answer["type"]


got = [ask("init", client="client-1", process=1, backend="postgres-session", config={"dsn": dsn}, lock={"retry_ms": 50}),
       ask("acquire", key="ledger", timeout_ms=1000)]
with psycopg.connect(dsn, autocommit=True) as admin:
    ended = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory'").fetchone()[0]
print(f"pg_terminate_backend ended {ended} session(s) holding advisory locks")
time.sleep(0.3)
got += [ask("release", key="ledger"), ask("acquire", key="ledger", timeout_ms=1000), ask("release", key="ledger")]
p.stdin.close()
p.wait()
ok = [a == b for a, b in zip(got, ["init_ok", "acquire_ok", "fail", "acquire_ok", "release_ok"])]
print(f"{sum(ok)} passed, {len(ok) - sum(ok)} failed")
sys.exit(0 if all(ok) else 1)
