//! The matrix past one machine: three shards (`--shard K/3`) merged with `lockchaos matrix
//! merge`, and the matrix run two at a time (`--jobs 2`), give the same cells and run counts
//! as the matrix run whole, one run after another; and the nightly
//! workflow that fans the shards out is a valid GitHub workflow (checked against the schema
//! that check-jsonschema carries, offline), so a typo fails here rather than at night. Its merge
//! job's shell steps are also run here, in order, against a stand-in lockchaos: the nights
//! carried, the baseline, the night filed, the history laid out and the verdict.

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

const SCENARIOS: &str = "redis-single-baseline,toy-lock-baseline";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn matrix(store: &Path, extra: &[&str]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockchaos"));
    cmd.current_dir(root())
        .args(["matrix", "--scenarios", SCENARIOS, "--runs", "2", "--time-limit", "3", "--quiet", "--store"])
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

/// One step of a job, as the workflow writes it: its keys, `run`'s script as bash gets it, and
/// `env`'s and `with`'s entries in order.
#[derive(Debug, Default)]
struct Step {
    name: String,
    id: String,
    if_: String,
    uses: String,
    run: String,
    env: Vec<(String, String)>,
    with: Vec<(String, String)>,
}

impl Step {
    fn with(&self, key: &str) -> &str {
        self.with.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).unwrap_or("")
    }
}

/// The lines from `i` on that are blank or indented past `at`, dedented, as one text; and the
/// index of the first line after them.
fn block<S: AsRef<str>>(lines: &[S], mut i: usize, at: usize) -> (String, usize) {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let from = i;
    while i < lines.len() && (lines[i].as_ref().trim().is_empty() || indent(lines[i].as_ref()) > at) {
        i += 1;
    }
    let body = &lines[from..i];
    let cut = body.iter().map(AsRef::as_ref).filter(|l| !l.trim().is_empty()).map(indent).min().unwrap_or(0);
    let text: Vec<&str> = body.iter().map(|l| l.as_ref().get(cut..).unwrap_or("")).collect();
    (text.join("\n").trim_end().to_string() + "\n", i)
}

/// A job's steps, read from the workflow's text as it is laid out here: jobs at two spaces,
/// steps at six (`- `), their keys at eight, `|` blocks below a key.
fn job_steps(workflow: &str, job: &str) -> Vec<Step> {
    let start = workflow.find(&format!("\n  {job}:\n")).unwrap_or_else(|| panic!("no job {job}")) + 1;
    let job_lines: Vec<&str> = workflow[start..].lines().skip(1).take_while(|l| l.is_empty() || l.starts_with("   ")).collect();
    let first = job_lines.iter().position(|l| l.trim() == "steps:").expect("the job's steps") + 1;
    let lines = &job_lines[first..];
    let mut steps: Vec<Step> = vec![];
    let mut i = 0;
    while i < lines.len() {
        let line = match lines[i].strip_prefix("      - ") {
            Some(rest) => {
                steps.push(Step::default());
                rest
            }
            None => lines[i].trim_start(),
        };
        i += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let step = steps.last_mut().expect("a step begins with `- `");
        let (key, value) = line.split_once(':').unwrap_or_else(|| panic!("not a key: {line:?}"));
        let mut value = value.trim().to_string();
        if value == "|" || value.is_empty() {
            (value, i) = block(lines, i, 8);
        }
        match key {
            "name" => step.name = value,
            "id" => step.id = value,
            "if" => step.if_ = value,
            "uses" => step.uses = value,
            "run" => step.run = value,
            "env" | "with" => {
                let body: Vec<&str> = value.lines().collect();
                let mut entries = vec![];
                let mut j = 0;
                while j < body.len() {
                    let (k, v) = body[j].split_once(':').unwrap_or_else(|| panic!("not an entry: {:?}", body[j]));
                    j += 1;
                    let mut v = v.trim().to_string();
                    if v == "|" {
                        (v, j) = block(&body, j, 0);
                    }
                    entries.push((k.to_string(), v.trim_end().to_string()));
                }
                if key == "env" {
                    step.env = entries;
                } else {
                    step.with = entries;
                }
            }
            _ => {}
        }
    }
    steps
}

/// `${{ github.run_id }}` and `${{ steps.ID.outputs.KEY }}` as the runner expands them (an
/// output never set is empty); any other expression is not expected in a shell step.
fn expand(text: &str, run_id: &str, outputs: &HashMap<String, HashMap<String, String>>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${{") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("}}").expect("an expression ends") + at;
        let expr = rest[at + 3..end].trim();
        let parts: Vec<&str> = expr.split('.').collect();
        match parts.as_slice() {
            ["github", "run_id"] => out.push_str(run_id),
            ["steps", id, "outputs", key] => out.push_str(outputs.get(*id).and_then(|o| o.get(*key)).map(String::as_str).unwrap_or("")),
            _ => panic!("the simulation does not know {expr:?}"),
        }
        rest = &rest[end + 2..];
    }
    out + rest
}

/// What a simulated merge job did: each step's name, exit status (None: not run) and output;
/// the stand-in lockchaos's command lines; whether the job failed; tonight's name.
struct MergeJob {
    steps: Vec<(String, Option<i32>, String)>,
    calls: Vec<String>,
    failed: bool,
    night: String,
}

impl MergeJob {
    fn step(&self, name: &str) -> (Option<i32>, &str) {
        let (_, status, out) = self.steps.iter().find(|(n, ..)| n == name).unwrap_or_else(|| panic!("no step {name}"));
        (*status, out)
    }
}

/// Runs the merge job's shell steps in `dir` in order, as a runner does (`bash -e`, the step's
/// env, GITHUB_OUTPUT; a step without `if` only while none has failed, `if: always()` anyway).
/// The steps that use actions are not run: what they would leave (the shards' stores, the
/// nights restored) is already in `dir`, and the build's binary is a stand-in that records its
/// command line and exits with the status given for `matrix` or for `history`. `date` says it
/// is 2025-06-01.
fn run_merge_job(dir: &Path, run_id: &str, merge_status: i32, history_status: i32) -> MergeJob {
    let text = std::fs::read_to_string(root().join(".github/workflows/nightly-chaos.yml")).unwrap();
    let executable = |path: &Path, content: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    };
    let calls = dir.join(".calls");
    executable(
        &dir.join("target/release/lockchaos"),
        "#!/usr/bin/env bash\necho \"$*\" >> \"$FAKE_CALLS\"\ncase \"$1\" in\n  matrix) exit \"$FAKE_MERGE_STATUS\" ;;\n  history) exit \"$FAKE_HISTORY_STATUS\" ;;\nesac\nexit 99\n",
    );
    executable(&dir.join(".bin/date"), "#!/bin/sh\necho 2025-06-01\n");
    executable(&dir.join(".github/scripts/keep-night.sh"), &std::fs::read_to_string(root().join(".github/scripts/keep-night.sh")).unwrap());
    let path = format!("{}:{}", dir.join(".bin").display(), std::env::var("PATH").unwrap());

    let mut outputs: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut job = MergeJob { steps: vec![], calls: vec![], failed: false, night: String::new() };
    for (n, step) in job_steps(&text, "merge").into_iter().enumerate() {
        if !step.uses.is_empty() || step.run.starts_with("cargo ") {
            continue;
        }
        let runs = match step.if_.as_str() {
            "" => !job.failed,
            "always()" => true,
            other => panic!("the simulation does not know `if: {other}`"),
        };
        if !runs {
            job.steps.push((step.name, None, String::new()));
            continue;
        }
        let (script, output) = (dir.join(format!(".step-{n}.sh")), dir.join(format!(".output-{n}")));
        std::fs::write(&script, expand(&step.run, run_id, &outputs)).unwrap();
        std::fs::write(&output, "").unwrap();
        let out = Command::new("bash")
            .arg("-e")
            .arg(&script)
            .current_dir(dir)
            .envs(step.env.iter().map(|(k, v)| (k.clone(), expand(v, run_id, &outputs))))
            .env("PATH", &path)
            .env("GITHUB_OUTPUT", &output)
            .env("FAKE_CALLS", &calls)
            .env("FAKE_MERGE_STATUS", merge_status.to_string())
            .env("FAKE_HISTORY_STATUS", history_status.to_string())
            .env_remove("KEEP_NIGHTS")
            .output()
            .unwrap();
        let set = std::fs::read_to_string(&output).unwrap();
        let set = set.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string()));
        outputs.entry(step.id.clone()).or_default().extend(set);
        job.failed |= !out.status.success();
        job.steps.push((
            step.name,
            out.status.code(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        ));
    }
    job.calls = std::fs::read_to_string(&calls).unwrap_or_default().lines().map(String::from).collect();
    job.night = outputs["night"]["name"].clone();
    job
}

/// A run folder as a run leaves it, logs and a party's events included.
fn run_folder(dir: &Path) {
    for f in ["results.json", "scenario.toml", "run.json", "history.jsonl", "report.html", "logs/n1.log", "workers/client-1.jsonl"] {
        let path = dir.join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, f).unwrap();
    }
}

/// A runner's workspace after the download and the restore: two shards' stores, and a run in
/// each night carried.
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
    let job = run_merge_job(&dir, "777", 0, 0);
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
    let job = run_merge_job(&dir, "777", 4, 0);
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
    let job = run_merge_job(&dir, "777", 0, 0);
    assert_eq!(job.calls, [format!("matrix merge {shards} --store store{baseline}"), format!("history{nights} --store history/page")]);
    assert!(job.step("File tonight among the nights").1.contains("already among the nights"), "{:#?}", job.steps);
    assert!(!job.failed, "{:#?}", job.steps);

    // Cells that did not match and a cell that moved tonight: both statuses kept, both said.
    let dir = merge_job_dir(parent.path(), "both", &carried[..2]);
    let job = run_merge_job(&dir, "778", 1, 4);
    for (name, status, out) in &job.steps {
        assert_eq!(*status, Some(if name == "Verdict" { 1 } else { 0 }), "{name}: {out}");
    }
    let said = job.step("Verdict").1;
    assert!(
        said.contains("cells did not match their expectations") && said.contains("a cell moved beyond chance: see history.html"),
        "{said}"
    );

    // The verdict, on each status the merge and the history can end with.
    let steps = job_steps(&std::fs::read_to_string(root().join(".github/workflows/nightly-chaos.yml")).unwrap(), "merge");
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
