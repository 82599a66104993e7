//! Data-driven tests for resource safety, EDN reading, fencing and holder overlap. Every history in
//! `tests/data/{resource_safety,edn,fencing,holder_overlap}/` (`NAME.jsonl` or `NAME.edn`) is read with
//! `read_history`, checked, and compared with `NAME.expect.json`:
//!
//! - `description`: what the history shows (not checked);
//! - `error`: reading must fail with a message containing this text (nothing else is checked);
//! - `warnings`: one substring per expected warning, in order (absent = no warnings);
//! - `event_count`: how many events were read;
//! - `events`: `{"POSITION": {...}}`, each compared with the serialized event at that position;
//! - `outcome`, `resource_safety`, `fencing`, `holder_overlap`: compared with the results.
//!
//! Objects match as subsets (only the listed fields are checked), arrays must have the same
//! length and match element-wise, everything else must be equal. Adding a case = adding two
//! files. All mismatches of all cases of a folder are reported together.
//!
//! `tests/data/edn_jsonl_pairs/NAME.{edn,jsonl}` must parse to the same events.

use checker::{check, read_history, CheckOptions};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
const KNOWN_FIELDS: &[&str] =
    &["description", "error", "warnings", "event_count", "events", "outcome", "resource_safety", "fencing", "holder_overlap"];

#[test]
fn resource_safety_cases() {
    run_folder("resource_safety", 8);
}

#[test]
fn edn_cases() {
    run_folder("edn", 5);
}

#[test]
fn fencing_cases() {
    run_folder("fencing", 7);
}

#[test]
fn holder_overlap_cases() {
    run_folder("holder_overlap", 7);
}

#[test]
fn edn_and_jsonl_of_one_history_give_the_same_events() {
    let edn = histories("edn_jsonl_pairs");
    let edn: Vec<&PathBuf> = edn.iter().filter(|p| has_ext(p, "edn")).collect();
    assert!(edn.len() >= 2, "expected at least 2 pairs");
    for path in edn {
        let from_edn = read_history(path, None).unwrap();
        let from_jsonl = read_history(&path.with_extension("jsonl"), None).unwrap();
        assert!(!from_edn.events.is_empty(), "{}", path.display());
        assert_eq!(from_edn, from_jsonl, "{}", path.display());
    }
}

fn has_ext(p: &Path, ext: &str) -> bool {
    p.extension().is_some_and(|e| e == ext)
}

fn histories(folder: &str) -> Vec<PathBuf> {
    let dir = Path::new(DATA).join(folder);
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| has_ext(p, "jsonl") || has_ext(p, "edn"))
        .collect();
    cases.sort();
    cases
}

fn run_folder(folder: &str, min_cases: usize) {
    let cases = histories(folder);
    // Guards against a moved directory turning the test into a silent no-op.
    assert!(cases.len() >= min_cases, "expected at least {min_cases} cases in {folder}, found {}", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        if let Err(problems) = run_case(case) {
            failures.extend(problems.into_iter().map(|p| format!("{name}: {p}")));
        }
    }
    assert!(failures.is_empty(), "{} mismatch(es):\n{}", failures.len(), failures.join("\n"));
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
    let mut problems: Vec<String> =
        expect.keys().filter(|k| !KNOWN_FIELDS.contains(&k.as_str())).map(|k| format!("unknown expectation field `{k}`")).collect();

    let parsed = read_history(history, None);
    if let Some(wanted) = expect.get("error") {
        let wanted = wanted.as_str().unwrap_or_default();
        match parsed {
            Err(e) if e.to_string().contains(wanted) => {}
            Err(e) => problems.push(format!("error `{e}` does not contain `{wanted}`")),
            Ok(_) => problems.push(format!("parsed, but expected an error containing `{wanted}`")),
        }
        return if problems.is_empty() { Ok(()) } else { Err(problems) };
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
        && parsed.warnings.iter().zip(&wanted_warnings).all(|(got, want)| got.contains(want));
    if !warnings_match {
        problems.push(format!("warnings {:?}, expected {:?}", parsed.warnings, wanted_warnings));
    }
    if let Some(n) = expect.get("event_count") {
        compare(n, &parsed.events.len().into(), "event_count", &mut problems);
    }
    if let Some(wanted) = expect.get("events") {
        // By position, so a case lists only the events it is about.
        let got: Map<String, Value> =
            parsed.events.iter().enumerate().map(|(i, e)| (i.to_string(), serde_json::to_value(e).unwrap())).collect();
        compare(wanted, &Value::Object(got), "events", &mut problems);
    }

    let results = serde_json::to_value(check(&parsed.events, &CheckOptions::default())).unwrap();
    for field in ["outcome", "resource_safety", "fencing", "holder_overlap"] {
        if let Some(wanted) = expect.get(field) {
            compare(wanted, &results[field], field, &mut problems);
        }
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
        // 1.0 and 1 are the same number to a reader of results.json.
        (Value::Number(w), Value::Number(g)) if w.as_f64() == g.as_f64() => {}
        _ if wanted == got => {}
        _ => problems.push(format!("{at}: got {got}, expected {wanted}")),
    }
}
