//! `lockchaos history` and `--baseline` over stores written by hand (no Docker): a cell that
//! moved beyond chance is named and gives exit 4, one within chance does not, unknown runs of
//! every kind stay out of the verdict counts (a night of broken runners moves nothing), and the
//! page and history.json say which cells changed.

mod common;

use common::made_up_store::{lockchaos, put_cell};
use results::UnknownCause;
use serde_json::Value;
use std::path::Path;
use strum::IntoEnumIterator;

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The state history.json gives the cell of column `failure`.
fn state(history: &Value, failure: &str) -> String {
    let cell = history["cells"].as_array().unwrap().iter().find(|c| c["column"] == failure).unwrap();
    cell["state"].as_str().unwrap().to_string()
}

#[test]
fn history_names_the_cell_that_moved_tonight_and_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let nights: Vec<_> = ["2026-12-01", "2026-12-02", "2026-12-03"].iter().map(|n| dir.path().join(n)).collect();
    for (i, night) in nights.iter().enumerate() {
        // pause: safe for two nights, then a violation in every run; kill: 2, 3, 1 of 5 (chance).
        if i < 2 {
            put_cell(night, "pause", 0, 5, &[]);
        } else {
            put_cell(night, "pause", 5, 0, &[]);
        }
        put_cell(night, "kill", [2, 3, 1][i], 5 - [2, 3, 1][i], &[]);
    }
    let out = dir.path().join("page");
    let stores: Vec<&Path> = nights.iter().map(|n| n.as_path()).collect();
    let (code, text) = lockchaos(&["history"], &stores, &out);
    assert_eq!(code, Some(4), "{text}");
    assert!(text.contains("changed: redis-single × pause on 2026-12-03"), "{text}");
    assert!(!text.contains("× kill on"), "{text}");
    let history = json(&out.join("history.json"));
    assert_eq!((state(&history, "pause"), state(&history, "kill")), ("changed".into(), "steady".into()));
    let page = std::fs::read_to_string(out.join("history.html")).unwrap();
    assert!(page.contains("Tonight 1 cell(s) moved beyond chance"), "{page}");

    // The first two nights alone: nothing moved.
    let (code, text) = lockchaos(&["history"], &stores[..2], &dir.path().join("two"));
    assert_eq!(code, Some(0), "{text}");
}

#[test]
fn a_baseline_shift_is_a_regression_and_a_shift_within_chance_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let (baseline, tonight, within) = (dir.path().join("baseline"), dir.path().join("tonight"), dir.path().join("within"));
    put_cell(&baseline, "pause", 0, 10, &[]);
    put_cell(&baseline, "kill", 3, 7, &[]);
    put_cell(&tonight, "pause", 4, 0, &[]);
    put_cell(&tonight, "kill", 5, 5, &[]);
    put_cell(&within, "pause", 0, 4, &[]);
    put_cell(&within, "kill", 5, 5, &[]);
    let b = baseline.to_str().unwrap();

    let out = dir.path().join("merged");
    let (code, text) = lockchaos(&["matrix", "merge", "--baseline", b], &[&tonight], &out);
    assert_eq!(code, Some(4), "{text}");
    assert!(text.contains("ROSE: redis-single × pause"), "{text}");
    assert!(!text.contains("× kill:"), "{text}");
    let file = json(&out.join("baseline.json"));
    let moved: Vec<&str> =
        file["cells"].as_array().unwrap().iter().filter(|c| c["change"] == "rose").map(|c| c["column"].as_str().unwrap()).collect();
    assert_eq!(moved, ["pause"]);

    // Within chance: the merge's own status (1: its runs did not all match `violation`), not 4.
    let (code, text) = lockchaos(&["matrix", "merge", "--baseline", b], &[&within], &dir.path().join("merged-within"));
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("0 of 2 cells moved beyond chance"), "{text}");
    let (code, text) = lockchaos(&["history", "--baseline", b], &[&within, &tonight], &dir.path().join("page"));
    assert_eq!(code, Some(4), "{text}");
    assert!(text.contains("moved against the baseline: redis-single × pause"), "{text}");

    // A baseline without a finished run is refused before anything is written.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, text) = lockchaos(&["matrix", "merge", "--baseline", empty.to_str().unwrap()], &[&tonight], &dir.path().join("x"));
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("holds no finished run"), "{text}");
}

#[test]
fn a_night_of_broken_runners_is_counted_by_cause_and_moves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second, broken) = (dir.path().join("n1"), dir.path().join("n2"), dir.path().join("n3"));
    let every: Vec<UnknownCause> = UnknownCause::iter().collect();
    put_cell(&first, "pause", 0, 6, &[]);
    put_cell(&second, "pause", 0, 6, &[]);
    // Tonight: every run unknown, one of each kind, twice over.
    put_cell(&broken, "pause", 0, 0, &[every.clone(), every.clone()].concat());
    let out = dir.path().join("page");
    let (code, text) = lockchaos(&["history"], &[&first, &second, &broken], &out);
    assert_eq!(code, Some(0), "{text}");
    let history = json(&out.join("history.json"));
    let night = &history["cells"][0]["nights"][2];
    assert_eq!((night["rate"]["violations"].as_u64(), night["rate"]["runs"].as_u64()), (Some(0), Some(0)), "{night}");
    for kind in &every {
        assert_eq!(night["unknown"][kind.name()].as_u64(), Some(2), "{kind}: {night}");
    }
    assert_eq!(history["cells"][0]["tonight"]["change"], "unmeasured");
    // And the merged matrix counts them beside the rate, not in it.
    let merged = dir.path().join("merged");
    let (_, text) = lockchaos(&["matrix", "merge"], &[&broken], &merged);
    let cell = &json(&merged.join("matrix.json"))["cells"][0];
    assert_eq!((cell["violation_rate"]["runs"].as_u64(), cell["unknown"]["infrastructure"].as_u64()), (Some(0), Some(2)), "{text}");
}
