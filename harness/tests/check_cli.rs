//! `lockchaos check` over every known history in the checker's test data, for every model, in
//! both formats: each JSON-lines history is also written as Jepsen EDN op maps and must get the
//! same verdict. Exit status is Jepsen's: 0 valid, 1 invalid, 2 unknown or error.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../checker/tests/data/linearizability");

fn check(file: &Path, model: &str) -> (Option<i32>, String) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_lockchaos")).args(["check", "--model", model, "--timeout", "20"]).arg(file).output().unwrap();
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// One JSON event as a Jepsen op map: keys become keywords, and so do `type` and `f`.
fn edn_line(event: &Value) -> String {
    let fields: Vec<String> = event
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| match (k.as_str(), v) {
            ("type" | "f", Value::String(s)) => format!(":{k} :{s}"),
            ("process", Value::String(s)) => format!(":{k} :{s}"),
            _ => format!(":{k} {}", edn_value(v)),
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

fn edn_value(v: &Value) -> String {
    match v {
        Value::Null => "nil".into(),
        Value::Array(items) => format!("[{}]", items.iter().map(edn_value).collect::<Vec<_>>().join(" ")),
        Value::Object(map) => format!("{{{}}}", map.iter().map(|(k, v)| format!(":{k} {}", edn_value(v))).collect::<Vec<_>>().join(", ")),
        // JSON strings, numbers and booleans are written the same way in EDN.
        other => other.to_string(),
    }
}

#[test]
fn every_known_history_gets_its_verdict_in_both_formats() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cases = 0;
    let mut failures = vec![];
    for model_dir in std::fs::read_dir(DATA).unwrap().map(|e| e.unwrap().path()) {
        let model = model_dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&model_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        files.sort();
        for file in files {
            // NAME.<valid|invalid|unknown|error>.jsonl
            let verdict = file.file_stem().unwrap().to_string_lossy().rsplit('.').next().unwrap().to_string();
            let want = match verdict.as_str() {
                "valid" => 0,
                "invalid" => 1,
                "unknown" | "error" => 2,
                other => panic!("{}: unknown verdict suffix {other}", file.display()),
            };
            let text = std::fs::read_to_string(&file).unwrap();
            let edn: String = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str::<Value>(l).map(|v| edn_line(&v) + "\n").unwrap_or_else(|_| l.to_string() + "\n"))
                .collect();
            let edn_file = tmp.path().join(format!("{model}-{}.edn", file.file_stem().unwrap().to_string_lossy()));
            std::fs::write(&edn_file, edn).unwrap();
            for f in [&file, &edn_file] {
                cases += 1;
                let (code, output) = check(f, &model);
                if code != Some(want) {
                    failures.push(format!("{} ({model}): exit {code:?}, want {want}: {}", f.display(), output.trim()));
                }
            }
        }
    }
    assert!(cases >= 60, "only {cases} cases: has the data moved?");
    assert!(failures.is_empty(), "{} of {cases} failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn a_run_folder_and_json_output() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    // Two clients read 5 and both write 6: one increment lost.
    let lines = [
        r#"{"time":1,"process":"resource","type":"ok","f":"read","key":"k","value":5,"client":1}"#,
        r#"{"time":2,"process":"resource","type":"ok","f":"read","key":"k","value":5,"client":2}"#,
        r#"{"time":3,"process":"resource","type":"ok","f":"write","key":"k","value":6,"client":1}"#,
        r#"{"time":4,"process":"resource","type":"ok","f":"write","key":"k","value":6,"client":2}"#,
    ];
    std::fs::write(run.join("history.jsonl"), lines.join("\n") + "\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos")).args(["check", "--json"]).arg(&run).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "invalid");
    assert_eq!(v["properties"]["resource_safety"]["interleaved_sections"], 1);

    // A malformed line is an error (exit 2) naming the file and line, not a verdict.
    std::fs::write(run.join("history.jsonl"), lines[0].to_string() + "\n{\"time\":\n" + lines[1] + "\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos")).arg("check").arg(&run).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("history.jsonl:2"), "{err}");
}
