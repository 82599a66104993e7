//! The soak: many runs of mixed scenarios ending every way a run can end (its time limit,
//! Ctrl-C or SIGTERM at a random moment, SIGKILL at a random moment followed by
//! `lockchaos clean`), then the machine and the store are inspected: nothing of any run is left
//! (containers, networks, stopped processes, iptables rules, libfaketime in any process), every
//! run folder can be checked, and no result claims more than its run saw.
//!
//! Ignored by default (minutes of runs). `cargo test --release -p harness --test soak --
//! --ignored --nocapture`; LOCKCHAOS_SOAK_RUNS (default 100) and LOCKCHAOS_SOAK_JOBS (runs at
//! once, default 3) size it, LOCKCHAOS_SOAK_SEED picks the endings.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const SCENARIOS: [&str; 8] = [
    "redis-single-pause",
    "redis-single-partition",
    "redis-single-restart-no-persistence",
    "redlock-clock-jump",
    "redis-sentinel-failover",
    "etcd-pause-fenced",
    "postgres-xact-pause",
    "postgres-session-pooler",
];
const TIME_LIMIT_SECS: u64 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ending {
    /// The run reaches its time limit.
    Normal,
    /// SIGINT (Ctrl-C) after this many ms.
    Interrupt(u64),
    /// SIGTERM after this many ms.
    Terminate(u64),
    /// SIGKILL after this many ms, then `lockchaos clean`.
    Kill(u64),
}

impl Ending {
    fn name(self) -> &'static str {
        match self {
            Ending::Normal => "normal",
            Ending::Interrupt(_) => "Ctrl-C",
            Ending::Terminate(_) => "SIGTERM",
            Ending::Kill(_) => "SIGKILL + clean",
        }
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn lockchaos() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockchaos"));
    cmd.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("..")).env("CI", "true");
    cmd
}

/// One run, ended as `ending`; returns its exit code (None when killed).
fn run_one(scenario: &str, seed: u64, ending: Ending, store: &Path) -> Option<i32> {
    let mut child = lockchaos()
        .args(["scenario", scenario, "--quiet", "--time-limit", &TIME_LIMIT_SECS.to_string(), "--seed", &seed.to_string(), "--store"])
        .arg(store)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let signal = match ending {
        Ending::Normal => None,
        Ending::Interrupt(ms) => Some((ms, nix::sys::signal::Signal::SIGINT)),
        Ending::Terminate(ms) => Some((ms, nix::sys::signal::Signal::SIGTERM)),
        Ending::Kill(ms) => Some((ms, nix::sys::signal::Signal::SIGKILL)),
    };
    if let Some((ms, signal)) = signal {
        let deadline = Instant::now() + Duration::from_millis(ms);
        while Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = nix::sys::signal::kill(pid, signal);
    }
    let status = child.wait().unwrap();
    if matches!(ending, Ending::Kill(_)) {
        // Its lockchaos is gone: plain clean finishes it (and leaves the soak's live runs alone).
        let out = lockchaos().arg("clean").output().unwrap();
        assert!(out.status.success(), "clean: {}", String::from_utf8_lossy(&out.stderr));
    }
    status.code()
}

/// Lines of `cmd`'s output that contain `needle`.
fn lines_with(cmd: &mut Command, needle: &str) -> Vec<String> {
    let out = cmd.output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    out.lines().filter(|l| l.contains(needle)).map(String::from).collect()
}

#[test]
#[ignore = "minutes of runs: cargo test --release -p harness --test soak -- --ignored --nocapture"]
fn soak_every_ending() {
    let runs = env_u64("LOCKCHAOS_SOAK_RUNS", 100);
    let jobs = env_u64("LOCKCHAOS_SOAK_JOBS", 3).max(1);
    let mut rng = StdRng::seed_from_u64(env_u64("LOCKCHAOS_SOAK_SEED", 7));
    let plan: Vec<(String, u64, Ending)> = (0..runs)
        .map(|i| {
            let scenario = SCENARIOS[i as usize % SCENARIOS.len()].to_string();
            // Signals land anywhere from provisioning to the report.
            let at = rng.random_range(500..(TIME_LIMIT_SECS * 1000 + 6000));
            let ending = match rng.random_range(0..10) {
                0..=3 => Ending::Normal,
                4..=5 => Ending::Interrupt(at),
                6 => Ending::Terminate(at),
                _ => Ending::Kill(at),
            };
            (scenario, rng.random(), ending)
        })
        .collect();
    let store = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let next = Mutex::new(0usize);
    let done: Mutex<Vec<(Ending, Option<i32>)>> = Mutex::new(vec![]);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap();
                    *n += 1;
                    *n - 1
                };
                let Some((scenario, seed, ending)) = plan.get(i) else { break };
                let code = run_one(scenario, *seed, *ending, store.path());
                done.lock().unwrap().push((*ending, code));
            });
        }
    });
    let elapsed = started.elapsed();

    // Nothing of any run is left.
    let run_folders: Vec<PathBuf> = std::fs::read_dir(store.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir() && !e.path().is_symlink())
        .flat_map(|scenario| std::fs::read_dir(scenario.path()).unwrap().filter_map(|e| e.ok()).map(|e| e.path()))
        .collect();
    let mut leftovers = vec![];
    for dir in &run_folders {
        let Ok(run) = std::fs::read_to_string(dir.join("run.json")) else { continue };
        let run_id = serde_json::from_str::<Value>(&run).unwrap()["run_id"].as_str().unwrap().to_string();
        let label = format!("label=lockchaos.run={run_id}");
        leftovers.extend(lines_with(Command::new("docker").args(["ps", "-a", "--filter", &label, "--format", "{{.Names}}"]), ""));
        leftovers.extend(lines_with(Command::new("docker").args(["network", "ls", "--filter", &label, "--format", "{{.Name}}"]), ""));
    }
    leftovers.retain(|l| !l.is_empty());
    let stopped = lines_with(Command::new("ps").args(["-eo", "stat=,pid=,comm="]), "")
        .into_iter()
        .filter(|l| l.trim_start().starts_with('T'))
        .count();
    let faketime = lines_with(Command::new("sh").args(["-c", "grep -l libfaketime /proc/[0-9]*/maps 2>/dev/null"]), "maps").len();
    // Our networks are 10.213.X.0/24: once none is left, no iptables rule may name one.
    let any_network_left =
        !lines_with(Command::new("docker").args(["network", "ls", "--filter", "label=lockchaos.run", "-q"]), "").is_empty();
    let rules = if any_network_left { None } else { Some(lines_with(&mut Command::new("iptables-save"), "10.213.").len()) };

    // Every run folder can be checked, and no result claims more than its run saw.
    let mut unreadable = vec![];
    let mut overclaims = vec![];
    let mut outcomes: BTreeMap<(&str, String), u32> = BTreeMap::new();
    let mut without_results = 0;
    // (matched their expectation, all) among the runs that were not cut short.
    let mut whole = (0u32, 0u32);
    for dir in &run_folders {
        let out = lockchaos().arg("check").arg(dir).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        if !matches!(out.status.code(), Some(0..=2)) || text.starts_with("error:") {
            unreadable.push(format!("{}: {text}", dir.display()));
        }
        // A run killed after its teardown (while checking) has no containers left for clean to
        // find it by: no results.json, which claims nothing; check above still read it.
        let Ok(results) = std::fs::read_to_string(dir.join("results.json")) else {
            without_results += 1;
            continue;
        };
        let r: Value = serde_json::from_str(&results).unwrap();
        let outcome = r["outcome"].as_str().unwrap().to_string();
        if (r["interrupted"] == true || r["not_applied"].as_array().is_some_and(|n| !n.is_empty())) && outcome == "safe" {
            overclaims.push(format!("{}: {outcome} though interrupted or with faults not applied", dir.display()));
        }
        let ended = if r["interrupted"] == true { "cut short" } else { "whole" };
        if ended == "whole" {
            whole.1 += 1;
            whole.0 += u32::from(r["matches_expectation"] == true);
        }
        *outcomes.entry((ended, outcome)).or_default() += 1;
    }

    let done = done.into_inner().unwrap();
    let mut endings: BTreeMap<&str, u32> = BTreeMap::new();
    for (ending, _) in &done {
        *endings.entry(ending.name()).or_default() += 1;
    }
    println!("soak: {} runs ({jobs} at once) in {:.0} s; {} run folders", done.len(), elapsed.as_secs_f64(), run_folders.len());
    println!("endings: {endings:?}");
    println!("outcomes: {outcomes:?}; whole runs that matched their expectation: {}/{}", whole.0, whole.1);
    println!(
        "left behind: {} containers/networks, {stopped} stopped processes, {faketime} processes with libfaketime, iptables rules naming 10.213.: {}",
        leftovers.len(),
        rules.map_or("not checked (another lockchaos network exists)".to_string(), |n| n.to_string())
    );
    println!(
        "run folders: {} (runs ended before theirs was made: {}), without results.json: {without_results}, that could not be checked: {}; results claiming more than their run saw: {}",
        run_folders.len(),
        done.len() - run_folders.len(),
        unreadable.len(),
        overclaims.len()
    );
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert_eq!((stopped, faketime, rules.unwrap_or(0)), (0, 0, 0));
    assert!(unreadable.is_empty(), "{unreadable:#?}");
    assert!(overclaims.is_empty(), "{overclaims:#?}");
}
