//! Runs that did not finish: `lockchaos check` on their folders, and `lockchaos clean`
//! finishing a run whose lockchaos process was killed with SIGKILL (nothing of it could clean up).
//!
//! The first test needs no Docker: it checks run folders written here. The second runs
//! redis-single-pause for real, kills lockchaos while a worker's container is frozen, and runs `clean`.

mod common;

use common::made_up_run::{self, run_folder};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn lockchaos(args: &[&str], path: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos")).args(args).arg(path).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn check_merges_a_run_folders_own_files_and_a_cut_short_run_never_checks_valid() {
    let tmp = tempfile::tempdir().unwrap();

    // A run that finished: its history alone decides.
    let finished = run_folder(tmp.path(), "finished", true, Some(json!({"interrupted": false, "outcome": "safe"})));
    let (code, out, err) = lockchaos(&["check"], &finished);
    assert_eq!(code, Some(0), "a finished safe run checks valid: {out}{err}");
    assert!(out.contains(": valid (12 events)"), "{out}");

    // Interrupted (Ctrl-C, or finished by clean): results.json says unknown, and so must check.
    let interrupted = run_folder(tmp.path(), "interrupted", true, Some(json!({"interrupted": true, "outcome": "unknown"})));
    let (code, out, err) = lockchaos(&["check"], &interrupted);
    assert_eq!(code, Some(2), "an interrupted run's history cannot vouch for safety: {out}{err}");
    assert!(out.contains(": unknown (12 events)") && out.contains("interrupted"), "the reason is printed: {out}");
    let (code, out, _) = lockchaos(&["check", "--json"], &interrupted);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((code, &v["outcome"], &v["properties"]["outcome"]), (Some(2), &json!("unknown"), &json!("valid")), "{v}");
    assert!(v["cut_short"].as_str().is_some_and(|r| r.contains("interrupted")), "{v}");

    // Killed: no history.jsonl, no results.json. check merges the parties' files itself, does
    // not write into the folder, and says unknown: the run never finished.
    let killed = run_folder(tmp.path(), "killed", false, None);
    let (code, out, err) = lockchaos(&["check"], &killed);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(out.contains(": unknown (12 events)") && out.contains("never finished"), "{out}{err}");
    assert!(!err.contains("No such file"), "{err}");
    assert!(!killed.join("history.jsonl").exists(), "check must not write into the run folder");

    // The merge is of the parties' files, not of a stale history.jsonl: a lost update that only
    // the per-party files hold is found.
    let cut = run_folder(tmp.path(), "cut", true, None);
    made_up_run::append(&cut.join("resource.jsonl"), &made_up_run::lost_update());
    let (code, out, err) = lockchaos(&["check"], &cut);
    assert_eq!(code, Some(1), "a violation stands whether or not the run finished: {out}{err}");
    assert!(out.contains(": invalid (13 events)"), "{out}");
}

/// The run id and folder: run.json appears once the run folder exists (before containers start).
fn wait_for_run(store: &Path, scenario: &str, limit: Duration) -> (String, PathBuf) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(run) = std::fs::read_dir(store.join(scenario)).ok().and_then(|mut d| d.next()).and_then(|e| e.ok()) {
            if let Ok(v) = std::fs::read_to_string(run.path().join("run.json")).map(|t| serde_json::from_str::<Value>(&t).unwrap()) {
                return (v["run_id"].as_str().unwrap().to_string(), run.path().canonicalize().unwrap());
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{scenario}: no run.json within {limit:?}");
}

/// The first fault the nemesis started: its target.
fn wait_for_fault_start(dir: &Path, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let text = std::fs::read_to_string(dir.join("nemesis.jsonl")).unwrap_or_default();
        if let Some(start) = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|e| e["value"] == "start") {
            return start["node"].as_str().unwrap().to_string();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no fault started within {limit:?}");
}

fn docker(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(out.status.success(), "docker {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Host PID and state (ps STAT) of every process in the run's containers.
fn run_processes(run_id: &str) -> Vec<(u32, String)> {
    let ids = docker(&["ps", "-q", "--filter", &format!("label=lockchaos.run={run_id}")]);
    let mut procs = vec![];
    for id in ids.split_whitespace() {
        for line in docker(&["top", id, "-o", "pid,stat"]).lines().skip(1) {
            let mut fields = line.split_whitespace();
            if let (Some(pid), Some(stat)) = (fields.next(), fields.next()) {
                procs.push((pid.parse().unwrap(), stat.to_string()));
            }
        }
    }
    procs
}

/// State letter of a host process now, None when it is gone.
fn state_now(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().next()?.chars().next()
}

#[test]
fn a_kill_9d_run_can_be_checked_and_clean_finishes_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let store = tempfile::Builder::new().prefix("orphan-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .current_dir(&root)
        .args(["scenario", "redis-single-pause", "--quiet", "--time-limit", "30", "--store"])
        .arg(store.path())
        .env("CI", "true")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (run_id, dir) = wait_for_run(store.path(), "redis-single-pause", Duration::from_secs(120));
    let paused = wait_for_fault_start(&dir, Duration::from_secs(120));
    // The pause freezes the client's container (docker pause): wait until it shows.
    let deadline = Instant::now() + Duration::from_secs(10);
    let container = format!("lockchaos-{run_id}-{paused}");
    while docker(&["inspect", "-f", "{{.State.Paused}}", &container]).trim() != "true" {
        assert!(Instant::now() < deadline, "{paused} is not frozen");
        std::thread::sleep(Duration::from_millis(100));
    }
    let processes = run_processes(&run_id);
    assert!(!processes.is_empty());
    child.kill().unwrap(); // SIGKILL: no teardown, no heal, no results
    child.wait().unwrap();
    assert!(!dir.join("history.jsonl").exists() && !dir.join("results.json").exists());

    // Before clean: check merges the parties' files and cannot say valid.
    let (code, out, err) = lockchaos(&["check", "--json"], &dir);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("check of the killed run's folder: {e}: {out}{err}"));
    assert!(v["events"].as_u64() > Some(10), "{v}");
    assert!(v["outcome"] != "valid" && code != Some(0), "a killed run cannot vouch for safety: {v}");

    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos")).arg("clean").output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains(&run_id) && said.contains(&dir.display().to_string()), "clean says which run it finished and where: {said}");

    let label = format!("label=lockchaos.run={run_id}");
    assert_eq!(docker(&["ps", "-aq", "--filter", &label]).trim(), "", "containers left");
    assert_eq!(docker(&["network", "ls", "-q", "--filter", &label]).trim(), "", "networks left");
    // Every process of the run is gone, the frozen ones too.
    for (pid, _) in &processes {
        assert!(matches!(state_now(*pid), None | Some('Z')), "process {pid} of the run is still there");
    }
    for file in ["history.jsonl", "results.json", "report.html", "logs/client-1.log"] {
        assert!(dir.join(file).exists(), "clean did not write {file}: {said}");
    }
    let r: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(r["interrupted"], true, "{r}");
    assert!(r["outcome"] == "unknown" || r["outcome"] == "violation", "never safe: {}", r["outcome"]);
    assert_eq!(r["run_id"], run_id.as_str());
    let index = std::fs::read_to_string(store.path().join("index.html")).unwrap();
    assert!(index.contains(dir.file_name().unwrap().to_str().unwrap()), "the store's index lists the run");

    // After clean: check agrees with results.json.
    let (code, out, err) = lockchaos(&["check", "--json"], &dir);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let want = if r["outcome"] == "violation" { ("invalid", Some(1)) } else { ("unknown", Some(2)) };
    assert_eq!((v["outcome"].as_str().unwrap(), code), want, "{v}");
}
