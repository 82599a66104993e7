//! The nightly workflow (.github/workflows/nightly-chaos.yml): a valid GitHub workflow (checked
//! against the schema that check-jsonschema carries, offline), so a typo fails here rather than
//! at night, wired to carry the nights from run to run; and its merge job's shell steps run
//! here, in order, as a runner would: against a stand-in lockchaos for every combination of
//! the merge's and the history's statuses, and against the real one over made-up stores, where
//! a cell that moved tonight fails the night and a night like the others passes. No Docker.

mod common;
mod workflow;

use common::made_up_store::{put_cell, put_cell_expecting};
use results::Expectation;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use workflow::merge_job::{run_merge_job, Lockchaos::*};
use workflow::{job_steps, nightly, root, Step};

/// check-jsonschema: on the PATH, else installed from PyPI into a virtualenv of the test's own.
fn check_jsonschema() -> PathBuf {
    if let Ok(out) = Command::new("check-jsonschema").arg("--version").output() {
        if out.status.success() {
            return PathBuf::from("check-jsonschema");
        }
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-jsonschema-venv");
    let bin = venv.join("bin/check-jsonschema");
    if !bin.is_file() {
        let made = Command::new("python3").args(["-m", "venv"]).arg(&venv).status().expect("python3 is needed to validate the workflow");
        assert!(made.success(), "python3 -m venv {} failed (Debian: apt-get install python3-venv)", venv.display());
        let pip = Command::new(venv.join("bin/pip")).args(["install", "--quiet", "check-jsonschema"]).status().unwrap();
        assert!(pip.success(), "pip install check-jsonschema failed");
    }
    bin
}

#[test]
fn the_nightly_workflow_is_a_valid_github_workflow_that_shards_and_merges() {
    let workflow = root().join(".github/workflows/nightly-chaos.yml");
    let out = Command::new(check_jsonschema()).args(["--builtin-schema", "vendor.github-workflows"]).arg(&workflow).output().unwrap();
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&workflow).unwrap();
    assert!(text.contains("matrix --shard") && text.contains("matrix merge"), "the workflow must fan out shards and merge them");

    // The merge job carries the nights: restored before the merge and saved after the history,
    // under the same key and path, the restore falling back on the newest earlier night's.
    let steps = job_steps(&text, "merge");
    let at = |pred: &dyn Fn(&Step) -> bool, what: &str| steps.iter().position(pred).unwrap_or_else(|| panic!("no step that {what}"));
    let restore = at(&|s| s.uses == "actions/cache/restore@v4", "restores the cache");
    let save = at(&|s| s.uses == "actions/cache/save@v4", "saves the cache");
    let merge = at(&|s| s.run.contains("lockchaos matrix merge shards/* --store store"), "merges the shards");
    let keep = at(&|s| s.run.contains("bash .github/scripts/keep-night.sh history/nights \"$NIGHT\" shards/*"), "files the night");
    let history = at(&|s| s.run.contains("lockchaos history history/nights/* --store history/page"), "lays out the history");
    let upload = at(&|s| s.uses.starts_with("actions/upload-artifact@") && s.with("path") == "history/", "uploads history/");
    assert!(restore < merge && merge < keep && keep < history && history < save, "restore, merge, file, history, save: {steps:#?}");
    let (restore, save) = (&steps[restore], &steps[save]);
    assert_eq!(restore.with("path"), "history/nights");
    assert_eq!(save.with("path"), "history/nights");
    assert_eq!(restore.with("key"), "lockchaos-history-${{ github.run_id }}");
    assert_eq!(save.with("key"), restore.with("key"));
    assert!(restore.with("key").starts_with(restore.with("restore-keys")) && restore.with("restore-keys") == "lockchaos-history-");
    assert!(save.if_.starts_with("always()"), "the nights are saved whatever happened: {save:?}");
    assert_eq!(steps[upload].with("name"), "lockchaos-history-${{ github.run_id }}");
    assert_eq!(steps[upload].if_, "always()");
    // The merge's and the history's statuses are kept, not failed on at once; the last step
    // fails the night on them, whatever happened before it.
    assert_eq!((steps[merge].id.as_str(), steps[history].id.as_str()), ("merge", "history"));
    let verdict = steps.last().unwrap();
    assert_eq!(verdict.if_, "always()");
    assert!(verdict.env.contains(&("MERGE".into(), "${{ steps.merge.outputs.status }}".into())), "{verdict:?}");
    assert!(verdict.env.contains(&("HISTORY".into(), "${{ steps.history.outputs.status }}".into())), "{verdict:?}");

    // And the check can fail: a misspelt key is refused.
    let broken = tempfile::Builder::new().suffix(".yml").tempfile_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(broken.path(), text.replacen("runs-on:", "runs_on:", 1)).unwrap();
    let out = Command::new(check_jsonschema()).args(["--builtin-schema", "vendor.github-workflows"]).arg(broken.path()).output().unwrap();
    assert!(!out.status.success(), "a workflow with `runs_on` passed the schema");
}

/// A run folder as a run leaves it, logs and a party's events included.
fn run_folder(dir: &Path) {
    for f in ["results.json", "scenario.toml", "run.json", "history.jsonl", "report.html", "logs/n1.log", "workers/client-1.jsonl"] {
        let path = dir.join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, f).unwrap();
    }
}

/// A runner's workspace for the stand-in lockchaos, after the download and the restore: two
/// shards' stores, and a run in each night carried (each file holds its own name: nothing reads it).
fn merge_job_dir(parent: &Path, name: &str, carried: &[String]) -> PathBuf {
    let dir = parent.join(name);
    run_folder(&dir.join("shards/lockchaos-shard-1/redis-single-pause/20250601T021500Z"));
    run_folder(&dir.join("shards/lockchaos-shard-2/etcd-baseline/20250601T021700Z"));
    for night in carried {
        let run = dir.join("history/nights").join(night).join("redis-single-pause/20250101T021500Z");
        run_folder(&run);
        for gone in ["logs", "workers"] {
            std::fs::remove_dir_all(run.join(gone)).unwrap();
        }
    }
    dir
}

#[test]
fn the_nightly_merge_job_carries_the_nights_lays_out_the_history_and_fails_on_a_regression() {
    let parent = tempfile::Builder::new().prefix("nightly-job-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let shards = "shards/lockchaos-shard-1 shards/lockchaos-shard-2";

    // The first night: nothing carried, so no baseline; the night is filed and is the history.
    let dir = merge_job_dir(parent.path(), "first", &[]);
    let job = run_merge_job(&dir, "777", StandIn { merge: 0, history: 0 });
    assert_eq!(job.night, "2025-06-01-777");
    assert_eq!(
        job.calls,
        [format!("matrix merge {shards} --store store"), "history history/nights/2025-06-01-777 --store history/page".into()]
    );
    assert!(!job.failed, "{:#?}", job.steps);
    assert!(job.step("File tonight among the nights").1.starts_with("kept 2 runs of 2025-06-01-777 ("), "{:#?}", job.steps);
    let night = dir.join("history/nights/2025-06-01-777");
    assert!(
        night.join("redis-single-pause/20250601T021500Z/history.jsonl").is_file()
            && night.join("etcd-baseline/20250601T021700Z/report.html").is_file()
    );
    assert!(
        !night.join("redis-single-pause/20250601T021500Z/logs").exists() && !night.join("etcd-baseline/20250601T021700Z/workers").exists()
    );

    // Nine nights carried, and a cell moved against the last seven: the merge's status is kept,
    // the night is still filed and laid out among the others, oldest first, and only then does
    // the job fail, saying why.
    let carried: Vec<String> = (1..=9).map(|d| format!("2025-05-2{d}-1{d}")).collect();
    let dir = merge_job_dir(parent.path(), "moved", &carried);
    let job = run_merge_job(&dir, "777", StandIn { merge: 4, history: 0 });
    let baseline: String = carried[2..].iter().map(|n| format!(" --baseline history/nights/{n}")).collect();
    let nights: String = carried.iter().chain(["2025-06-01-777".to_string()].iter()).map(|n| format!(" history/nights/{n}")).collect();
    assert_eq!(job.calls, [format!("matrix merge {shards} --store store{baseline}"), format!("history{nights} --store history/page")]);
    assert!(job.failed);
    for (name, status, out) in &job.steps {
        assert_eq!(*status, Some(if name == "Verdict" { 1 } else { 0 }), "{name}: {out}");
    }
    assert!(job.step("Verdict").1.contains("a cell moved beyond chance: see history.html"), "{:#?}", job.steps);
    assert!(dir.join("history/nights/2025-06-01-777/etcd-baseline/20250601T021700Z/results.json").is_file());

    // A re-run of that run: a fresh runner, the nights restored from its first attempt's save,
    // tonight among them. Tonight is no baseline of its own, and is not filed twice.
    for made in ["store", "history/page"] {
        let _ = std::fs::remove_dir_all(dir.join(made));
    }
    std::fs::remove_file(dir.join(".calls")).unwrap();
    let job = run_merge_job(&dir, "777", StandIn { merge: 0, history: 0 });
    assert_eq!(job.calls, [format!("matrix merge {shards} --store store{baseline}"), format!("history{nights} --store history/page")]);
    assert!(job.step("File tonight among the nights").1.contains("already among the nights"), "{:#?}", job.steps);
    assert!(!job.failed, "{:#?}", job.steps);

    // Cells that did not match and a cell that moved tonight: both statuses kept, both said.
    let dir = merge_job_dir(parent.path(), "both", &carried[..2]);
    let job = run_merge_job(&dir, "778", StandIn { merge: 1, history: 4 });
    for (name, status, out) in &job.steps {
        assert_eq!(*status, Some(if name == "Verdict" { 1 } else { 0 }), "{name}: {out}");
    }
    let said = job.step("Verdict").1;
    assert!(
        said.contains("cells did not match their expectations") && said.contains("a cell moved beyond chance: see history.html"),
        "{said}"
    );

    // The verdict, on each status the merge and the history can end with.
    let steps = job_steps(&nightly(), "merge");
    let verdict = &steps.last().unwrap().run;
    for (merge, history, says) in [
        ("0", "0", None),
        ("1", "0", Some("cells did not match their expectations")),
        ("2", "0", Some("a run ended unknown")),
        ("3", "0", Some("nothing to merge")),
        ("4", "0", Some("a cell moved beyond chance: see history.html")),
        ("0", "4", Some("a cell moved beyond chance: see history.html")),
        ("1", "4", Some("cells did not match their expectations")),
        ("0", "2", Some("lockchaos history exited 2")),
        ("", "", Some("the merge did not run")),
    ] {
        let out = Command::new("bash").args(["-e", "-c", verdict]).env("MERGE", merge).env("HISTORY", history).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.success(), says.is_none(), "merge {merge:?}, history {history:?}: {said}");
        if let Some(says) = says {
            assert!(said.contains(says), "merge {merge:?}, history {history:?}: {said}");
        }
        if history == "4" {
            assert!(said.contains("(tonight, against the cell's nights since it last changed)"), "{said}");
        }
    }
}

/// The nights carried into the real jobs, oldest first, all before tonight (2025-06-01).
const CARRIED: [&str; 3] = ["2025-05-29-11", "2025-05-30-12", "2025-05-31-13"];

/// A runner's workspace for the real lockchaos, in made-up stores. Three nights carried, each
/// with redis-single × pause (expected safe) safe in 4 runs, 12 pooled: enough that one
/// violation moves it; and redis-single × kill (expected to lose an update) violated in all 4,
/// a steady cell. Tonight's two shards hold 2 runs of each cell apiece, pause violated in
/// `pause_violations` of each shard's 2, and every run left with what keep-night.sh leaves out.
fn made_up_job_dir(parent: &Path, name: &str, pause_violations: u32) -> PathBuf {
    let dir = parent.join(name);
    for night in CARRIED {
        let night = dir.join("history/nights").join(night);
        put_cell_expecting(&night, "pause", Expectation::Safe, 0, 4, &[]);
        put_cell(&night, "kill", 4, 0, &[]);
    }
    for shard in ["lockchaos-shard-1", "lockchaos-shard-2"] {
        let store = dir.join("shards").join(shard);
        put_cell_expecting(&store, "pause", Expectation::Safe, pause_violations, 2 - pause_violations, &[]);
        put_cell(&store, "kill", 2, 0, &[]);
        for run in run_folders(&store) {
            for (file, text) in [("run.json", "{}"), ("history.jsonl", ""), ("logs/n1.log", "log"), ("workers/client-1.jsonl", "")] {
                std::fs::create_dir_all(run.join(file).parent().unwrap()).unwrap();
                std::fs::write(run.join(file), text).unwrap();
            }
        }
    }
    dir
}

/// A store's run folders, STORE/<scenario>/<run>.
fn run_folders(store: &Path) -> Vec<PathBuf> {
    let list = |dir: &Path| std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect::<Vec<_>>();
    let mut runs: Vec<PathBuf> = list(store).iter().flat_map(|scenario| list(scenario)).collect();
    runs.sort();
    runs
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

#[test]
fn the_real_lockchaos_in_the_merge_job_fails_the_night_a_cell_moved_and_passes_a_steady_one() {
    let parent = tempfile::Builder::new().prefix("nightly-real-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();

    // Tonight redis-single × pause shows a violation in every run, after 12 safe ones.
    let dir = made_up_job_dir(parent.path(), "moved", 2);
    let job = run_merge_job(&dir, "901", Real);
    assert_eq!(job.night, "2025-06-01-901");
    // The merge: its own status would be 1 (pause did not match `safe`); the move outweighs it.
    let (status, said) = job.step("Merge");
    assert_eq!((status, job.output("merge", "status")), (Some(0), "4"), "{said}");
    assert!(said.contains("ROSE: redis-single × pause: safe in all 12 baseline runs"), "{said}");
    assert!(!said.contains("× kill:"), "{said}");
    for night in CARRIED {
        assert!(said.contains(&format!("history/nights/{night}")), "each night carried is a baseline: {said}");
    }
    // Tonight filed among the nights: every run of both shards (the two shards' runs of a
    // scenario share folder names: the second's get -2), each with only the five files kept.
    let (status, said) = job.step("File tonight among the nights");
    assert_eq!(status, Some(0), "{said}");
    assert!(said.starts_with("kept 8 runs of 2025-06-01-901 ("), "{said}");
    let tonight = run_folders(&dir.join("history/nights/2025-06-01-901"));
    assert_eq!(tonight.len(), 8, "{tonight:?}");
    for run in &tonight {
        let mut files: Vec<String> =
            std::fs::read_dir(run).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        files.sort();
        assert_eq!(files, ["history.jsonl", "report.html", "results.json", "run.json", "scenario.toml"], "{}", run.display());
    }
    // The history: every night, oldest first, the moved cell changed tonight and its runs
    // linked from the page.
    let (status, said) = job.step("History");
    assert_eq!((status, job.output("history", "status")), (Some(0), "4"), "{said}");
    assert!(said.contains("changed: redis-single × pause on 2025-06-01-901"), "{said}");
    let page = dir.join("history/page");
    assert!(page.join("history.html").is_file(), "{said}");
    let history = json(&page.join("history.json"));
    let labels: Vec<&str> = history["nights"].as_array().unwrap().iter().map(|n| n["label"].as_str().unwrap()).collect();
    assert_eq!(labels, [CARRIED.as_slice(), &["2025-06-01-901"]].concat());
    let cell = |column: &str| history["cells"].as_array().unwrap().iter().find(|c| c["column"] == column).unwrap().clone();
    let (pause, kill) = (cell("pause"), cell("kill"));
    assert_eq!(
        (pause["row"].as_str(), pause["state"].as_str(), kill["state"].as_str()),
        (Some("redis-single"), Some("changed"), Some("steady"))
    );
    let reports = pause["nights"][3]["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 4, "{pause}");
    for r in reports {
        assert!(page.join(r.as_str().unwrap()).is_file(), "{r} does not resolve from {}", page.display());
    }
    // And only at the end does the night fail, saying why.
    assert!(job.failed);
    for (name, status, out) in &job.steps {
        assert_eq!(*status, Some(if name == "Verdict" { 1 } else { 0 }), "{name}: {out}");
    }
    assert!(job.step("Verdict").1.contains("a cell moved beyond chance"), "{:#?}", job.steps);

    // A night like the ones carried: every cell matched and none moved, so every step passes.
    let dir = made_up_job_dir(parent.path(), "steady", 0);
    let job = run_merge_job(&dir, "902", Real);
    for (name, status, out) in &job.steps {
        assert_eq!(*status, Some(0), "{name}: {out}");
    }
    assert_eq!((job.output("merge", "status"), job.output("history", "status")), ("0", "0"), "{:#?}", job.steps);
    assert!(!job.failed);
    assert!(job.step("File tonight among the nights").1.starts_with("kept 8 runs of 2025-06-01-902 ("), "{:#?}", job.steps);
    assert_eq!(json(&dir.join("history/page/history.json"))["nights"].as_array().unwrap().len(), 4);
}
