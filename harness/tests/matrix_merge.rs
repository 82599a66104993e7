//! `lockchaos matrix merge` over stores written by hand (nothing is run, no Docker), and a shard
//! that holds no run: a bad run folder is left out and named, a run reached twice is counted
//! once, "nothing to merge" and "nothing ran" are said as such with their own exit status (3),
//! and a cell whose run was interrupted says so rather than "DOES NOT MATCH".

mod common;

use common::made_up_store::{lockchaos, merge, put_run, results, Ended};
use serde_json::Value;
use std::path::Path;

/// The merged matrix's cells: (runs, runs matched) of each, and every report it links.
fn merged_runs(out: &Path) -> (u64, u64, Vec<String>) {
    let m: Value = serde_json::from_str(&std::fs::read_to_string(out.join("matrix.json")).unwrap()).unwrap();
    let cells = m["cells"].as_array().unwrap();
    let sum = |k: &str| cells.iter().map(|c| c[k].as_u64().unwrap()).sum();
    let reports = cells.iter().flat_map(|c| c["reports"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_string())).collect();
    (sum("runs"), sum("runs_matched"), reports)
}

#[test]
fn a_truncated_or_unreadable_run_folder_is_left_out_and_named_and_the_rest_merged() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    put_run(&store, "redis-single-baseline", "20260101T000000Z", Some(&results("redis-single-baseline", Ended::Matched)));
    let whole = results("redis-single-baseline", Ended::Matched);
    let truncated = put_run(&store, "redis-single-baseline", "20260101T000001Z", Some(&whole[..whole.len() / 2]));
    let no_scenario = put_run(&store, "redis-single-baseline", "20260101T000002Z", Some(&whole));
    std::fs::remove_file(no_scenario.join("scenario.toml")).unwrap();
    let unfinished = put_run(&store, "redis-single-baseline", "20260101T000003Z", None);
    let out = dir.path().join("out");

    let (code, text) = merge(&[&store], &out);
    assert_eq!(code, Some(0), "{text}");
    for (folder, why) in [(&truncated, "results.json"), (&no_scenario, "scenario.toml"), (&unfinished, "no results.json")] {
        let line = text.lines().find(|l| l.starts_with(&format!("left out {}", folder.display()))).unwrap_or_else(|| panic!("{text}"));
        assert!(line.contains(why), "{line}");
    }
    assert_eq!(merged_runs(&out).0, 1, "{text}");
}

#[test]
fn a_run_reached_twice_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    for folder in ["20260101T000000Z", "20260101T000001Z"] {
        put_run(&store, "redis-single-baseline", folder, Some(&results("redis-single-baseline", Ended::Matched)));
    }
    let link = dir.path().join("the-same-store");
    std::os::unix::fs::symlink(&store, &link).unwrap();
    let spelt_otherwise = store.join("..").join("store");
    let out = dir.path().join("out");

    let (code, text) = merge(&[&store, &store, &link, &spelt_otherwise], &out);
    assert_eq!(code, Some(0), "{text}");
    let (runs, matched, reports) = merged_runs(&out);
    assert_eq!((runs, matched), (2, 2), "{text}");
    for r in reports {
        assert!(out.join(&r).is_file(), "{r} is not reachable from {}", out.display());
    }
}

#[test]
fn nothing_to_merge_is_said_as_such_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let unfinished = dir.path().join("unfinished");
    put_run(&unfinished, "redis-single-baseline", "20260101T000000Z", None);
    let out = dir.path().join("out");

    let (code, text) = merge(&[&empty, &unfinished], &out);
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("nothing to merge"), "{text}");
    assert!(!text.contains("did not match") && !text.contains("matched"), "{text}");
    assert!(!out.join("matrix.html").exists(), "a page of no runs was written");
}

#[test]
fn an_interrupted_run_shows_its_cell_as_interrupted_not_as_a_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    put_run(&store, "redis-single-baseline", "20260101T000000Z", Some(&results("redis-single-baseline", Ended::Matched)));
    put_run(&store, "redis-single-baseline", "20260101T000001Z", Some(&results("redis-single-baseline", Ended::Interrupted)));
    let out = dir.path().join("out");

    let (code, text) = merge(&[&store], &out);
    // As a matrix's: a run that ended unknown is 2.
    assert_eq!(code, Some(2), "{text}");
    let cell = text.lines().find(|l| l.starts_with("redis-single ")).unwrap_or_else(|| panic!("{text}"));
    assert!(cell.contains("interrupted") && !cell.contains("DOES NOT MATCH"), "{cell}");
    assert!(!text.contains("some cells did not match"), "{text}");
    let page = std::fs::read_to_string(out.join("matrix.html")).unwrap();
    assert!(page.contains("class=\"interrupted\"") && !page.contains("class=\"mismatch\""), "{page}");

    // A run that did not match is still said to, beside an interrupted one.
    put_run(&store, "redis-single-baseline", "20260101T000002Z", Some(&results("redis-single-baseline", Ended::Violation)));
    let (code, text) = merge(&[&store], &out);
    assert_eq!(code, Some(2), "{text}");
    let cell = text.lines().find(|l| l.starts_with("redis-single ")).unwrap_or_else(|| panic!("{text}"));
    assert!(cell.contains("DOES NOT MATCH"), "{cell}");
}

#[test]
fn a_shard_that_holds_no_run_says_nothing_ran_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store");
    // One (scenario, run) pair dealt round two shards: the second holds none.
    let (code, text) = lockchaos(&["matrix", "--scenarios", "redis-single-baseline", "--runs", "1", "--shard", "2/2"], &[], &out);
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("nothing ran"), "{text}");
    assert!(!text.contains("did not match") && !text.contains("Docker"), "{text}");
}
