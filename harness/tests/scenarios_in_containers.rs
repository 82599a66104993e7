//! Each shipped scenario, run for real (Docker, the node image, Redis) with a short time limit,
//! plus the two ways a run can be cut short: a worker that dies, and Ctrl-C.
//! All cases run in parallel: every run has its own network, containers and run id.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the test does to the run while it is live.
#[derive(Clone, Copy)]
enum Disturb {
    Nothing,
    /// SIGKILL this worker's container after the given seconds.
    KillWorker(&'static str, u64),
    /// SIGINT to lockchaos after the given seconds (Ctrl-C).
    Interrupt(u64),
}

const RUNS_AT_ONCE: usize = 4;

struct Case {
    scenario: &'static str,
    secs: u64,
    disturb: Disturb,
    exit: i32,
    check: fn(&Value) -> Result<(), String>,
}

fn rs(r: &Value) -> &Value {
    &r["properties"]["resource_safety"]
}

fn ok_if(cond: bool, what: String) -> Result<(), String> {
    cond.then_some(()).ok_or(what)
}

const CASES: &[Case] = &[
    Case { scenario: "redis-single-baseline", secs: 6, disturb: Disturb::Nothing, exit: 0, check: |r| {
        ok_if(r["outcome"] == "safe" && rs(r)["lost_updates"] == 0 && rs(r)["accepted_writes"].as_u64() > Some(5), format!("expected safe with writes: {}", rs(r)))
    }},
    Case { scenario: "redis-single-pause", secs: 12, disturb: Disturb::Nothing, exit: 0, check: |r| {
        ok_if(r["outcome"] == "violation" && rs(r)["lost_updates"].as_u64() > Some(0), format!("expected lost updates: {}", rs(r)))
    }},
    Case { scenario: "redlock-baseline", secs: 6, disturb: Disturb::Nothing, exit: 0, check: |r| {
        ok_if(r["outcome"] == "safe" && rs(r)["accepted_writes"].as_u64() > Some(5), format!("expected safe with writes: {}", rs(r)))
    }},
    Case { scenario: "redlock-pause", secs: 12, disturb: Disturb::Nothing, exit: 0, check: |r| {
        ok_if(r["outcome"] == "violation" && rs(r)["lost_updates"].as_u64() > Some(0), format!("expected lost updates: {}", rs(r)))
    }},
    Case { scenario: "redlock-clock-jump", secs: 12, disturb: Disturb::Nothing, exit: 0, check: |r| {
        ok_if(r["outcome"] == "violation" && rs(r)["lost_updates"].as_u64() > Some(0), format!("expected lost updates: {}", rs(r)))
    }},
    Case { scenario: "postgres-session-pooler", secs: 10, disturb: Disturb::Nothing, exit: 0, check: |r| {
        ok_if(r["outcome"] == "violation" && rs(r)["lost_updates"].as_u64() > Some(0), format!("expected lost updates: {}", rs(r)))
    }},
    Case { scenario: "etcd-pause-fenced", secs: 12, disturb: Disturb::Nothing, exit: 0, check: |r| {
        ok_if(r["outcome"] == "safe" && rs(r)["rejected_writes"].as_u64() > Some(0), format!("expected stale writes rejected: {}", rs(r)))
    }},
    Case { scenario: "redis-sentinel-failover", secs: 12, disturb: Disturb::Nothing, exit: 0, check: |r| {
        ok_if(r["outcome"] == "violation" && rs(r)["lost_updates"].as_u64() > Some(0), format!("expected lost updates: {}", rs(r)))
    }},
    Case { scenario: "redis-single-restart-no-persistence", secs: 10, disturb: Disturb::Nothing, exit: 0, check: |r| {
        ok_if(r["outcome"] == "violation" && rs(r)["lost_updates"].as_u64() > Some(0), format!("expected lost updates: {}", rs(r)))
    }},
    Case { scenario: "redis-single-baseline", secs: 15, disturb: Disturb::KillWorker("client-2", 2), exit: 0, check: |r| {
        let w = &r["workers"][1];
        ok_if(w["name"] == "client-2" && w["status"] == "died" && w["exit_code"] == 137, format!("client-2 should be reported dead: {}", r["workers"]))
    }},
    Case { scenario: "redis-single-pause", secs: 20, disturb: Disturb::Interrupt(6), exit: 2, check: |r| {
        ok_if(r["interrupted"] == true && r["outcome"] != "safe", format!("expected an interrupted run: {} {}", r["interrupted"], r["outcome"]))
    }},
];

fn run_case(case: &Case, root: &Path, store: PathBuf) -> Result<String, String> {
    let name = case.scenario;
    // Waited for below on every path that returns a result; an early error return leaves the
    // run to finish on its own (its teardown still runs).
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .current_dir(root)
        .args(["scenario", name, "--quiet", "--time-limit", &case.secs.to_string(), "--store"])
        .arg(&store)
        .env("CI", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    match case.disturb {
        Disturb::Nothing => {}
        Disturb::KillWorker(worker, after) => {
            let (run_id, dir) = wait_for_run(&store, name, Duration::from_secs(60))?;
            wait_for_events(&dir.join("workers").join(format!("{worker}.jsonl")), Duration::from_secs(60))?;
            std::thread::sleep(Duration::from_secs(after));
            let container = format!("lockchaos-{run_id}-{worker}");
            let out = Command::new("docker").args(["kill", &container]).output().unwrap();
            if !out.status.success() {
                return Err(format!("{name}: docker kill {container}: {}", String::from_utf8_lossy(&out.stderr)));
            }
        }
        Disturb::Interrupt(after) => {
            let (_, dir) = wait_for_run(&store, name, Duration::from_secs(60))?;
            wait_for_events(&dir.join("workers/client-1.jsonl"), Duration::from_secs(60))?;
            std::thread::sleep(Duration::from_secs(after));
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let results = std::fs::read_to_string(store.join("latest/results.json"))
        .map_err(|e| format!("{name}: no results.json ({e}); output: {text}"))?;
    let r: Value = serde_json::from_str(&results).unwrap();
    let mut problems = vec![];
    if out.status.code() != Some(case.exit) {
        problems.push(format!("exit {:?}, expected {}", out.status.code(), case.exit));
    }
    if let Err(e) = (case.check)(&r) {
        problems.push(e);
    }
    let server_log = if name.starts_with("etcd") {
        "logs/n1-etcd.log"
    } else if name.starts_with("postgres") {
        "logs/n1-postgres.log"
    } else {
        "logs/n1-redis.log"
    };
    for file in ["history.jsonl", "report.html", "scenario.toml", "run.json", server_log, "workers/client-2.jsonl"] {
        if !store.join("latest").join(file).exists() {
            problems.push(format!("missing {file}"));
        }
    }
    let run_id = r["run_id"].as_str().unwrap_or_default().to_string();
    if problems.is_empty() {
        Ok(run_id)
    } else {
        Err(format!("{name}: {}; output: {text}", problems.join(", ")))
    }
}

/// The run id and folder: run.json appears once the run folder exists (before containers start).
fn wait_for_run(store: &Path, scenario: &str, limit: Duration) -> Result<(String, PathBuf), String> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(run) = std::fs::read_dir(store.join(scenario)).ok().and_then(|mut d| d.next()).and_then(|e| e.ok()) {
            if let Ok(text) = std::fs::read_to_string(run.path().join("run.json")) {
                let v: Value = serde_json::from_str(&text).unwrap();
                return Ok((v["run_id"].as_str().unwrap().to_string(), run.path()));
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!("{scenario}: no run.json within {limit:?}"))
}

/// Waits until a worker has written events: its container is up and working.
fn wait_for_events(path: &Path, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if std::fs::metadata(path).is_ok_and(|m| m.len() > 0) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!("no events in {} within {limit:?}", path.display()))
}

#[test]
fn scenarios_reach_their_outcome_and_every_ending_leaves_nothing_behind() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let store = tempfile::Builder::new().prefix("containers-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // At most RUNS_AT_ONCE runs share the machine: on 2 cores, a dozen runs at once slow Docker
    // exec so much that faults land seconds late, which tests the machine rather than lockchaos.
    let queue = std::sync::Mutex::new((0..CASES.len()).collect::<Vec<_>>());
    let results = std::sync::Mutex::new(vec![None; CASES.len()]);
    std::thread::scope(|scope| {
        for _ in 0..RUNS_AT_ONCE {
            scope.spawn(|| loop {
                let Some(i) = queue.lock().unwrap().pop() else { return };
                let outcome = run_case(&CASES[i], &root, store.path().join(format!("case-{i}")));
                results.lock().unwrap()[i] = Some(outcome);
            });
        }
    });
    let outcomes: Vec<Result<String, String>> = results.into_inner().unwrap().into_iter().map(|o| o.expect("every case ran")).collect();
    let mut failures: Vec<String> = outcomes.iter().filter_map(|o| o.clone().err()).collect();
    for run_id in outcomes.iter().filter_map(|o| o.as_ref().ok()) {
        let label = format!("label=lockchaos.run={run_id}");
        for what in [&["ps", "-aq", "--filter"][..], &["network", "ls", "-q", "--filter"][..]] {
            let out = Command::new("docker").args(what).arg(&label).output().unwrap();
            if !out.stdout.is_empty() {
                failures.push(format!("run {run_id} left: docker {} → {}", what.join(" "), String::from_utf8_lossy(&out.stdout)));
            }
        }
    }
    if !failures.is_empty() {
        // Keep the run folders: they are the evidence of what went wrong.
        let kept = store.keep();
        panic!("{}\n(run folders kept in {})", failures.join("\n"), kept.display());
    }
}
