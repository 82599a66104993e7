//! Client programs in real runs (Docker, the node image, a real Redis): a program that breaks
//! the protocol or cannot start ends the run unknown with exit 2 naming it; one that crashes
//! comes back as a new process; one that tries to write the run's records cannot; a pause
//! freezes the program's own children. Each test builds a project of its own (scenarios/ and
//! clients/, with the repository's toy client) so the misbehaving scenarios stay out of the
//! shipped catalog.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};

/// A project folder with `clients/toy_lock.py`, any extra client files, and one scenario.
fn project(clients: &[(&str, &str)], scenario: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("scenarios")).unwrap();
    std::fs::create_dir_all(dir.path().join("clients")).unwrap();
    let toy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients/toy_lock.py");
    std::fs::copy(toy, dir.path().join("clients/toy_lock.py")).unwrap();
    for (name, text) in clients {
        std::fs::write(dir.path().join("clients").join(name), text).unwrap();
    }
    let file = dir.path().join("scenarios/program.toml");
    std::fs::write(&file, scenario).unwrap();
    (dir, file)
}

/// Two clients of `command`; a TTL well past the tests' pauses, so a paused holder keeps its lock
/// and the run stays safe.
fn scenario(command: &str, extra: &str) -> String {
    format!(
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\nclients = 2\ntime_limit_secs = 10\n\
         [client]\ncommand = {command}\n[lock]\nttl_ms = 10000\nacquire_timeout_ms = 5000\n[workload]\nwork_ms = 100\nthink_ms = 20\n{extra}"
    )
}

/// Runs the binary on a scenario file: exit code, output, results.json.
fn run_binary(file: &Path, store: &Path) -> (Option<i32>, String, Value) {
    let (code, text) = common::run_cli(file, store);
    let results = std::fs::read_to_string(store.join("latest/results.json")).unwrap_or_else(|e| panic!("no results.json ({e}): {text}"));
    (code, text, serde_json::from_str(&results).unwrap())
}

const NOT_JSON: &str = r#"
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps({"id": req["id"], "type": "init_ok"}) if req["type"] == "init" else "granted!", flush=True)
"#;

#[test]
fn a_program_that_breaks_the_protocol_or_cannot_start_ends_the_run_unknown_naming_it() {
    let cases = [
        ("[\"python3\", \"clients/not_json.py\"]", "client program `python3 clients/not_json.py` answered `granted!`, which is not JSON"),
        ("[\"clients/no_such_program\"]", "cannot start client program `clients/no_such_program`"),
    ];
    std::thread::scope(|s| {
        for (command, expected) in cases {
            s.spawn(move || {
                let (dir, file) = project(&[("not_json.py", NOT_JSON)], &scenario(command, ""));
                let (code, text, r) = run_binary(&file, &dir.path().join("store"));
                assert_eq!(code, Some(2), "{command}: {text}");
                assert_eq!(r["outcome"], "unknown", "{command}: {text}");
                let said = r["warnings"].to_string();
                assert!(said.contains(expected) && text.contains(expected), "{command}: expected `{expected}` in {said} and {text}");
            });
        }
    });
}

#[tokio::test]
async fn a_program_that_crashes_comes_back_as_a_new_process() {
    let (_dir, file) = project(&[], &scenario("[\"python3\", \"clients/toy_lock.py\", \"--crash-after\", \"6\"]", ""));
    let run = common::run(file.to_str().unwrap(), 10).await;
    let workers = &run.results.workers;
    let died: Vec<_> = workers.iter().filter(|w| w.exit_code == Some(4)).collect();
    assert!(!died.is_empty(), "{workers:?}");
    // The crashed process's open operation is info; a later process (K + 2n) takes over.
    let open = run.history.iter().filter(|e| e.process == checker::Process::Client(died[0].process) && e.kind == checker::EventType::Info);
    assert!(open.count() >= 1, "no info for the crashed process");
    assert!(run.history.iter().any(|e| matches!(e.process, checker::Process::Client(p) if p > 2)), "no new process in the history");
    assert_ne!(run.results.outcome, results::Outcome::Unknown, "{:?}", run.results.warnings);
}

#[tokio::test]
async fn a_program_cannot_write_the_records_and_a_pause_freezes_its_children() {
    let pause = "[[nemesis.timeline]]\nat_ms = 2000\nfault = \"pause\"\ntarget = \"client-1\"\nduration_ms = 3000\n";
    let (_dir, file) = project(&[], &scenario("[\"python3\", \"clients/toy_lock.py\", \"--tamper\", \"--ticker\"]", pause));
    let run = common::run(file.to_str().unwrap(), 8).await;
    let log = std::fs::read_to_string(run.dir.join("logs/client-1.log")).unwrap();
    // Its own event file is the worker's (root's), the run folder is not there at all.
    for said in ["tamper: /lockchaos/events.jsonl: PermissionError", "tamper: /lockchaos/run/resource.jsonl: FileNotFoundError"] {
        assert!(log.contains(said), "expected `{said}` in the client's log:\n{log}");
    }
    assert!(!log.contains("tamper: wrote"), "{log}");
    let own = std::fs::read_to_string(run.dir.join("workers/client-1.jsonl")).unwrap();
    assert!(!own.contains("forged"), "the program wrote the worker's event file");
    assert_eq!(run.results.outcome, results::Outcome::Safe, "{:?}", run.results.warnings);
    // The ticker, a child of the program, printed nothing while the container was frozen.
    let ticks: Vec<u64> = log.lines().filter_map(|l| l.strip_prefix("tick ")?.trim().parse().ok()).collect();
    let longest = ticks.windows(2).map(|w| w[1].saturating_sub(w[0])).max().unwrap_or(0);
    assert!(ticks.len() > 20 && longest >= 2_500_000_000, "{} ticks, longest gap {longest} ns", ticks.len());
}
