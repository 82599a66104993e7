//! A client program is a stranger (docs/threat-model.md): real runs (Docker, the node image,
//! real servers) of `clients/tests/hostile.py`, a program written to cheat, each showing that
//! what it tries does not shape the verdict or leave its container: forging and flooding the
//! resource's record, reaching the host, taking over the Postgres server, going quiet, and
//! keeping `init` waiting past the run's end.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository, whose `clients/` holds the hostile program and the reference clients.
fn project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Two clients of `command` on `backend` for `secs` seconds.
fn scenario(dir: &Path, backend: &str, command: &str, secs: u64) -> PathBuf {
    let text = format!(
        "description = \"a hostile client program\"\nexpect = \"safe\"\nbackend = \"{backend}\"\nclients = 2\ntime_limit_secs = {secs}\n\
         [client]\ncommand = {command}\nproject = \"{}\"\n[lock]\nttl_ms = 10000\nacquire_timeout_ms = 3000\n\
         [workload]\nwork_ms = 50\nthink_ms = 20\n",
        project().display()
    );
    let file = dir.join("hostile.toml");
    std::fs::write(&file, text).unwrap();
    file
}

/// A finished run: exit code, what lockchaos printed, results.json, the run folder.
struct Ran {
    code: Option<i32>,
    said: String,
    results: Value,
    dir: PathBuf,
    _store: tempfile::TempDir,
}

impl Ran {
    /// What client-K's program said on stderr (its `hostile:` lines among them).
    fn client_log(&self, k: u32) -> String {
        std::fs::read_to_string(self.dir.join(format!("logs/client-{k}.log"))).unwrap_or_default()
    }
}

fn run(backend: &str, command: &str, secs: u64) -> Ran {
    let store = tempfile::tempdir().unwrap();
    let file = scenario(store.path(), backend, command, secs);
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .args(["scenario", file.to_str().unwrap(), "--quiet", "--store", store.path().join("runs").to_str().unwrap()])
        .env("CI", "true")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let runs = store.path().join("runs");
    let dir = runs.join(std::fs::read_link(runs.join("latest")).unwrap_or_else(|e| panic!("no run folder ({e}): {said}")));
    let results = std::fs::read_to_string(dir.join("results.json")).unwrap_or_else(|e| panic!("no results.json ({e}): {said}"));
    Ran { code: out.status.code(), said, results: serde_json::from_str(&results).unwrap(), dir, _store: store }
}

fn hostile(args: &str) -> String {
    let args: Vec<String> = args.split_whitespace().map(|a| format!("\"{a}\"")).collect();
    format!("[\"python3\", \"clients/tests/hostile.py\", {}]", args.join(", "))
}

#[test]
fn a_program_cannot_forge_or_flood_the_resources_record() {
    let ran = run("redis-single", &hostile("--flood --forge"), 8);
    let log = ran.client_log(1);
    assert!(log.contains("hostile: read worker.json: PermissionError"), "the worker's configuration is the worker's:\n{log}");
    assert!(log.contains("hostile: connect to the resource: ok"), "the test did not test: it never reached the resource:\n{log}");
    for forged in ["write as 901", "write as client 2", "write a huge value as 902", "write with a made-up proof", "read as itself"] {
        let said = log.lines().find(|l| l.contains(&format!("hostile: {forged}:"))).unwrap_or_else(|| panic!("no `{forged}` in\n{log}"));
        assert!(said.contains("refused"), "{said}");
    }
    // The record holds the workers' requests only, each under its own process.
    let workers: Vec<u64> = ran.results["workers"].as_array().unwrap().iter().map(|w| w["process"].as_u64().unwrap()).collect();
    let record = std::fs::read_to_string(ran.dir.join("resource.jsonl")).unwrap();
    assert!(!record.is_empty(), "no request reached the ledger: {}", ran.said);
    for line in record.lines() {
        let event: Value = serde_json::from_str(line).unwrap();
        let client = event["client"].as_u64().unwrap();
        assert!(workers.contains(&client), "a record in the name of {client}, no worker of {workers:?}: {line}");
        assert_ne!(event["value"].as_i64(), Some(1 << 62), "the forged huge value is in the record: {line}");
        // Client 2's writes are the values its worker wrote.
        if client == 2 && event["f"] == "write" {
            let own = std::fs::read_to_string(ran.dir.join("workers/client-2.jsonl")).unwrap();
            let value = event["value"].as_i64().unwrap();
            assert!(own.contains(&format!("\"f\":\"write\",\"key\":\"ledger\",\"value\":{value}")), "client 2 never wrote {value}");
        }
    }
    let refused = &ran.results["refused_requests"];
    assert!(refused["count"].as_u64().unwrap_or(0) >= 5, "{refused}");
    let first = refused["first"].to_string();
    assert!(first.contains("a line longer than 16384 bytes"), "the flood is not named first: {first}");
    assert_ne!(ran.results["outcome"], "safe", "a run with refused requests cannot be safe: {}", ran.said);
    assert_ne!(ran.code, Some(0), "{}", ran.said);
    assert!(ran.said.contains("the resource refused"), "the summary does not say so: {}", ran.said);
}

#[test]
fn a_program_cannot_reach_the_host() {
    // A service on the machine running lockchaos, on every address (the Docker bridge's too).
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let ran = run("redis-single", &hostile(&format!("--probe-host {port} -- python3 clients/toy_lock.py")), 6);
    let log = ran.client_log(1);
    let probe = log.lines().find(|l| l.contains(&format!(":{port}: "))).unwrap_or_else(|| panic!("no probe in\n{log}"));
    assert!(!probe.ends_with("connected"), "{probe}");
    assert!(listener.accept().is_err(), "a connection reached the host's listener");
    assert_eq!(ran.results["outcome"], "safe", "the confined client still works: {}", ran.said);
}

#[test]
fn a_program_cannot_take_over_the_postgres_server() {
    let ran = run("postgres-session", &hostile("--probe-postgres -- python3 clients/psycopg_session.py"), 6);
    let log = ran.client_log(1);
    for refused in ["connect as postgres", "copy to program", "pg_read_file", "pg_ls_dir", "create role", "alter own role"] {
        let said = log.lines().find(|l| l.contains(&format!("hostile: {refused}:"))).unwrap_or_else(|| panic!("no `{refused}` in\n{log}"));
        assert!(said.contains("refused"), "{said}");
    }
    assert!(log.contains("hostile: advisory lock: ok"), "the clients' role must still lock:\n{log}");
    assert_eq!(ran.results["outcome"], "safe", "the reference client works as the clients' role: {}", ran.said);
}

#[test]
fn a_program_that_stops_reading_ends_the_run_unknown_naming_it() {
    let ran = run("redis-single", &hostile("--quiet-after 3 -- python3 clients/toy_lock.py"), 10);
    assert_eq!(ran.code, Some(2), "{}", ran.said);
    assert_eq!(ran.results["outcome"], "unknown");
    let warnings = ran.results["warnings"].to_string();
    assert!(warnings.contains("stopped reading its input"), "{warnings}");
}

#[test]
fn a_program_slow_to_answer_init_gets_one_reason_whatever_the_time_limit() {
    let ran = run("redis-single", &hostile("--sleep-in-init 60 -- python3 clients/toy_lock.py"), 8);
    assert_eq!(ran.code, Some(2), "{}", ran.said);
    assert_eq!(ran.results["outcome"], "unknown");
    let warnings = ran.results["warnings"].to_string();
    assert!(warnings.contains("init failed: no answer to request 0 within"), "{warnings}\n{}", ran.said);
    assert!(!ran.said.contains("cannot send SIGKILL"), "{}", ran.said);
}
