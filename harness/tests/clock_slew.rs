//! The clock-slew fault, run for real through the library: a slew's start and stop keep the
//! server's clock continuous and the clock gains what the rate says, as measured by the server's
//! own TIME; a slew whose gain cannot be shown ends the run unknown, never safe.

mod common;

use results::{FaultPhase, Outcome};

/// A single Redis whose n1 slews at `rate` from 1 s for `duration_ms`; a TTL far beyond the
/// work, so the slew alone decides nothing about safety.
fn scenario(rate: f64, duration_ms: u64) -> String {
    format!(
        "description = \"slew\"\nexpect = \"safe\"\nbackend = \"redis-single\"\nclients = 2\ntime_limit_secs = 8\n\
         [lock]\nttl_ms = 10000\n[workload]\nwork_ms = 100\nthink_ms = 20\n\
         [[nemesis.timeline]]\nat_ms = 1000\nfault = \"clock-slew\"\ntarget = \"n1\"\nrate = {rate}\nduration_ms = {duration_ms}\n"
    )
}

/// `+0.4 ms (± 0.9 ms)` after `label` in `detail`: the jump and its spread, in ms.
fn jump_after(detail: &str, label: &str) -> (f64, f64) {
    let rest = &detail[detail.find(label).unwrap_or_else(|| panic!("`{label}` in {detail}")) + label.len()..];
    let words: Vec<&str> = rest.split_whitespace().collect();
    let (jump, spread) = (words[0].parse().unwrap(), words[3].parse().unwrap());
    (jump, spread)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slew_runs_the_clock_fast_without_jumps_and_one_that_cannot_be_shown_ends_unknown() {
    let dir = tempfile::tempdir().unwrap();

    // Twice as fast for 4 s: the clock gains 4 s, with no jump when the slew starts or stops.
    let run = common::run(&common::scenario_file(dir.path(), "slew-double", &scenario(2.0, 4000)), 8).await;
    assert!(run.results.not_applied.is_empty(), "{:?}", run.results.not_applied);
    assert!(run.results.warnings.is_empty(), "{:?}", run.results.warnings);
    assert_eq!(run.results.outcome, Outcome::Safe);
    let detail = |phase: FaultPhase| {
        let c = run.faults.iter().find(|c| c.fault == "clock-slew" && c.phase == phase).expect("the slew's start and stop");
        assert_eq!(c.error, None, "{c:?}");
        c.detail.clone().unwrap()
    };
    let (start, stop) = (detail(FaultPhase::Start), detail(FaultPhase::Stop));
    for (jump, spread) in [jump_after(&start, "began with a jump of "), jump_after(&stop, "ended with a jump of ")] {
        // Without the continuity offset the start would jump by the server's whole age (seconds
        // at 2x). With it, what is left is (rate − 1) × the error of the server's age as /proc
        // gives it: 10 ms ticks, and the daemon forked a little after libfaketime started.
        assert!(jump.abs() <= 40.0 + spread, "a jump of {jump} ms (± {spread} ms): {start} / {stop}");
    }
    let gained: f64 = stop.split("gained ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert!((3500.0..4600.0).contains(&gained), "4 s at twice the speed gains about 4 s: {stop}");

    // 0.1% fast for 2 s gains 2 ms, which the measurement cannot tell from noise: the run cannot
    // count the slew as having happened, so it ends unknown whatever the record shows.
    let run = common::run(&common::scenario_file(dir.path(), "slew-tiny", &scenario(1.001, 2000)), 8).await;
    assert_eq!(run.results.outcome, Outcome::Unknown);
    assert!(!run.results.matches_expectation);
    assert_eq!(run.results.not_applied.len(), 1, "{:?}", run.results.not_applied);
    assert!(run.results.not_applied[0].contains("clock-slew on n1") && run.results.not_applied[0].contains("too little to tell"));
}
