//! Stores written by hand for tests: run folders with the results.json and scenario.toml a
//! finished run leaves, without running anything.

use results::{Expectation, Outcome, RunResults};
use std::path::{Path, PathBuf};

/// A scenario file that loads (no Docker is needed to load one).
pub const SCENARIO_TOML: &str = "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n";

/// The results of a run of `scenario` that matched its `safe` expectation or not, or was
/// interrupted (unknown, as a cut-short run is).
pub fn results(scenario: &str, matched: bool, interrupted: bool) -> RunResults {
    let outcome = if interrupted {
        Outcome::Unknown
    } else if matched {
        Outcome::Safe
    } else {
        Outcome::Violation
    };
    RunResults {
        scenario: scenario.into(),
        description: "d".into(),
        expect: Expectation::Safe,
        outcome,
        matches_expectation: matched && !interrupted,
        run_id: format!("{scenario}-run"),
        backend: "redis-single".into(),
        seed: 1,
        clients: 2,
        time_limit_secs: 1,
        started_at: "2026-01-01T00:00:00+00:00".into(),
        duration_secs: 1.0,
        interrupted,
        workers: vec![],
        warnings: vec![],
        not_applied: vec![],
        properties: checker::check(&[], &checker::CheckOptions::default()),
        claims: vec![],
    }
}

/// `store/<scenario>/<folder>/` with scenario.toml and, when given, results.json holding
/// `results_json` as it is (so a test can truncate it).
pub fn put_run(store: &Path, scenario: &str, folder: &str, results_json: Option<&str>) -> PathBuf {
    let dir = store.join(scenario).join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("scenario.toml"), SCENARIO_TOML).unwrap();
    if let Some(text) = results_json {
        std::fs::write(dir.join("results.json"), text).unwrap();
    }
    dir
}

pub fn json(results: &RunResults) -> String {
    serde_json::to_string_pretty(results).unwrap()
}
