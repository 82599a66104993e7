//! Run folders made up by hand as a run leaves them, for the commands that read a run's own
//! files (`check`, `check --recheck`): run.json, each party's own events (two clients taking
//! turns, each increment landing: a safe history), history.jsonl merged as a run's end merges
//! it, and results.json as its end writes it. Nothing is run, no Docker.

use super::made_up_store;
use harness::run_verdict::{self, RunEnding};
use results::RunResults;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

pub fn jsonl(events: &[Value]) -> String {
    events.iter().map(|e| e.to_string() + "\n").collect()
}

/// run.json as a run of the scenario `demo` (expecting `safe`) writes it, as far as its readers
/// need (`run_store::RunInputs`).
pub fn run_json(run_id: &str) -> Value {
    let effective = json!({"description": "d", "expect": "safe", "backend": "redis-single", "clients": 2, "time_limit_secs": 1,
        "lock": {"ttl_ms": 2000}});
    json!({"run_id": run_id, "scenario": "demo", "started_at": "2026-01-01T00:00:00+00:00", "seed": 1, "effective": effective})
}

/// A run folder `root/name` as a run leaves it: run.json and each party's own events.
/// `history.jsonl` and `results.json` (as given) only when asked for: a killed run has neither.
pub fn run_folder(root: &Path, name: &str, history: bool, results: Option<Value>) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("workers")).unwrap();
    std::fs::write(dir.join("run.json"), run_json(name).to_string()).unwrap();
    let op = |time: u64, process: Value, kind: &str, f: &str, value: Value| json!({"time": time, "process": process, "type": kind, "f": f, "key": "ledger", "value": value});
    let client = |k: u64, t: u64| {
        vec![
            op(t, json!(k), "invoke", "acquire", Value::Null),
            op(t + 1, json!(k), "ok", "acquire", Value::Null),
            op(t + 8, json!(k), "invoke", "release", Value::Null),
            op(t + 9, json!(k), "ok", "release", Value::Null),
        ]
    };
    let ledger = |t: u64, k: u64, f: &str, v: u64| {
        let mut e = op(t, json!("resource"), "ok", f, json!(v));
        e["client"] = json!(k);
        e
    };
    let resource = vec![ledger(12, 1, "read", 0), ledger(15, 1, "write", 1), ledger(32, 2, "read", 1), ledger(35, 2, "write", 2)];
    std::fs::write(dir.join("workers/client-1.jsonl"), jsonl(&client(1, 10))).unwrap();
    std::fs::write(dir.join("workers/client-2.jsonl"), jsonl(&client(2, 30))).unwrap();
    std::fs::write(dir.join("resource.jsonl"), jsonl(&resource)).unwrap();
    std::fs::write(dir.join("nemesis.jsonl"), "").unwrap();
    if history {
        merge_history(&dir);
    }
    if let Some(r) = results {
        std::fs::write(dir.join("results.json"), r.to_string()).unwrap();
    }
    dir
}

/// The resource's record of client 1 writing 2 again after client 2 wrote it: client 2's
/// increment lost (a resource-safety violation).
pub fn lost_update() -> Value {
    json!({"time": 36, "process": "resource", "type": "ok", "f": "write", "key": "ledger", "value": 2, "client": 1})
}

pub fn append(file: &Path, event: &Value) {
    let mut text = std::fs::read_to_string(file).unwrap();
    text.push_str(&(event.to_string() + "\n"));
    std::fs::write(file, text).unwrap();
}

/// history.jsonl from the parties' files, as a run's end merges it.
pub fn merge_history(dir: &Path) {
    harness::run_store::RunDir::open(dir).unwrap().merge_history().unwrap();
}

/// Writes the results.json the end of the run in `dir` would write, ending as `ending` says,
/// from its history.jsonl as it is now.
pub fn write_results_as_its_end_would(dir: &Path, ending: RunEnding) -> RunResults {
    let events = checker::parse::read_history_file(&dir.join("history.jsonl")).unwrap().events;
    let bound = run_verdict::stuck_bound_of(dir).unwrap().unwrap();
    let check = checker::check(&events, &run_verdict::check_options(&events, bound));
    let verdict = ending.verdict(&check, results::Expectation::Safe, &[]);
    let mut r = made_up_store::run_results("demo", results::Expectation::Safe, verdict.outcome, verdict.unknown_cause);
    r.matches_expectation = verdict.matches_expectation;
    r.interrupted = ending.cut_short.is_some();
    r.properties = check;
    std::fs::write(dir.join("results.json"), serde_json::to_string_pretty(&r).unwrap()).unwrap();
    r
}
