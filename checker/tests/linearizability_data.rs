//! Hand-written histories with known verdicts: `tests/data/linearizability/MODEL/NAME.EXPECT.jsonl`
//! (or `.log`: a Jepsen log, read by its extension)
//! where MODEL is a model name (mutex, register, cas-register, kv) and EXPECT is `valid`,
//! `invalid`, `unknown` or `error` (the model cannot read the history).
//!
//! An optional sidecar `NAME.expect.json` refines the expectation: its `error` is a substring
//! of the error message; any other field is compared with the serialized result (objects
//! match as subsets, arrays element-wise with equal length). `description` is not checked.
//!
//! Adding a case = adding a file. All mismatches are reported together.

use checker::linearizability::{check, ModelKind};
use checker::read_history;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/linearizability");

#[test]
fn linearizability_cases() {
    let mut cases: Vec<(ModelKind, PathBuf)> = Vec::new();
    for model in ModelKind::ALL {
        let dir = Path::new(DATA).join(model.as_str());
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.extension().is_some_and(|e| e == "jsonl" || e == "log") {
                cases.push((model, path));
            }
        }
    }
    cases.sort_by(|a, b| a.1.cmp(&b.1));
    // Guards against a moved directory turning the test into a silent no-op.
    assert!(cases.len() >= 20, "expected at least 20 cases under {DATA}, found {}", cases.len());

    let mut failures = Vec::new();
    for (model, path) in &cases {
        let name = format!("{model}/{}", path.file_name().unwrap().to_string_lossy());
        if let Err(problem) = run_case(*model, path) {
            failures.push(format!("{name}: {problem}"));
        }
    }
    assert!(failures.is_empty(), "{} mismatch(es):\n{}", failures.len(), failures.join("\n"));
}

fn run_case(model: ModelKind, path: &Path) -> Result<(), String> {
    let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
    let (base, expected) = stem.rsplit_once('.').ok_or("file name lacks .EXPECT")?;
    let sidecar = path.with_file_name(format!("{base}.expect.json"));
    let refine: Value = match std::fs::read_to_string(&sidecar) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", sidecar.display()))?,
        Err(_) => Value::Object(Default::default()),
    };
    let events = read_history(path, None).map_err(|e| e.to_string())?.events;
    let result = check(&events, model, Duration::from_secs(5));
    match (expected, result) {
        ("error", Err(message)) => match refine.get("error").and_then(Value::as_str) {
            Some(want) if !message.contains(want) => Err(format!("error {message:?} lacks {want:?}")),
            _ => Ok(()),
        },
        ("error", Ok(r)) => Err(format!("expected an error, got {}", r.verdict)),
        (_, Err(message)) => Err(format!("unexpected error: {message}")),
        (want, Ok(r)) => {
            if r.verdict.as_str() != want {
                return Err(format!("verdict {} instead of {want}: {r:?}", r.verdict));
            }
            let mut expect = refine.clone();
            if let Value::Object(fields) = &mut expect {
                fields.remove("description");
            }
            let actual = serde_json::to_value(&r).expect("serializable");
            let mut problems = Vec::new();
            subset("", &expect, &actual, &mut problems);
            if problems.is_empty() {
                Ok(())
            } else {
                Err(problems.join("; "))
            }
        }
    }
}

fn subset(at: &str, expected: &Value, actual: &Value, problems: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, v) in e {
                match a.get(k) {
                    Some(av) => subset(&format!("{at}.{k}"), v, av, problems),
                    None => problems.push(format!("{at}.{k} missing")),
                }
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                subset(&format!("{at}[{i}]"), ev, av, problems);
            }
        }
        _ if expected == actual => {}
        _ => problems.push(format!("{at}: expected {expected}, got {actual}")),
    }
}
