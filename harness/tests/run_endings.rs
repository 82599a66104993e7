//! How runs end, for real (Docker, the node image, Redis): a run whose faults did not all take
//! effect is unknown, never a match; a trigger waits as long as the workload lasts; a killed
//! client comes back as a new process and random faults pick live targets; Ctrl-C and SIGTERM
//! heal an active pause before teardown and record the clients.

mod common;

use checker::{EventType, Process};
use results::{FaultPhase, Outcome, WorkerFate};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A redis-single scenario with `clients`, a short section, and these nemesis tables.
fn scenario(expect: &str, clients: u32, nemesis: &str) -> String {
    format!(
        "description = \"test\"\nexpect = \"{expect}\"\nbackend = \"redis-single\"\nclients = {clients}\ntime_limit_secs = 60\n\
         [lock]\nttl_ms = 2000\nacquire_timeout_ms = 2000\n[workload]\nwork_ms = 100\nthink_ms = 20\nop_timeout_ms = 1000\n{nemesis}"
    )
}

/// Nemesis events of `fault` in the order recorded: (phase, target, error).
fn nemesis_events(history: &[checker::Event], fault: &str) -> Vec<(FaultPhase, String, Option<String>)> {
    history
        .iter()
        .filter(|e| e.f == fault)
        .filter_map(|e| FaultPhase::of_event(e).map(|p| (p, e.node.clone().unwrap_or_default(), e.error.clone())))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn faults_that_do_not_take_effect_make_the_run_unknown() {
    let dir = tempfile::tempdir().unwrap();
    // client-1 is killed at 0.5 s and comes back only after the run: a step waiting for its
    // grant from 3.5 s on never fires (3 s later: a loaded machine may start the client, and so
    // kill it, well after 0.5 s).
    let never = common::scenario_file(
        dir.path(),
        "never-fires",
        &scenario(
            "safe",
            2,
            "[[nemesis.timeline]]\nat_ms = 500\nfault = \"kill\"\ntarget = \"client-1\"\nduration_ms = 60000\n\
             [[nemesis.timeline]]\nat_ms = 3500\nfault = \"pause\"\ntarget = \"client-1\"\nduration_ms = 500\nwhen = \"acquired\"\nby = \"client-1\"\n",
        ),
    );
    // The same pause twice, the second while the first is on.
    let twice = common::scenario_file(
        dir.path(),
        "already-on",
        &scenario(
            "safe",
            2,
            "[[nemesis.timeline]]\nat_ms = 1000\nfault = \"pause\"\ntarget = \"client-2\"\nduration_ms = 3000\n\
             [[nemesis.timeline]]\nat_ms = 2000\nfault = \"pause\"\ntarget = \"client-2\"\nduration_ms = 500\n",
        ),
    );
    // A kill of the holder finds none: the only client is dead from 0.5 s on.
    let no_holder = common::scenario_file(
        dir.path(),
        "no-holder",
        &scenario(
            "safe",
            1,
            "[[nemesis.timeline]]\nat_ms = 500\nfault = \"kill\"\ntarget = \"client-1\"\nduration_ms = 60000\n\
             [[nemesis.timeline]]\nat_ms = 2000\nfault = \"kill\"\ntarget = \"holder\"\nduration_ms = 500\n",
        ),
    );
    let (never, twice, no_holder) = tokio::join!(common::run(&never, 6), common::run(&twice, 6), common::run(&no_holder, 6));

    for (run, fault, step, why) in [
        (&never, "pause", "nemesis.timeline[1] (pause on client-1, due at 3500 ms)", "client-1 was never granted the lock"),
        (&twice, "pause", "nemesis.timeline[1] (pause on client-2, due at 2000 ms)", "the same fault is already on"),
        (&no_holder, "kill", "nemesis.timeline[1] (kill on ", "no client entered its critical section"),
    ] {
        let r = &run.results;
        assert_eq!((r.outcome, r.matches_expectation), (Outcome::Unknown, false), "{}: {:?}", r.scenario, r.not_applied);
        assert_eq!(r.not_applied.len(), 1, "{:?}", r.not_applied);
        assert!(r.not_applied[0].starts_with(step) && r.not_applied[0].contains(why), "{:?}", r.not_applied);
        // The history says so too: the step is recorded as skipped.
        assert!(nemesis_events(&run.history, fault).iter().any(|(p, _, _)| *p == FaultPhase::Skipped), "{}", r.scenario);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trigger_waits_as_long_as_the_workload_lasts() {
    let dir = tempfile::tempdir().unwrap();
    // client-2 is cut off from 0.5 s to 9 s: the step due at 2 s (time enough for the cut to be
    // in place on a busy machine), waiting for client-2's grant, fires only after the cut heals,
    // long past the 5 s a trigger used to wait.
    let late = common::scenario_file(
        dir.path(),
        "late-trigger",
        &scenario(
            "safe",
            2,
            "[[nemesis.timeline]]\nat_ms = 500\nfault = \"partition\"\ntarget = \"client-2\"\nfrom = [\"n1\"]\nduration_ms = 8500\n\
             [[nemesis.timeline]]\nat_ms = 2000\nfault = \"pause\"\ntarget = \"client-2\"\nduration_ms = 300\nwhen = \"acquired\"\nby = \"client-2\"\n",
        ),
    );
    let run = common::run(&late, 14).await;
    let r = &run.results;
    assert!(r.not_applied.is_empty(), "{:?}", r.not_applied);
    assert_eq!((r.outcome, r.matches_expectation), (Outcome::Safe, true), "{:?}", r.warnings);
    let at = |f: &str, phase: FaultPhase| {
        run.history.iter().find(|e| e.f == f && FaultPhase::of_event(e) == Some(phase)).map(|e| e.time).expect("recorded")
    };
    let (cut, healed, paused) = (at("partition", FaultPhase::Start), at("partition", FaultPhase::Stop), at("pause", FaultPhase::Start));
    assert!(paused > healed, "it fired once client-2 could be granted the lock again: paused {paused} ns, cut healed {healed} ns");
    assert!(paused - cut > 7_000_000_000, "and long after the step fell due");
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_clients_come_back_as_new_processes_and_random_faults_pick_live_ones() {
    let dir = tempfile::tempdir().unwrap();
    // client-1 is killed from 1 s to 7 s; meanwhile pauses are drawn every ~0.5 s among the
    // clients, and client-1 (down) must never be their target.
    let text = scenario(
        "safe",
        3,
        "[[nemesis.timeline]]\nat_ms = 1000\nfault = \"kill\"\ntarget = \"client-1\"\nduration_ms = 6000\n\
         [nemesis.random]\nfaults = [\"pause\"]\ntarget = \"random-client\"\nstart_ms = 1500\ninterval_ms = [200, 400]\nduration_ms = [100, 300]\n",
    );
    let run = common::run(&common::scenario_file(dir.path(), "kill-and-pauses", &text), 10).await;
    let r = &run.results;
    assert!(r.not_applied.is_empty() && r.warnings.is_empty(), "{:?} {:?}", r.not_applied, r.warnings);
    assert_eq!((r.outcome, r.matches_expectation), (Outcome::Safe, true));

    // Process 1 died at the kill; client-1 came back as process 4 (1 + 3 clients) and finished.
    let fate = |p: u64| r.workers.iter().find(|w| w.process == p).map(|w| (w.name.as_str(), w.status));
    assert_eq!(fate(1), Some(("client-1", WorkerFate::Died)), "{:?}", r.workers);
    assert_eq!(fate(4), Some(("client-1", WorkerFate::Finished)), "{:?}", r.workers);
    assert!(run.dir.join("workers/client-1-p4.jsonl").exists());
    let acquired_by = |p: u64| run.history.iter().any(|e| e.process == Process::Client(p) && e.f == "acquire" && e.kind == EventType::Ok);
    assert!(acquired_by(4), "the new process took part");

    // No pause landed on client-1 while it was down.
    let kill = nemesis_events(&run.history, "kill");
    assert_eq!(
        kill.iter().map(|(p, t, e)| (*p, t.as_str(), e.is_none())).collect::<Vec<_>>(),
        [(FaultPhase::Start, "client-1", true), (FaultPhase::Stop, "client-1", true)]
    );
    let (down, up) = {
        let times: Vec<u64> = run.history.iter().filter(|e| e.f == "kill").map(|e| e.time).collect();
        (times[0], times[1])
    };
    let pauses: Vec<&checker::Event> = run.history.iter().filter(|e| e.f == "pause").collect();
    assert!(pauses.len() > 4, "random pauses were drawn: {}", pauses.len());
    for p in pauses.iter().filter(|p| p.time > down && p.time < up) {
        assert_ne!(p.node.as_deref(), Some("client-1"), "a pause hit the dead client at {} ns", p.time);
        assert!(p.error.is_none(), "{:?}", p.error);
    }
}

/// Runs the binary on redis-single-pause (`command`: `scenario`, or a `matrix` of it and
/// redlock-baseline), sends `signal` once its first pause is on, and returns (exit code,
/// results.json, nemesis.jsonl lines, run id).
fn interrupt_during_a_pause(signal: nix::sys::signal::Signal, store: &Path, command: &str) -> (Option<i32>, Value, Vec<Value>, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let what: &[&str] = match command {
        "matrix" => &["matrix", "--scenarios", "redis-single-pause,redlock-baseline"],
        _ => &["scenario", "redis-single-pause"],
    };
    let child = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .current_dir(&root)
        .args(what)
        .args(["--quiet", "--time-limit", "20", "--store"])
        .arg(store)
        .env("CI", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let nemesis = || -> Vec<Value> {
        let Some(run) = std::fs::read_dir(store.join("redis-single-pause")).ok().and_then(|mut d| d.next()).and_then(|e| e.ok()) else {
            return vec![];
        };
        let text = std::fs::read_to_string(run.path().join("nemesis.jsonl")).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    while !nemesis().iter().any(|e| e["f"] == "pause" && e["value"] == "start") {
        assert!(Instant::now() < deadline, "no pause started");
        std::thread::sleep(Duration::from_millis(100));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let out = child.wait_with_output().unwrap();
    let results: Value = serde_json::from_str(&std::fs::read_to_string(store.join("latest/results.json")).unwrap()).unwrap();
    let run_id = results["run_id"].as_str().unwrap().to_string();
    (out.status.code(), results, nemesis(), run_id)
}

#[test]
fn ctrl_c_and_sigterm_heal_an_active_pause_and_record_the_clients() {
    use nix::sys::signal::Signal;
    let stores = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let endings: Vec<_> = std::thread::scope(|s| {
        let runs: Vec<_> = [(Signal::SIGINT, "scenario"), (Signal::SIGTERM, "scenario"), (Signal::SIGINT, "matrix")]
            .into_iter()
            .zip(&stores)
            .map(|((signal, command), store)| s.spawn(move || interrupt_during_a_pause(signal, store.path(), command)))
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    // Ctrl-C stops a whole matrix, not only the scenario it interrupted.
    assert!(!stores[2].path().join("redlock-baseline").exists(), "the matrix went on to the next scenario after Ctrl-C");
    for (code, results, nemesis, run_id) in endings {
        assert_eq!(code, Some(2), "an interrupted run is unknown: {results}");
        assert_eq!(results["interrupted"], true);
        assert_ne!(results["outcome"], "safe");
        // The pause was healed: every start has its stop, recorded after it.
        let phases: Vec<&str> = nemesis.iter().filter(|e| e["f"] == "pause").map(|e| e["value"].as_str().unwrap()).collect();
        assert_eq!(phases.iter().filter(|p| **p == "start").count(), phases.iter().filter(|p| **p == "stop").count(), "{phases:?}");
        assert_eq!(phases.last(), Some(&"stop"), "{phases:?}");
        // The clients are recorded.
        let workers = results["workers"].as_array().unwrap();
        assert_eq!(workers.len(), 2, "{workers:?}");
        // Nothing of the run is left.
        let left = Command::new("docker").args(["ps", "-aq", "--filter", &format!("label=lockchaos.run={run_id}")]).output().unwrap();
        assert!(left.stdout.is_empty(), "containers left: {}", String::from_utf8_lossy(&left.stdout));
    }
}

#[test]
fn a_reader_that_goes_away_does_not_end_the_run_before_its_teardown() {
    // `lockchaos scenario … | head -1`: stdout and stderr are pipes whose reader is gone before
    // the first line. Writing to them must not end the run (a panic would leave its containers).
    let store = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .current_dir(&root)
        .args(["scenario", "redis-single-baseline", "--time-limit", "2", "--store"])
        .arg(store.path())
        .env("CI", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    let results: Value = serde_json::from_str(&std::fs::read_to_string(store.path().join("latest/results.json")).unwrap()).unwrap();
    assert_eq!((status.code(), &results["outcome"]), (Some(0), &Value::from("safe")), "{results}");
    let run_id = results["run_id"].as_str().unwrap();
    let left = Command::new("docker").args(["ps", "-aq", "--filter", &format!("label=lockchaos.run={run_id}")]).output().unwrap();
    assert!(left.stdout.is_empty(), "containers left: {}", String::from_utf8_lossy(&left.stdout));
}
