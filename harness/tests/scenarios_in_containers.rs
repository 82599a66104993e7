//! Shipped scenarios of every backend, run for real (Docker, the node image, the servers) with
//! short time limits, plus the two ways a run can be cut short: a worker that dies, and Ctrl-C;
//! and a latency scenario, which runs where the kernel has netem and is refused where not.
//! All cases run in parallel: every run has its own network, containers and run id.
//!
//! Over 400 lines: half of it is the table of cases (one per scenario, each with its check);
//! the other tests (latency, matrix and JUnit, the report in Chromium, clean) share its helpers
//! for starting the binary and waiting for a run.

mod tools;

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

/// No fault failed to start or stop.
fn no_warnings(r: &Value) -> bool {
    r["warnings"].as_array().is_some_and(|w| w.is_empty())
}

fn ok_if(cond: bool, what: String) -> Result<(), String> {
    cond.then_some(()).ok_or(what)
}

/// A fenced scenario's check: safe because the resource rejected the stale write, every fault
/// started and healed.
fn stale_write_rejected(r: &Value) -> Result<(), String> {
    ok_if(
        r["outcome"] == "safe" && rs(r)["rejected_writes"].as_u64() > Some(0) && no_warnings(r),
        format!("expected the stale write rejected: {} {}", rs(r), r["warnings"]),
    )
}

/// Lost updates, and every fault started and healed.
fn lost_updates_cleanly(r: &Value) -> Result<(), String> {
    lost_updates(r)?;
    ok_if(no_warnings(r), format!("expected no warnings: {}", r["warnings"]))
}

/// The check of most violation scenarios: the resource lost acknowledged updates.
fn lost_updates(r: &Value) -> Result<(), String> {
    ok_if(r["outcome"] == "violation" && rs(r)["lost_updates"].as_u64() > Some(0), format!("expected lost updates: {}", rs(r)))
}

/// A killed holder's scenario: safe, matched, and its `freed_after_ms` claim measured and met.
fn claims_met(r: &Value) -> Result<(), String> {
    let freed = &r["properties"]["availability"]["freed_after_kill"];
    ok_if(
        r["outcome"] == "safe"
            && r["matches_expectation"] == true
            && freed.as_array().is_some_and(|f| !f.is_empty())
            && r["claims"].as_array().is_some_and(|c| !c.is_empty() && c.iter().all(|c| c["met"] == true)),
        format!("expected a measured, claimed freed_after_ms: {freed} {}", r["claims"]),
    )
}

/// The workloads that name their operations: exactly once held (`violated`: did not), with
/// no warnings.
fn exactly_once(r: &Value, violated: bool) -> Result<(), String> {
    let once = &r["properties"]["exactly_once"];
    let twice = once["applied_twice"].as_u64().unwrap_or(0);
    let held = r["outcome"] == "safe" && twice == 0 && once["applied"].as_u64() > Some(3);
    let broke = r["outcome"] == "violation" && twice > 0;
    ok_if(
        if violated { broke } else { held } && no_warnings(r),
        format!("expected exactly once {}: {once} {}", if violated { "violated" } else { "held" }, r["warnings"]),
    )
}

const CASES: &[Case] = &[
    Case {
        scenario: "redis-single-baseline",
        secs: 6,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            ok_if(
                r["outcome"] == "safe" && rs(r)["lost_updates"] == 0 && rs(r)["accepted_writes"].as_u64() > Some(5),
                format!("expected safe with writes: {}", rs(r)),
            )
        },
    },
    Case { scenario: "redis-single-pause", secs: 12, disturb: Disturb::Nothing, exit: 0, check: lost_updates },
    Case {
        scenario: "redlock-baseline",
        secs: 6,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            ok_if(r["outcome"] == "safe" && rs(r)["accepted_writes"].as_u64() > Some(5), format!("expected safe with writes: {}", rs(r)))
        },
    },
    Case { scenario: "redlock-pause", secs: 12, disturb: Disturb::Nothing, exit: 0, check: lost_updates },
    Case { scenario: "redlock-clock-jump", secs: 12, disturb: Disturb::Nothing, exit: 0, check: lost_updates },
    Case { scenario: "postgres-session-pooler", secs: 10, disturb: Disturb::Nothing, exit: 0, check: lost_updates },
    Case {
        scenario: "etcd-pause-fenced",
        secs: 12,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            ok_if(
                r["outcome"] == "safe" && rs(r)["rejected_writes"].as_u64() > Some(0),
                format!("expected stale writes rejected: {}", rs(r)),
            )
        },
    },
    // The holder's section is 20 s: the failover has that long, however the Sentinels' votes go.
    Case { scenario: "redis-sentinel-failover", secs: 22, disturb: Disturb::Nothing, exit: 0, check: lost_updates },
    Case { scenario: "redis-single-restart-no-persistence", secs: 10, disturb: Disturb::Nothing, exit: 0, check: lost_updates },
    // A killed holder: Postgres frees its session lock as soon as the server sees the connection
    // end; the scenario's claim (freed_after_ms in 0..500) must hold for the run to match.
    Case { scenario: "postgres-session-holder-killed", secs: 10, disturb: Disturb::Nothing, exit: 0, check: claims_met },
    // Clients pinned to one member each; the holder's member is isolated from the other two.
    Case { scenario: "etcd-minority-partition-unfenced", secs: 14, disturb: Disturb::Nothing, exit: 0, check: lost_updates },
    // Every member killed at once and restarted from its data: the lock key survives.
    Case {
        scenario: "etcd-cluster-restart",
        secs: 10,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            ok_if(
                r["outcome"] == "safe"
                    && rs(r)["accepted_writes"].as_u64() > Some(2)
                    && no_warnings(r)
                    && r["not_applied"].as_array().is_some_and(|n| n.is_empty()),
                format!("expected safe with the kill applied: {} {} {}", rs(r), r["warnings"], r["not_applied"]),
            )
        },
    },
    // A waiter frozen past its lease while it waits: etcd 3.4's Mutex, not reading its key
    // again, takes the lock beside the next holder; since 3.5.0 the waiter gives up the wait.
    Case { scenario: "etcd-expired-waiter-unchecked", secs: 18, disturb: Disturb::Nothing, exit: 0, check: lost_updates_cleanly },
    Case {
        scenario: "etcd-expired-waiter",
        secs: 18,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            ok_if(
                r["outcome"] == "safe" && no_warnings(r) && r["not_applied"].as_array().is_some_and(|n| n.is_empty()),
                format!("expected safe with the pause applied: {} {} {}", rs(r), r["warnings"], r["not_applied"]),
            )
        },
    },
    // The article's redis-py snippet as a client program: the lost update from the article's code.
    Case { scenario: "redis-article-pause", secs: 12, disturb: Disturb::Nothing, exit: 0, check: lost_updates_cleanly },
    // No lock: the conditional write stays safe under a pause; without its version check it loses updates.
    Case {
        scenario: "cas-pause",
        secs: 12,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            ok_if(
                r["outcome"] == "safe" && rs(r)["accepted_writes"].as_u64() > Some(3) && no_warnings(r),
                format!("expected safe with writes: {} {}", rs(r), r["warnings"]),
            )
        },
    },
    Case { scenario: "cas-no-version-pause", secs: 12, disturb: Disturb::Nothing, exit: 0, check: lost_updates_cleanly },
    // The idempotency key answers the resends from its record; checked and stored apart, it applies them again.
    Case {
        scenario: "idempotency-duplicate-delivery",
        secs: 10,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            exactly_once(r, false)?;
            let answered = r["properties"]["exactly_once"]["answered_from_record"].as_u64().unwrap_or(0);
            ok_if(answered > 0, format!("expected duplicates answered from the record: {}", r["properties"]["exactly_once"]))
        },
    },
    Case { scenario: "idempotency-key-apart", secs: 10, disturb: Disturb::Nothing, exit: 0, check: |r| exactly_once(r, true) },
    // Jobs claimed by insert: the loser fails at once; checked first and recorded after, both do it.
    Case {
        scenario: "unique-claim-pause",
        secs: 10,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            exactly_once(r, false)?;
            let refused = r["properties"]["exactly_once"]["claims_refused"].as_u64().unwrap_or(0);
            ok_if(refused > 0, format!("expected claims refused: {}", r["properties"]["exactly_once"]))
        },
    },
    Case { scenario: "unique-claim-check-then-do", secs: 10, disturb: Disturb::Nothing, exit: 0, check: |r| exactly_once(r, true) },
    // Partitioning: each client on its own key, a plain write, nothing lost.
    Case {
        scenario: "partitioned-pause",
        secs: 10,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            let keys = &rs(r)["final_values"];
            ok_if(
                r["outcome"] == "safe" && keys["ledger-1"].as_i64() > Some(0) && keys["ledger-2"].as_i64() > Some(0) && no_warnings(r),
                format!("expected safe on two keys: {}", rs(r)),
            )
        },
    },
    Case { scenario: "redis-single-partition", secs: 12, disturb: Disturb::Nothing, exit: 0, check: lost_updates_cleanly },
    Case { scenario: "etcd-partition-fenced", secs: 14, disturb: Disturb::Nothing, exit: 0, check: stale_write_rejected },
    Case { scenario: "etcd-pause-fenced-postgres-table", secs: 12, disturb: Disturb::Nothing, exit: 0, check: stale_write_rejected },
    Case { scenario: "redis-single-clock-strobe", secs: 10, disturb: Disturb::Nothing, exit: 0, check: lost_updates_cleanly },
    Case {
        scenario: "postgres-xact-partition",
        secs: 10,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            // The cut-off holder keeps the lock until the server's idle timeout (1 s) ends its session.
            let gap = r["properties"]["availability"]["longest_gap_ms"].as_f64().unwrap_or(0.0);
            ok_if(
                r["outcome"] == "safe" && rs(r)["accepted_writes"].as_u64() > Some(5) && gap > 900.0 && no_warnings(r),
                format!("expected safe with a ~1 s gap: gap {gap} ms, {} {}", rs(r), r["warnings"]),
            )
        },
    },
    Case {
        scenario: "postgres-session-partition",
        // The first cut lands at about 3 s and the server drops the session some 8 s later.
        secs: 16,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            // The server's keep-alives (5 s + 3 × 1 s, [server.postgres]) end the silent holder's session.
            let gap = r["properties"]["availability"]["longest_gap_ms"].as_f64().unwrap_or(0.0);
            ok_if(
                r["outcome"] == "safe" && (7500.0..9500.0).contains(&gap) && no_warnings(r),
                format!("expected safe with a ~8 s gap: gap {gap} ms, {} {}", rs(r), r["warnings"]),
            )
        },
    },
    Case {
        scenario: "postgres-xact-pooler",
        secs: 8,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            ok_if(
                r["outcome"] == "safe" && rs(r)["accepted_writes"].as_u64() > Some(5) && no_warnings(r),
                format!("expected safe with writes through PgBouncer: {} {}", rs(r), r["warnings"]),
            )
        },
    },
    Case {
        scenario: "postgres-failover",
        secs: 10,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            ok_if(
                r["outcome"] == "safe"
                    && rs(r)["accepted_writes"].as_u64() > Some(5)
                    && rs(r)["acknowledged_missing"] == 0
                    && no_warnings(r),
                format!("expected a clean failover: {} {}", rs(r), r["warnings"]),
            )
        },
    },
    Case { scenario: "postgres-session-external-resource-kill", secs: 12, disturb: Disturb::Nothing, exit: 0, check: lost_updates_cleanly },
    // ZooKeeper: a holder frozen past its session timeout loses its znode to the expiry, and
    // the woken holder's write is lost; cut off, its write carries the older czxid and is rejected.
    Case { scenario: "zookeeper-pause", secs: 12, disturb: Disturb::Nothing, exit: 0, check: lost_updates_cleanly },
    Case { scenario: "zookeeper-partition-fenced", secs: 14, disturb: Disturb::Nothing, exit: 0, check: stale_write_rejected },
    // A killed holder's session outlives its connection until the session timeout: the claim
    // (freed_after_ms) must hold for the run to match.
    Case { scenario: "zookeeper-holder-killed", secs: 10, disturb: Disturb::Nothing, exit: 0, check: claims_met },
    // The leader's server killed in a holder's section: a new leader, the znodes kept.
    Case {
        scenario: "zookeeper-leader-failover",
        secs: 10,
        disturb: Disturb::Nothing,
        exit: 0,
        check: |r| {
            ok_if(
                r["outcome"] == "safe"
                    && rs(r)["accepted_writes"].as_u64() > Some(2)
                    && no_warnings(r)
                    && r["not_applied"].as_array().is_some_and(|n| n.is_empty()),
                format!("expected safe with the leader killed: {} {} {}", rs(r), r["warnings"], r["not_applied"]),
            )
        },
    },
    // A client killed from outside, with no fault of the run on it: the run no longer tests
    // what it says, so it cannot vouch for safety (unknown, exit 2), and says who died.
    Case {
        scenario: "redis-single-baseline",
        secs: 15,
        disturb: Disturb::KillWorker("client-2", 2),
        exit: 2,
        check: |r| {
            let w = &r["workers"][1];
            ok_if(
                w["name"] == "client-2"
                    && w["status"] == "died"
                    && w["exit_code"] == 137
                    && r["outcome"] == "unknown"
                    && r["warnings"].to_string().contains("client-2 died with no fault on it (exit code Some(137))"),
                format!("client-2 should be reported dead and the run unknown: {} {} {}", r["workers"], r["outcome"], r["warnings"]),
            )
        },
    },
    Case {
        scenario: "redis-single-pause",
        secs: 20,
        disturb: Disturb::Interrupt(6),
        exit: 2,
        check: |r| {
            ok_if(
                r["interrupted"] == true && r["outcome"] != "safe",
                format!("expected an interrupted run: {} {}", r["interrupted"], r["outcome"]),
            )
        },
    },
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
    let results =
        std::fs::read_to_string(store.join("latest/results.json")).map_err(|e| format!("{name}: no results.json ({e}); output: {text}"))?;
    let r: Value = serde_json::from_str(&results).unwrap();
    let mut problems = vec![];
    if out.status.code() != Some(case.exit) {
        problems.push(format!("exit {:?}, expected {}", out.status.code(), case.exit));
    }
    if let Err(e) = (case.check)(&r) {
        problems.push(e);
    }
    let backend = r["backend"].as_str().unwrap_or_default();
    let server_log = if backend.starts_with("etcd") {
        "logs/n1-etcd.log"
    } else if backend == "zookeeper" {
        "logs/n1-zookeeper.log"
    } else if backend.starts_with("postgres") {
        "logs/n1-postgres.log"
    } else {
        "logs/n1-redis.log"
    };
    for file in ["history.jsonl", "report.html", "scenario.toml", "run.json", server_log, "workers/client-2.jsonl"] {
        if !store.join("latest").join(file).exists() {
            problems.push(format!("missing {file}"));
        }
    }
    // Where the run's time went: every stage it entered, in order, each with its duration.
    if let Ok(run) = std::fs::read_to_string(store.join("latest/run.json")) {
        let run: Value = serde_json::from_str(&run).unwrap();
        let stages: Vec<&str> =
            run["stages"].as_array().map(|a| a.iter().filter_map(|s| s["stage"].as_str()).collect()).unwrap_or_default();
        let whole = ["image", "provision", "backend", "clients", "workload", "stop", "teardown", "check", "report"];
        // An interrupted run may stop short of the workload; its stages are still a prefix.
        let prefix_of_whole =
            stages.len() >= 4 && whole.starts_with(&stages[..stages.len() - 3]) && stages.ends_with(&["teardown", "check", "report"]);
        let timed = run["stages"].as_array().is_some_and(|a| a.iter().all(|s| s["secs"].as_f64().is_some_and(|t| t >= 0.0)));
        if !(prefix_of_whole && timed) {
            problems.push(format!("run.json stages: {}", run["stages"]));
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

/// Whether this kernel has netem, asked independently of lockchaos: tc in a throwaway node
/// container with NET_ADMIN.
fn kernel_has_netem() -> bool {
    let out = Command::new("docker")
        .args(["run", "--rm", "--cap-add", "NET_ADMIN", "--label", "lockchaos.run=netem-probe", "lockchaos-node:bookworm"])
        .args(["tc", "qdisc", "add", "dev", "eth0", "root", "netem", "delay", "1ms"])
        .output()
        .unwrap();
    out.status.success()
}

#[test]
fn a_latency_fault_runs_where_the_kernel_has_netem_and_is_refused_where_not() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let store = tempfile::Builder::new().prefix("latency-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .current_dir(&root)
        .args(["scenario", "redlock-latency", "--quiet", "--time-limit", "6", "--store"])
        .arg(store.path())
        .env("CI", "true")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if kernel_has_netem() {
        assert_eq!(out.status.code(), Some(0), "netem is here, the run should match its expectation: {stderr}");
        let results: Value = serde_json::from_str(&std::fs::read_to_string(store.path().join("latest/results.json")).unwrap()).unwrap();
        assert!(no_warnings(&results), "{}", results["warnings"]);
    } else {
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("latency faults are unsupported here: this kernel has no netem qdisc"), "{stderr}");
        let workers = store.path().join("latest/workers/client-1.jsonl");
        assert!(!workers.exists(), "no client may start when the fault is refused");
    }
    // Other tests' runs may be live: look only for this run's containers.
    let run: Value = serde_json::from_str(&std::fs::read_to_string(store.path().join("latest/run.json")).unwrap()).unwrap();
    let label = format!("label=lockchaos.run={}", run["run_id"].as_str().unwrap());
    let mine = Command::new("docker").args(["ps", "-aq", "--filter", &label]).output().unwrap();
    assert!(mine.stdout.is_empty(), "the refused run left containers: {}", String::from_utf8_lossy(&mine.stdout));
}

#[test]
fn the_matrix_measures_its_cells_writes_junit_and_lays_out_the_article_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let store = tempfile::Builder::new().prefix("matrix-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let junit = store.path().join("junit.xml");
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .current_dir(&root)
        .args(["matrix", "--scenarios", "redis-single-base*,postgres-session-holder-killed", "--runs", "2", "--time-limit", "6"])
        .args(["--quiet", "--store"])
        .arg(store.path())
        .arg("--junit")
        .arg(&junit)
        .env("CI", "true")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{text}");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(store.path().join("matrix.json")).unwrap()).unwrap();
    let cell = m["cells"].as_array().unwrap().iter().find(|c| c["row"] == "redis-single").unwrap_or_else(|| panic!("{m}"));
    assert_eq!((cell["column"].as_str(), cell["runs"].as_u64()), (Some("baseline"), Some(2)), "{m}");
    assert!(cell["matches_expectation"] == true && cell["acknowledged_updates"].as_u64() > Some(0), "{m}");
    for report in cell["reports"].as_array().unwrap() {
        assert!(store.path().join(report.as_str().unwrap()).exists(), "matrix links a missing report {report}");
    }
    let html = std::fs::read_to_string(store.path().join("matrix.html")).unwrap();
    assert!(html.contains("<table id=\"matrix\">"), "{html}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches(" classname=\"redis-single-baseline\"").count(), 2, "{xml}");

    // The article's table, as Chromium renders it: all 40 cells (8 rows, ZooKeeper's two among
    // them), each measured, not measured in this matrix, or unable to run here with the reason;
    // the killed holder's cell measured.
    let (dom, console) = render_in_chromium(&chromium(), &store.path().join("table.html"), &["--dump-dom".into()]);
    assert!(console.is_empty(), "console: {console:?}");
    let cells: Vec<&str> = dom.split("<td ").skip(1).collect();
    assert_eq!(cells.len(), 40, "{dom}");
    for c in &cells {
        let measured = c.starts_with("class=\"agrees\"") || c.starts_with("class=\"disagrees\"");
        let explained = (c.starts_with("class=\"cannot-run\"") && c.contains("cannot run here: "))
            || (c.starts_with("class=\"not-measured\"") && c.contains("not measured: "));
        assert!(measured || explained, "a cell with neither a measurement nor a reason: {c}");
    }
    let dies = cells
        .iter()
        .find(|c| c.contains("data-system=\"PostgresSession\"") && c.contains("data-column=\"HolderDies\""))
        .unwrap_or_else(|| panic!("{dom}"));
    assert!(dies.starts_with("class=\"agrees\"") && dies.contains("freed after ") && dies.contains("report.html"), "{dies}");
    let t: Value = serde_json::from_str(&std::fs::read_to_string(store.path().join("table.json")).unwrap()).unwrap();
    assert_eq!(t["cells"].as_array().unwrap().iter().map(|c| c["runs"].as_u64().unwrap()).sum::<u64>(), 2, "{t}");

    // `matrix merge` lays the stored runs out again, elsewhere, without running anything: the
    // same cells and counts, every report still reachable.
    let merged = store.path().join("merged");
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .args(["matrix", "merge"])
        .arg(store.path())
        .arg("--store")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let read = |dir: &Path, file: &str| -> Value { serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap() };
    let counts = |m: &Value| -> Vec<(String, String, u64, u64)> {
        m["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["row"].to_string(), c["column"].to_string(), c["runs"].as_u64().unwrap(), c["runs_matched"].as_u64().unwrap()))
            .collect()
    };
    assert_eq!(counts(&read(&merged, "matrix.json")), counts(&m));
    let table_runs = |t: &Value| -> Vec<u64> { t["cells"].as_array().unwrap().iter().map(|c| c["runs"].as_u64().unwrap()).collect() };
    assert_eq!(table_runs(&read(&merged, "table.json")), table_runs(&t));
    for report in read(&merged, "matrix.json")["cells"].as_array().unwrap().iter().flat_map(|c| c["reports"].as_array().unwrap().clone()) {
        let path = merged.join(report.as_str().unwrap());
        assert!(path.exists(), "merged matrix links a missing report {}", path.display());
    }
}

use tools::chromium;

/// Loads a page headless; returns the rendered DOM and the console lines Chromium logged.
fn render_in_chromium(browser: &str, page: &Path, extra: &[String]) -> (String, Vec<String>) {
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"])
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let console = String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.contains(":CONSOLE")).map(String::from).collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

#[test]
fn a_real_report_renders_in_headless_chromium_with_its_timeline_and_violations() {
    let browser = chromium();
    let scratch = tempfile::Builder::new().prefix("chromium-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // The console check must be able to fail: a page that logs an error is caught.
    let bad = scratch.path().join("bad.html");
    std::fs::write(&bad, "<html><body><script>console.error('boom')</script></body></html>").unwrap();
    let (_, console) = render_in_chromium(&browser, &bad, &["--dump-dom".into()]);
    assert!(console.iter().any(|l| l.contains("boom")), "console messages are not seen: {console:?}");

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let store = scratch.path().join("store");
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .current_dir(&root)
        .args(["scenario", "redis-single-pause", "--quiet", "--time-limit", "10", "--store"])
        .arg(&store)
        .env("CI", "true")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let run = store.join("latest").canonicalize().unwrap();
    let (dom, console) = render_in_chromium(&browser, &run.join("report.html"), &["--dump-dom".into()]);
    assert!(console.is_empty(), "the report logged to the console: {console:?}");
    let section = |id: &str| {
        let start = dom.find(&format!("<section id=\"{id}\">")).unwrap_or_else(|| panic!("no section #{id} in the rendered page"));
        let end = dom[start..].find("</section>").map(|e| start + e).unwrap_or(dom.len());
        dom[start..end].to_string()
    };
    let timeline = section("timeline");
    assert!(timeline.contains("<svg class=\"timeline\""), "{timeline}");
    assert_eq!(timeline.matches("<g class=\"lane\"").count(), 2, "a lane per client: {timeline}");
    assert!(timeline.contains("class=\"hold overlap\"") && timeline.contains("<g class=\"fault\">"), "{timeline}");
    for plot in ["plot-latency", "plot-throughput"] {
        assert!(timeline.contains(&format!("<figure class=\"{plot}\"><svg")), "no {plot}: {timeline}");
    }
    let violations = section("violations");
    assert!(violations.matches("<li class=\"violation\">").count() >= 1, "{violations}");
    let shot = run.join("report.png");
    render_in_chromium(&browser, &run.join("report.html"), &["--window-size=1400,2400".into(), format!("--screenshot={}", shot.display())]);
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 20_000, "screenshot {} is {size} bytes", shot.display());
}

/// This process's `lockchaos.controller` value (PID and start time), as lockchaos writes it.
fn own_controller_label() -> String {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let start = stat.rsplit_once(')').unwrap().1.split_whitespace().nth(19).unwrap().to_string();
    format!("{}:{start}", std::process::id())
}

#[test]
fn clean_removes_what_dead_runs_left_and_leaves_live_runs_alone() {
    let tag: u32 = std::process::id();
    let start = |run: &str, controller: &str| {
        let out = Command::new("docker")
            .args(["run", "-d", "--label", &format!("lockchaos.run={run}"), "--label", &format!("lockchaos.controller={controller}")])
            .args(["lockchaos-node:bookworm", "sleep", "120"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    // A PID above Linux's largest possible one: that run's lockchaos is gone.
    let dead = start(&format!("clean-test-dead-{tag}"), "4194999:1");
    let live = start(&format!("clean-test-live-{tag}"), &own_controller_label());
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos")).arg("clean").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let exists = |id: &str| Command::new("docker").args(["inspect", id]).output().unwrap().status.success();
    let (dead_left, live_left) = (exists(&dead), exists(&live));
    let _ = Command::new("docker").args(["rm", "-f", &live, &dead]).output();
    assert!(!dead_left, "clean left a dead run's container");
    assert!(live_left, "clean removed a live run's container: {}", String::from_utf8_lossy(&out.stdout));
}
