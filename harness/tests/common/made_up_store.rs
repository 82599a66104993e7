//! Stores written by hand, for the commands that read stores (`matrix merge`, `history`,
//! `--baseline`): run folders with a scenario.toml, a results.json and a report.html; nothing
//! is run, no Docker.

use results::{Expectation, Outcome, RunResults, UnknownCause};
use std::path::{Path, PathBuf};
use std::process::Command;

const SCENARIO_TOML: &str = "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n";

pub fn lockchaos(args: &[&str], stores: &[&Path], out: &Path) -> (Option<i32>, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .current_dir(root)
        .args(args)
        .args(stores)
        .arg("--store")
        .arg(out)
        .env("CI", "true")
        // Nothing here may need Docker: a daemon that is not there says so if anything asks.
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

pub fn merge(stores: &[&Path], out: &Path) -> (Option<i32>, String) {
    lockchaos(&["matrix", "merge"], stores, out)
}

/// A run of `scenario` that matched its `safe` expectation, lost an update, or was interrupted
/// before it could vouch for anything (unknown, as a cut-short run's results.json says).
pub enum Ended {
    Matched,
    Violation,
    Interrupted,
}

pub fn results(scenario: &str, ended: Ended) -> String {
    let outcome = match ended {
        Ended::Matched => Outcome::Safe,
        Ended::Violation => Outcome::Violation,
        Ended::Interrupted => Outcome::Unknown,
    };
    let cause = matches!(ended, Ended::Interrupted).then_some(UnknownCause::Interrupted);
    results_of(scenario, Expectation::Safe, outcome, cause)
}

/// A results.json of `scenario` that ended in `outcome` (with `cause` when unknown).
pub fn results_of(scenario: &str, expect: Expectation, outcome: Outcome, cause: Option<UnknownCause>) -> String {
    serde_json::to_string_pretty(&run_results(scenario, expect, outcome, cause)).unwrap()
}

/// The results of [`results_of`], to change further before they are written.
pub fn run_results(scenario: &str, expect: Expectation, outcome: Outcome, cause: Option<UnknownCause>) -> RunResults {
    RunResults {
        scenario: scenario.into(),
        description: "d".into(),
        expect,
        outcome,
        matches_expectation: expect.is_met_by(outcome),
        run_id: format!("{scenario}-run"),
        backend: "redis-single".into(),
        seed: 1,
        clients: 2,
        time_limit_secs: 1,
        started_at: "2026-01-01T00:00:00+00:00".into(),
        duration_secs: 1.0,
        interrupted: cause == Some(UnknownCause::Interrupted),
        workers: vec![],
        warnings: vec![],
        not_applied: vec![],
        refused_requests: Default::default(),
        unknown_cause: cause,
        properties: checker::check(&[], &checker::CheckOptions::default()),
        claims: vec![],
    }
}

/// `store/<scenario>/<folder>/` with scenario.toml and, when given, results.json as it is
/// and a report.html.
pub fn put_run(store: &Path, scenario: &str, folder: &str, results_json: Option<&str>) -> PathBuf {
    put_run_as(store, scenario, folder, results_json, SCENARIO_TOML)
}

/// As [`put_run`], the scenario's file being `scenario_toml` (its `failure` is the run's
/// column in the matrix).
pub fn put_run_as(store: &Path, scenario: &str, folder: &str, results_json: Option<&str>, scenario_toml: &str) -> PathBuf {
    let dir = store.join(scenario).join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("scenario.toml"), scenario_toml).unwrap();
    if let Some(text) = results_json {
        std::fs::write(dir.join("results.json"), text).unwrap();
        std::fs::write(dir.join("report.html"), "<!DOCTYPE html>").unwrap();
    }
    dir
}

/// A scenario file whose runs sit in the cell redis-single × `failure` (the matrix's row is the
/// backend, its column the failure), expecting `expect`.
pub fn cell_toml(failure: &str, expect: Expectation) -> String {
    format!("description = \"d\"\nexpect = \"{expect}\"\nbackend = \"redis-single\"\nfailure = \"{failure}\"\n")
}

/// Puts runs of the cell redis-single × `failure`, expecting a violation, into `store`:
/// `violations`, `safe`, and one unknown run per cause in `unknown`.
pub fn put_cell(store: &Path, failure: &str, violations: u32, safe: u32, unknown: &[UnknownCause]) {
    put_cell_expecting(store, failure, Expectation::Violation, violations, safe, unknown)
}

/// As [`put_cell`], the cell expecting `expect`. Its scenario is made-up-`failure`, its runs'
/// folders 20260101T000000Z, ...01Z and on: a second call for one cell into one store writes
/// over the first's.
pub fn put_cell_expecting(store: &Path, failure: &str, expect: Expectation, violations: u32, safe: u32, unknown: &[UnknownCause]) {
    let scenario = format!("made-up-{failure}");
    let toml = cell_toml(failure, expect);
    let outcomes = (0..violations).map(|_| (Outcome::Violation, None)).chain((0..safe).map(|_| (Outcome::Safe, None)));
    let all: Vec<(Outcome, Option<UnknownCause>)> = outcomes.chain(unknown.iter().map(|&c| (Outcome::Unknown, Some(c)))).collect();
    for (i, (outcome, cause)) in all.into_iter().enumerate() {
        let json = results_of(&scenario, expect, outcome, cause);
        put_run_as(store, &scenario, &format!("20260101T0000{i:02}Z"), Some(&json), &toml);
    }
}
