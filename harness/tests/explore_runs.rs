//! `lockchaos explore` against real servers: a short campaign on a lock that a frozen holder
//! breaks finds the lost update, shrinks it, confirms it, and hands back a scenario that
//! `lockchaos scenario` reproduces; explore.html renders in headless Chromium; Ctrl-C during a
//! campaign ends the run it lands in as a run ends, leaves no container behind and keeps what
//! was found.

mod tools;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A Redis lock whose holder works half its TTL (safe without faults: the key outlives every
/// section): a holder frozen in its section for longer than the TTL loses an update, and the
/// first search run tries that.
const BASE: &str = r#"description = "explore test base: single Redis, work half the TTL"
expect = "safe"
backend = "redis-single"
clients = 2
time_limit_secs = 8

[lock]
ttl_ms = 1000
acquire_timeout_ms = 3000

[workload]
work_ms = 500
think_ms = 20

[resource]
mode = "unfenced"
"#;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn base(dir: &Path) -> PathBuf {
    let path = dir.join("explore-test-base.toml");
    std::fs::write(&path, BASE).unwrap();
    path
}

fn explore(base: &Path, store: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockchaos"));
    cmd.current_dir(root())
        .arg("explore")
        .arg(base)
        // 12 shrink runs: the search may find the lost update under up to four episodes, and
        // shrinking four to one at 2 of 2 takes 6 runs when every removal is kept and up to 6
        // more for removals refused (a clean CI once found four and ran out at 6 runs).
        .args(["--seed", "5", "--shrink-runs", "12", "--shrink-accept", "2/2", "--store"])
        .arg(store)
        .args(extra)
        .env("CI", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// The campaign folder (the only one in the store).
fn campaign(store: &Path) -> PathBuf {
    std::fs::read_dir(store.join("explore")).unwrap().next().unwrap().unwrap().path()
}

fn explore_json(store: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(campaign(store).join("explore.json")).unwrap()).unwrap()
}

/// Containers of runs whose folder is in `store`.
fn left_in(store: &Path) -> Vec<String> {
    let out = Command::new("docker")
        .args(["ps", "-a", "--filter", "label=lockchaos.run", "--format", "{{.Label \"lockchaos.run_dir\"}}"])
        .output()
        .unwrap();
    let store = store.canonicalize().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().filter(|dir| Path::new(dir).starts_with(&store)).map(String::from).collect()
}

#[test]
fn explore_finds_shrinks_and_confirms_a_lost_update_and_the_found_scenario_reproduces() {
    let scratch = tempfile::Builder::new().prefix("explore-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let store = scratch.path().join("store");
    let out = explore(&base(scratch.path()), &store, &["--runs", "3", "--confirm", "2", "--max-findings", "1"]).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "something found: {text}");
    let json = explore_json(&store);
    let found = &json["found"][0];
    assert_eq!((found["kind"].as_str(), found["property"].as_str()), (Some("safety"), Some("resource_safety")), "{json}");
    assert!(found["runs_to_find"].as_u64().unwrap() <= 3 && json["seed"] == 5 && json["strategy"] == "guided", "{json}");
    assert_eq!(found["schedule"].as_array().unwrap().len(), 1, "shrunk to the failing episode alone: {json}");
    assert!(found["story"].as_array().unwrap().iter().any(|l| l.as_str().unwrap().contains("lost")), "{json}");
    // Every run it made is in the store, each with its report.
    for run in std::iter::once(&found["found_in"]).chain(found["confirm_runs"].as_array().unwrap()) {
        assert!(store.join(run.as_str().unwrap()).join("report.html").exists(), "{run}");
    }
    assert!(left_in(&store).is_empty(), "containers left: {:?}", left_in(&store));

    // The finding is a normal scenario: it exits 0 exactly when the violation shows again.
    let scenario = campaign(&store).join(found["scenario"].as_str().unwrap());
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .current_dir(root())
        .arg("scenario")
        .arg(&scenario)
        .args(["--quiet", "--store"])
        .arg(&store)
        .env("CI", "true")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}\n{}", String::from_utf8_lossy(&out.stdout), std::fs::read_to_string(&scenario).unwrap());

    // explore.html as Chromium renders it: the finding, its schedule and its runs' links.
    let page = campaign(&store).join("explore.html");
    let browser = tools::chromium();
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let console: Vec<&str> = std::str::from_utf8(&out.stderr).unwrap_or("").lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console: {console:?}");
    assert!(dom.contains("<section class=\"finding\">") && dom.contains("resource_safety"), "{dom}");
    let link = format!("../../{}/report.html", found["found_in"].as_str().unwrap());
    assert!(dom.contains(&link), "no link {link}: {dom}");
}

#[test]
fn ctrl_c_during_explore_ends_its_run_as_a_run_ends_and_keeps_the_findings() {
    let scratch = tempfile::Builder::new().prefix("explore-stop-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let store = scratch.path().join("store");
    let child = explore(&base(scratch.path()), &store, &["--budget", "600", "--confirm", "10"]).spawn().unwrap();
    // Once a finding is written, the campaign confirms it: stop it there, mid-run.
    let deadline = Instant::now() + Duration::from_secs(300);
    let written = || {
        std::fs::read_dir(store.join("explore"))
            .ok()
            .and_then(|mut d| d.next())
            .is_some_and(|c| c.unwrap().path().join("found-1.toml").exists())
    };
    while !written() {
        assert!(Instant::now() < deadline, "nothing found in 300 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(4));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "a finding was kept: {text}");
    let json = explore_json(&store);
    assert_eq!(json["interrupted"], true, "{json}");
    assert_eq!(json["found"].as_array().unwrap().len(), 1, "{json}");
    assert!(json["confirm_runs"].as_u64().unwrap() < 10, "stopped before its confirmation ended: {json}");
    assert!(left_in(&store).is_empty(), "containers left: {:?}", left_in(&store));
    // Every run it made finished its folder (the one it landed in as an interrupted run).
    for run in std::fs::read_dir(store.join("explore-test-base-found-1")).unwrap() {
        assert!(run.unwrap().path().join("results.json").exists());
    }
}

/// `--client-env` with two versions: two campaigns, one after the other, with the same seed,
/// each named by its pin and each run in its own version's environment (the client's log says
/// which redis-py it imported).
#[test]
fn explore_with_two_client_versions_runs_one_campaign_per_version() {
    let scratch = tempfile::Builder::new().prefix("explore-versions-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let store = scratch.path().join("store");
    let scenario = root().join("scenarios/redis-py-lock-release-retried.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .current_dir(root())
        .arg("explore")
        .arg(&scenario)
        .args([
            "--client-env",
            "redis==4.3.4,redis==8.2.0",
            "--seed",
            "5",
            "--runs",
            "1",
            "--confirm",
            "0",
            "--shrink-runs",
            "0",
            "--store",
        ])
        .arg(&store)
        .env("CI", "true")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(matches!(out.status.code(), Some(0 | 1)), "{text}");
    for version in ["4.3.4", "8.2.0"] {
        let name = format!("redis-py-lock-release-retried.redis-{version}");
        assert!(text.lines().any(|l| l.starts_with(&format!("explore {name}: "))), "no campaign of {name}: {text}");
        let runs: Vec<PathBuf> = std::fs::read_dir(store.join(format!("{name}-explore"))).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(runs.len(), 1, "one search run, nothing confirmed or shrunk: {runs:?}");
        let log = std::fs::read_to_string(runs[0].join("logs/client-1.log")).unwrap();
        assert!(log.contains(&format!("(redis-py {version})")), "{name}'s client imported another redis-py: {log}");
    }
    // Without a client program there is nothing to install a version for: one line, nothing run.
    let out = explore(&base(scratch.path()), &store, &["--client-env", "redis==8.2.0", "--runs", "1"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("has no client program"), "{text}");
}
