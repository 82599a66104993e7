"""psycopg_xact.py's answer to a COMMIT that outlives its wait: a deferred constraint trigger on
ledger_log sleeps 3 s at commit time, longer than the program's 1.5 s, so tx_write_commit must
answer `info` (outcome unknown) - and the server then commits all the same, which is why `fail`
would be wrong. Creates the trigger, runs the program, checks the ledger, drops the trigger.

  /usr/bin/python3 clients/tests/xact_commit_unknown.py "host=... port=5432 dbname=postgres user=postgres"
"""
import json
import os
import subprocess
import sys
import time

import psycopg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
dsn = sys.argv[1]
SETUP = """
CREATE FUNCTION refc_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(3); RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER refc_slow_commit AFTER INSERT ON ledger_log DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.f = 'write') EXECUTE FUNCTION refc_slow_commit();
"""
TEARDOWN = "DROP TRIGGER IF EXISTS refc_slow_commit ON ledger_log; DROP FUNCTION IF EXISTS refc_slow_commit();"

with psycopg.connect(dsn, autocommit=True) as admin:
    admin.execute(TEARDOWN)
    admin.execute(SETUP)
    before = admin.execute("SELECT COALESCE((SELECT value FROM ledger WHERE key = 'ledger'), 0)").fetchone()[0]
    p = subprocess.Popen([sys.executable, "clients/psycopg_xact.py"], cwd=ROOT, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    answers = []
    for i, req in enumerate([
        {"type": "init", "client": "client-1", "process": 1, "backend": "postgres-xact", "config": {"dsn": dsn},
         "lock": {"ttl_ms": 5000, "retry_ms": 50}},
        {"type": "acquire", "key": "ledger", "timeout_ms": 2000},
        {"type": "tx_write_commit", "key": "ledger", "value": before + 100, "client": 1, "time_ns": time.time_ns()},
        {"type": "release", "key": "ledger"},
    ]):
        p.stdin.write(json.dumps({"id": i, **req}) + "\n")
        p.stdin.flush()
        answers.append(json.loads(p.stdout.readline()))
        print(f"-> {req['type']:16} <- {json.dumps(answers[-1])}", flush=True)
    p.stdin.close()
    p.wait()
    time.sleep(2)  # the server finishes the commit after the program stopped waiting
    after = admin.execute("SELECT value FROM ledger WHERE key = 'ledger'").fetchone()[0]
    admin.execute(TEARDOWN)
ok = [answers[2]["type"] == "info", after == before + 100]
print(f"tx_write_commit answered {answers[2]['type']} (want info); ledger {before} -> {after} (the commit landed: {ok[1]})")
print(f"{sum(ok)} passed, {len(ok) - sum(ok)} failed")
sys.exit(0 if all(ok) else 1)
