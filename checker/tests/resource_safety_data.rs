//! Data-driven resource-safety tests: every `tests/data/resource_safety/NAME.jsonl` is read
//! with `read_history_file`, checked, and compared with `NAME.expect.json`:
//!
//! - `description`: what the history shows (not checked);
//! - `error`: reading must fail with a message containing this text (nothing else is checked);
//! - `warnings`: one substring per expected warning, in order (absent = no warnings);
//! - `outcome`: the overall verdict;
//! - `resource_safety`: compared with the serialized result. Objects match as subsets (only
//!   the listed fields are checked), arrays must have the same length and match element-wise,
//!   everything else must be equal.
//!
//! Adding a case = adding two files. All mismatches of all cases are reported together.

use checker::{check, read_history_file, CheckOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/resource_safety");
const KNOWN_FIELDS: &[&str] = &[
    "description",
    "error",
    "warnings",
    "outcome",
    "resource_safety",
];

#[test]
fn resource_safety_cases() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(DATA)
        .expect("data directory")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    cases.sort();
    // Guards against a moved directory turning the test into a silent no-op.
    assert!(
        cases.len() >= 7,
        "expected at least 7 cases in {DATA}, found {}",
        cases.len()
    );

    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_stem().unwrap().to_string_lossy().into_owned();
        if let Err(problems) = run_case(case) {
            failures.extend(problems.into_iter().map(|p| format!("{name}: {p}")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatch(es):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn run_case(history: &Path) -> Result<(), Vec<String>> {
    let expect_path = history.with_extension("expect.json");
    let expect: Value = std::fs::read_to_string(&expect_path)
        .map_err(|e| format!("cannot read {}: {e}", expect_path.display()))
        .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("bad expectations: {e}")))
        .map_err(|e| vec![e])?;
    let Some(expect) = expect.as_object() else {
        return Err(vec!["expectations must be a JSON object".into()]);
    };
    let mut problems: Vec<String> = expect
        .keys()
        .filter(|k| !KNOWN_FIELDS.contains(&k.as_str()))
        .map(|k| format!("unknown expectation field `{k}`"))
        .collect();

    let parsed = read_history_file(history);
    if let Some(wanted) = expect.get("error") {
        let wanted = wanted.as_str().unwrap_or_default();
        match parsed {
            Err(e) if e.to_string().contains(wanted) => {}
            Err(e) => problems.push(format!("error `{e}` does not contain `{wanted}`")),
            Ok(_) => problems.push(format!(
                "parsed, but expected an error containing `{wanted}`"
            )),
        }
        return if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        };
    }
    let parsed = match parsed {
        Ok(p) => p,
        Err(e) => {
            problems.push(format!("unexpected error: {e}"));
            return Err(problems);
        }
    };

    let wanted_warnings: Vec<&str> = match expect.get("warnings") {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let warnings_match = parsed.warnings.len() == wanted_warnings.len()
        && parsed
            .warnings
            .iter()
            .zip(&wanted_warnings)
            .all(|(got, want)| got.contains(want));
    if !warnings_match {
        problems.push(format!(
            "warnings {:?}, expected {:?}",
            parsed.warnings, wanted_warnings
        ));
    }

    let results = serde_json::to_value(check(&parsed.events, &CheckOptions::default())).unwrap();
    if let Some(outcome) = expect.get("outcome") {
        if &results["outcome"] != outcome {
            problems.push(format!(
                "outcome {}, expected {outcome}",
                results["outcome"]
            ));
        }
    }
    if let Some(wanted) = expect.get("resource_safety") {
        compare(
            wanted,
            &results["resource_safety"],
            "resource_safety",
            &mut problems,
        );
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Subset match for objects, element-wise for arrays, equality for the rest.
fn compare(wanted: &Value, got: &Value, at: &str, problems: &mut Vec<String>) {
    match (wanted, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                match g.get(k) {
                    Some(gv) => compare(wv, gv, &format!("{at}.{k}"), problems),
                    None => problems.push(format!("{at}.{k}: missing from the results")),
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                compare(wv, gv, &format!("{at}[{i}]"), problems);
            }
        }
        _ if wanted == got => {}
        _ => problems.push(format!("{at}: got {got}, expected {wanted}")),
    }
}
