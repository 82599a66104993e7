//! The matrix past one machine: three shards (`--shard K/3`) merged with `lockchaos matrix
//! merge`, and the matrix run two at a time (`--jobs 2`), give the same cells and run counts
//! as the matrix run whole, one run after another. Needs Docker and the node image. The nightly
//! workflow that fans the shards out is tested in nightly_workflow.rs.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

const SCENARIOS: &str = "redis-single-baseline,toy-lock-baseline";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn matrix(store: &Path, extra: &[&str]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockchaos"));
    cmd.current_dir(root())
        // 5 s: five matrices run at once here (up to six runs on two cores), and a clean CI once
        // saw a 3 s run whose clients had not asked for the lock before its end (unknown).
        .args(["matrix", "--scenarios", SCENARIOS, "--runs", "2", "--time-limit", "5", "--quiet", "--store"])
        .arg(store)
        .env("CI", "true")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd.args(extra);
    cmd.spawn().unwrap()
}

/// A cell as compared: row, column, runs, runs with a violation, runs matched, expectations.
type Cell = (String, String, u64, u64, u64, Value);

/// The matrix's cells in order, and every run's report as the matrix links it.
fn cells(store: &Path) -> (Vec<Cell>, Vec<String>) {
    let m: Value = serde_json::from_str(&std::fs::read_to_string(store.join("matrix.json")).unwrap()).unwrap();
    let mut cells: Vec<_> = m["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let n = |k: &str| c[k].as_u64().unwrap();
            (
                c["row"].as_str().unwrap().to_string(),
                c["column"].as_str().unwrap().to_string(),
                n("runs"),
                n("runs_with_violation"),
                n("runs_matched"),
                c["expect"].clone(),
            )
        })
        .collect();
    cells.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let reports = m["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["reports"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_string()))
        .collect();
    (cells, reports)
}

#[test]
fn three_shards_merged_and_two_jobs_equal_the_whole_matrix() {
    let dir = tempfile::Builder::new().prefix("shards-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let whole = dir.path().join("whole");
    let shards: Vec<PathBuf> = (1..=3).map(|k| dir.path().join(format!("shard-{k}"))).collect();
    let two_jobs = dir.path().join("two-jobs");
    // All at once: runs are isolated by their labels and networks.
    let mut children = vec![("whole".to_string(), matrix(&whole, &[])), ("--jobs 2".to_string(), matrix(&two_jobs, &["--jobs", "2"]))];
    for (k, store) in shards.iter().enumerate() {
        children.push((format!("shard {}/3", k + 1), matrix(store, &["--shard", &format!("{}/3", k + 1)])));
    }
    for (name, child) in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Four (scenario, run) pairs dealt round three shards: 2, 1, 1.
    let runs_in = |store: &Path| -> usize {
        ["redis-single-baseline", "toy-lock-baseline"]
            .iter()
            .map(|s| std::fs::read_dir(store.join(s)).map(|d| d.count()).unwrap_or(0))
            .sum()
    };
    assert_eq!(shards.iter().map(|s| runs_in(s)).collect::<Vec<_>>(), [2, 1, 1]);

    let merged = dir.path().join("merged");
    let out =
        Command::new(env!("CARGO_BIN_EXE_lockchaos")).args(["matrix", "merge"]).args(&shards).arg("--store").arg(&merged).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    let (whole_cells, _) = cells(&whole);
    let (merged_cells, reports) = cells(&merged);
    assert_eq!(whole_cells.len(), 2, "{whole_cells:?}");
    assert_eq!(merged_cells, whole_cells);
    assert_eq!(cells(&two_jobs).0, whole_cells, "two at a time");
    // Every run's report is reachable from the merged matrix.
    assert_eq!(reports.len(), 4);
    for r in reports {
        assert!(merged.join(&r).is_file(), "{r} is not reachable from {}", merged.display());
    }
}
