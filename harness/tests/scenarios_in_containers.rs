//! Each shipped scenario, run for real (Docker, the node image, Redis) with a short time limit.
//! They run in parallel: every run has its own network, containers and run id.

use std::path::Path;
use std::process::Command;

/// (scenario, workload seconds, expected outcome, what results.json must also show)
const CASES: &[(&str, u64, &str, fn(&serde_json::Value) -> Result<(), String>)] = &[
    ("redis-single-baseline", 6, "safe", |r| {
        let rs = &r["properties"]["resource_safety"];
        (rs["lost_updates"] == 0 && rs["accepted_writes"].as_u64() > Some(5))
            .then_some(())
            .ok_or(format!("expected writes and no lost update: {rs}"))
    }),
    ("redis-single-pause", 9, "violation", |r| {
        let rs = &r["properties"]["resource_safety"];
        (rs["lost_updates"].as_u64() > Some(0)).then_some(()).ok_or(format!("expected lost updates: {rs}"))
    }),
];

#[test]
fn shipped_scenarios_reach_their_expected_outcome_and_leave_nothing_behind() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let store = tempfile::tempdir().unwrap();
    let handles: Vec<_> = CASES
        .iter()
        .map(|&(name, secs, expected, extra)| {
            let store = store.path().join(name);
            let root = root.clone();
            std::thread::spawn(move || {
                let out = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
                    .current_dir(&root)
                    .args(["scenario", name, "--quiet", "--time-limit", &secs.to_string(), "--store"])
                    .arg(&store)
                    .env("CI", "true")
                    .output()
                    .unwrap();
                let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
                let results = std::fs::read_to_string(store.join("latest/results.json"))
                    .map_err(|e| format!("{name}: no results.json ({e}); output: {text}"))?;
                let r: serde_json::Value = serde_json::from_str(&results).unwrap();
                let mut problems = vec![];
                if out.status.code() != Some(0) {
                    problems.push(format!("exit {:?}", out.status.code()));
                }
                if r["outcome"] != expected || r["matches_expectation"] != true || r["expect"] != expected {
                    problems.push(format!("outcome {} expect {}", r["outcome"], r["expect"]));
                }
                if let Err(e) = extra(&r) {
                    problems.push(e);
                }
                for file in ["history.jsonl", "report.html", "scenario.toml", "run.json", "logs/n1-redis.log", "logs/client-1.log"] {
                    if !store.join("latest").join(file).exists() {
                        problems.push(format!("missing {file}"));
                    }
                }
                let run_id = r["run_id"].as_str().unwrap_or_default().to_string();
                if problems.is_empty() { Ok(run_id) } else { Err(format!("{name}: {}; output: {text}", problems.join(", "))) }
            })
        })
        .collect();
    let outcomes: Vec<Result<String, String>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut failures: Vec<String> = outcomes.iter().filter_map(|o| o.clone().err()).collect();
    for run_id in outcomes.iter().filter_map(|o| o.as_ref().ok()) {
        let label = format!("label=lockchaos.run={run_id}");
        for what in [&["ps", "-aq", "--filter"][..], &["network", "ls", "-q", "--filter"][..]] {
            let out = Command::new("docker").args(what).arg(&label).output().unwrap();
            if !out.stdout.is_empty() {
                failures.push(format!("run {run_id} left: docker {} → {}", what.join(" "), String::from_utf8_lossy(&out.stdout)));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
