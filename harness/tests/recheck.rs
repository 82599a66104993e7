//! `lockchaos check --recheck` over stores made up by hand (nothing is run, no Docker): a run
//! whose results.json an older checker wrote (it missed a lost update) is listed as changed,
//! a run whose recorded verdict still holds is not, a folder that cannot be read is named and
//! left out, and the exit status says whether anything changed.

mod common;

use common::made_up_run::{self, run_folder, write_results_as_its_end_would};
use harness::run_verdict::{CutShort, RunEnding};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn recheck(args: &[&str], stores: &[&Path]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .args(["check", "--recheck"])
        .args(args)
        .args(stores)
        // Nothing here may need Docker: a daemon that is not there says so if anything asks.
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A run that ended as planned, its results.json as its end wrote it: still true today.
fn held(store: &Path, name: &str) -> std::path::PathBuf {
    let dir = run_folder(&store.join("demo"), name, true, None);
    write_results_as_its_end_would(&dir, RunEnding::default());
    dir
}

#[test]
fn a_verdict_an_older_checker_missed_is_listed_and_the_rest_are_not() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let kept = held(&store, "20260101T000000Z");
    // Interrupted, so unknown, as recorded: the recheck applies the same cut-short rule.
    let interrupted = run_folder(&store.join("demo"), "20260101T000001Z", true, None);
    let recorded = write_results_as_its_end_would(&interrupted, RunEnding { cut_short: Some(CutShort::Interrupted), ..Default::default() });
    assert_eq!(recorded.outcome_in_words(), "unknown (interrupted)");
    // Its results.json says safe, written before the lost update it holds was seen.
    let missed = held(&store, "20260101T000002Z");
    made_up_run::append(&missed.join("resource.jsonl"), &made_up_run::lost_update());
    made_up_run::merge_history(&missed);
    // Killed: its parties' files, no results.json.
    let killed = run_folder(&store.join("demo"), "20260101T000003Z", false, None);

    let (code, out, err) = recheck(&[], &[&store]);
    assert_eq!(code, Some(1), "{out}{err}");
    let changed: Vec<&str> = out.lines().filter(|l| l.contains(" → ")).collect();
    assert_eq!(changed.len(), 1, "{out}");
    assert!(changed[0].starts_with(&format!("{}: demo: safe → violation; ", missed.display())), "{out}");
    assert!(changed[0].contains("resource_safety valid → invalid"), "{out}");
    assert!(changed[0].ends_with("matches expectation yes → no"), "{out}");
    for unchanged in [&kept, &interrupted] {
        assert!(!out.contains(&unchanged.display().to_string()), "{} is unchanged: {out}", unchanged.display());
    }
    let left_out = format!("left out {}: no results.json", killed.display());
    assert!(out.lines().any(|l| l.starts_with(&left_out)), "{out}");
    assert!(out.ends_with("rechecked 3 runs: 1 verdicts changed, 2 unchanged, 1 could not be read (named above)\n"), "{out}");
    assert!(!killed.join("history.jsonl").exists() && !killed.join("results.json").exists(), "nothing is written into the store");

    // The same as JSON; a store given twice counts each run once.
    let (code, out, err) = recheck(&["--json"], &[&store, &store]);
    assert_eq!(code, Some(1), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let counts = (v["rechecked"].as_u64(), v["unchanged"].as_u64(), v["unreadable"].as_array().map(Vec::len));
    assert_eq!(counts, (Some(3), Some(2), Some(1)), "{v}");
    let run = &v["changed"][0];
    assert_eq!(run["folder"], missed.display().to_string());
    assert_eq!((run["outcome"]["old"].as_str(), run["outcome"]["new"].as_str()), (Some("safe"), Some("violation")), "{run}");
    assert_eq!(run["matches_expectation"], serde_json::json!({"old": true, "new": false}));
    let resource_safety = run["properties"].as_array().unwrap().iter().find(|p| p["property"] == "resource_safety").unwrap();
    assert_eq!((resource_safety["old"].as_str(), resource_safety["new"].as_str()), (Some("valid"), Some("invalid")));
}

#[test]
fn a_store_where_nothing_changed_exits_0_and_one_with_nothing_to_recheck_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    held(&store, "20260101T000000Z");
    held(&store, "20260101T000001Z");
    let (code, out, err) = recheck(&[], &[&store]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(out, "rechecked 2 runs: 0 verdicts changed, 2 unchanged, 0 could not be read\n");

    // Nothing readable: named, then an error.
    let killed = tmp.path().join("killed");
    let folder = run_folder(&killed.join("demo"), "20260101T000000Z", false, None);
    let (code, out, err) = recheck(&[], &[&killed]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(out.contains(&format!("left out {}: no results.json", folder.display())), "{out}");
    assert!(err.starts_with("error: nothing rechecked: ") && err.lines().count() == 1, "{err}");
    // A store that is not there is an error too, naming it.
    let (code, _, err) = recheck(&[], &[&tmp.path().join("nowhere")]);
    assert_eq!(code, Some(2));
    assert!(err.contains("nowhere") && err.lines().count() == 1, "{err}");
}

#[test]
fn recheck_refuses_the_flags_of_one_history_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    held(&store, "20260101T000000Z");
    for flags in [&["--model", "mutex"][..], &["--initial", "0"], &["--format", "jsonl"], &["--timeout", "5"], &["--stuck-after-ms", "100"]]
    {
        let (code, out, err) = recheck(flags, &[&store]);
        assert_eq!(code, Some(2), "{flags:?}: {out}{err}");
        assert!(err.starts_with(&format!("error: --recheck does not take {}", flags[0])) && err.lines().count() == 1, "{flags:?}: {err}");
        assert!(out.is_empty(), "{flags:?}: nothing rechecked: {out}");
    }
    // Without --recheck, one FILE only.
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos")).args(["check"]).args([&store, &store]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("check takes one FILE, 2 given"), "{err}");
}
