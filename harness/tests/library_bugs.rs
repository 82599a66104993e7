//! The reference clients around real library bugs, each scenario run once for real (Docker, the
//! node image, a real Redis) with a short time limit: redis-py 4.3.4's `Lock` with no expiry
//! stays taken for good after a release that a partition made fail, where the same lock with a
//! timeout is free again at its TTL; sherlock 0.4.0's renew frees the lock it renews. The
//! sherlock scenario's client environment installs it from PyPI (client_env), built once.

mod common;

use checker::{EventType, Process};
use results::Outcome;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scenario(name: &str) -> String {
    root().join("scenarios").join(format!("{name}.toml")).display().to_string()
}

/// The run matched its expectation and every claim, with every fault applied and no warning.
fn matched(run: &common::Run) {
    let r = &run.results;
    assert!(
        r.matches_expectation && r.claims.iter().all(|c| c.met) && r.not_applied.is_empty() && r.warnings.is_empty(),
        "{}: outcome {:?}, claims {:?}, not applied {:?}, warnings {:?}",
        r.scenario,
        r.outcome,
        r.claims,
        r.not_applied,
        r.warnings
    );
}

/// The cut-off holder's release: answered info, after a connection reset.
fn release_reset(run: &common::Run) {
    let failed = run.history.iter().filter(|e| e.f == "release" && e.kind == EventType::Info).count();
    let logs: String = ["client-1", "client-2"]
        .iter()
        .map(|c| std::fs::read_to_string(run.dir.join(format!("logs/{c}.log"))).unwrap_or_default())
        .collect();
    assert!(
        failed == 1 && logs.contains("release: Error while reading from") && logs.contains("Connection reset by peer"),
        "expected one release answered info after a reset: {failed} in the history; logs:\n{logs}"
    );
}

#[tokio::test]
async fn redis_py_lock_with_no_expiry_stays_taken_after_a_release_cut_off_by_a_partition() {
    // The cut starts at about 3 s and heals 3 s later; 10 s leaves both clients refused after it.
    let run = common::run(&scenario("redis-py-lock-no-timeout-release-cut"), 10).await;
    matched(&run);
    assert_eq!(run.results.outcome, Outcome::Safe);
    assert!(run.results.properties.availability.unavailable_at_end);
    release_reset(&run);
}

#[tokio::test]
async fn redis_py_lock_with_a_timeout_is_free_again_at_its_ttl_after_the_same_cut() {
    let run = common::run(&scenario("redis-py-lock-release-cut"), 10).await;
    matched(&run);
    assert_eq!(run.results.outcome, Outcome::Safe);
    assert!(!run.results.properties.availability.unavailable_at_end);
    release_reset(&run);
}

#[tokio::test]
async fn sherlock_renew_frees_the_lock_it_renews() {
    let run = common::run(&scenario("sherlock-renew"), 5).await;
    matched(&run);
    assert_eq!(run.results.outcome, Outcome::Violation);
    assert!(run.results.properties.resource_safety.lost_updates > 0, "{:?}", run.results.properties.resource_safety);
    // A renewal answered ok, then another process granted the lock before the renewer released
    // (not every renewal shows it: one that lands late in the work may be followed by the
    // release first).
    let h = &run.history;
    let freed_by_renew = |renewed: usize| {
        let Process::Client(renewer) = h[renewed].process else { return false };
        let next_release = h[renewed..].iter().position(|e| e.process == h[renewed].process && e.f == "release");
        let granted_other =
            h[renewed..].iter().position(|e| e.f == "acquire" && e.kind == EventType::Ok && e.process != Process::Client(renewer));
        matches!((granted_other, next_release), (Some(g), Some(r)) if g < r)
    };
    let renewals: Vec<usize> = (0..h.len()).filter(|&i| h[i].f == "renew" && h[i].kind == EventType::Ok).collect();
    assert!(!renewals.is_empty(), "no renew ok");
    assert!(
        renewals.iter().any(|&i| freed_by_renew(i)),
        "expected another grant between some renew ok and the renewer's release ({} renewals)",
        renewals.len()
    );
}
