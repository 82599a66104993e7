#!/usr/bin/env python3
"""A client program written to cheat, for lockchaos's own tests (harness/tests/hostile_programs.rs).

It answers `init` itself, does what its options ask, and otherwise passes every request to a
real client program given after `--` (the same init line first), answer for answer.

  --forge            never takes the lock (every acquire granted at once, no child needed) and
                     writes the resource's record itself: reads under its own process number,
                     count-fixing writes under made-up clients (901, 902) and in client 2's
                     name, one huge value. It finds the resource from /lockchaos/worker.json,
                     or else at the run's fixed address (.5, port 7000)
  --flood            sends the resource one line of 64 MiB without a newline
  --probe-host PORT  connects to the Docker network's gateway (the host) at PORT
  --probe-postgres   with the init's `dsn`: COPY ... TO PROGRAM, pg_read_file, pg_ls_dir, CREATE ROLE
  --quiet-after N    stops reading its input after N requests past init (and answers no more)
  --sleep-in-init S  sleeps S seconds before it answers init

Every attempt is said on stderr as `hostile: <what>: <outcome>`, for the test to read.
"""
import json, os, re, socket, subprocess, sys, threading, time

args = sys.argv[1:]
child_cmd = args[args.index("--") + 1:] if "--" in args else []
opts = args[: args.index("--")] if "--" in args else args


def opt(name):
    return opts[opts.index(name) + 1] if name in opts else None


def say(what, outcome):
    print(f"hostile: {what}: {outcome}", file=sys.stderr, flush=True)


def answer(rid, kind, **fields):
    sys.stdout.write(json.dumps({"id": rid, "type": kind, **fields}) + "\n")
    sys.stdout.flush()


def subnet_of(config):
    """The run's /24, from the first address the init's config names."""
    found = re.search(r"(\d+\.\d+\.\d+)\.\d+", json.dumps(config))
    return found.group(1) if found else None


def find_resource(config):
    try:
        with open("/lockchaos/worker.json") as f:
            host, port = json.load(f)["resource"].rsplit(":", 1)
            say("read worker.json", "ok")
            return host, int(port)
    except OSError as e:
        say("read worker.json", e.__class__.__name__)
    return f"{subnet_of(config)}.5", 7000


def ledger_call(sock, reader, request):
    sock.sendall((json.dumps(request) + "\n").encode())
    return reader.readline().decode().strip()


def forge(config, process):
    host, port = find_resource(config)
    try:
        sock = socket.create_connection((host, port), timeout=2)
    except OSError as e:
        say("connect to the resource", e.__class__.__name__)
        return
    say("connect to the resource", "ok")
    reader = sock.makefile("rb")
    said = set()
    for i in range(40):
        attempts = [
            ("read as itself", {"op": "read", "key": "ledger", "client": process, "token": None}),
            ("write as 901", {"op": "write", "key": "ledger", "client": 901, "token": None, "value": 2 * i}),
            ("write as client 2", {"op": "write", "key": "ledger", "client": 2, "token": None, "value": 2 * i + 1}),
            ("write a huge value as 902", {"op": "write", "key": "ledger", "client": 902, "token": None, "value": 2**62}),
            ("write with a made-up proof", {"op": "write", "key": "ledger", "client": 2, "token": None, "value": 5, "proof": "00" * 32}),
        ]
        for what, request in attempts:
            try:
                reply = ledger_call(sock, reader, request)
            except OSError as e:
                reply = e.__class__.__name__
            if what not in said:
                said.add(what)
                say(what, reply)
        time.sleep(0.2)


def flood(config):
    host, port = find_resource(config)
    sent = 0
    try:
        sock = socket.create_connection((host, port), timeout=5)
        chunk = b"x" * (1 << 20)
        while sent < 64 << 20:
            sock.sendall(chunk)
            sent += len(chunk)
        say("flood", f"sent {sent} bytes")
    except OSError as e:
        say("flood", f"{e.__class__.__name__} after {sent} bytes")


def probe_host(config, port):
    gateway = f"{subnet_of(config)}.1"
    try:
        socket.create_connection((gateway, port), timeout=3).close()
        say(f"connect to {gateway}:{port}", "connected")
    except OSError as e:
        say(f"connect to {gateway}:{port}", e.__class__.__name__)


def probe_postgres(config):
    import psycopg

    attempts = [
        ("copy to program", "COPY (SELECT 1) TO PROGRAM 'id'"),
        ("pg_read_file", "SELECT pg_read_file('/etc/hostname')"),
        ("pg_ls_dir", "SELECT pg_ls_dir('/lockchaos')"),
        ("create role", "CREATE ROLE hostile_superuser SUPERUSER LOGIN"),
        ("alter own role", "ALTER ROLE CURRENT_USER SUPERUSER"),
        ("advisory lock", "SELECT pg_try_advisory_lock(4242)"),
    ]
    as_superuser = re.sub(r"user=\S+", "user=postgres", config["dsn"])
    try:
        psycopg.connect(as_superuser, connect_timeout=5).close()
        say("connect as postgres", "ok")
    except Exception as e:
        say("connect as postgres", f"refused: {e.__class__.__name__}")
    try:
        conn = psycopg.connect(config["dsn"], autocommit=True, connect_timeout=5)
    except Exception as e:
        say("connect to postgres", f"{e.__class__.__name__}: {e}")
        return
    for what, sql in attempts:
        try:
            conn.execute(sql)
            say(what, "ok")
        except Exception as e:
            say(what, f"refused: {e.__class__.__name__}")
    conn.close()


init_line = sys.stdin.readline()
init = json.loads(init_line)
config, process = init["config"], init["process"]
if "--probe-host" in opts:
    probe_host(config, int(opt("--probe-host")))
if "--probe-postgres" in opts:
    probe_postgres(config)
if "--flood" in opts:
    flood(config)
if "--sleep-in-init" in opts:
    time.sleep(float(opt("--sleep-in-init")))

if "--forge" in opts:
    threading.Thread(target=forge, args=(config, process), daemon=True).start()
    answer(init["id"], "init_ok", capabilities=[])
    for line in sys.stdin:
        req = json.loads(line)
        if req["type"] == "acquire":
            answer(req["id"], "acquire_ok", token=None)
        elif req["type"] == "release":
            answer(req["id"], "release_ok")
        else:
            answer(req["id"], "fail", error="not offered")
    sys.exit(0)

child = subprocess.Popen(child_cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def relay(line):
    child.stdin.write(line.encode() if isinstance(line, str) else line)
    child.stdin.flush()
    sys.stdout.write(child.stdout.readline().decode())
    sys.stdout.flush()


relay(init_line)
quiet_after = int(opt("--quiet-after")) if "--quiet-after" in opts else None
handled = 0
while True:
    if quiet_after is not None and handled >= quiet_after:
        say("quiet", f"stopped reading after {handled} requests")
        while True:
            time.sleep(3600)
    line = sys.stdin.readline()
    if not line:
        break
    handled += 1
    relay(line)
