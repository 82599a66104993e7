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

fn lockchaos(args: &[&str], file: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos")).args(args).arg(file).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Writes `events` as JSON lines and as EDN op maps; returns both files.
fn write_both(dir: &Path, name: &str, events: &[Value]) -> [PathBuf; 2] {
    let jsonl = dir.join(format!("{name}.jsonl"));
    let edn = dir.join(format!("{name}.edn"));
    std::fs::write(&jsonl, events.iter().map(|e| e.to_string() + "\n").collect::<String>()).unwrap();
    std::fs::write(&edn, events.iter().map(|e| edn_line(e) + "\n").collect::<String>()).unwrap();
    [jsonl, edn]
}

/// `(process, type, f, key, value)` per event, in history order.
fn events(ops: &[(u64, &str, &str, &str, Value)]) -> Vec<Value> {
    ops.iter()
        .enumerate()
        .map(|(i, (p, kind, f, key, value))| {
            serde_json::json!({"index": i, "time": 1000 * (i + 1), "process": p, "type": kind, "f": f, "key": key, "value": value})
        })
        .collect()
}

/// Porcupine's kv histories read a never-written key as "", and many register tests start from
/// 0: invalid from nil (the default), valid with `--initial`.
#[test]
fn initial_value_decides_reads_of_unwritten_objects() {
    use serde_json::json;
    let tmp = tempfile::tempdir().unwrap();
    let kv = events(&[
        (1, "invoke", "get", "x", json!(null)),
        (1, "ok", "get", "x", json!("")),
        (2, "invoke", "append", "x", json!("a")),
        (2, "ok", "append", "x", json!("a")),
        (1, "invoke", "get", "x", json!(null)),
        (1, "ok", "get", "x", json!("a")),
    ]);
    let register = events(&[
        (1, "invoke", "read", "r", json!(null)),
        (1, "ok", "read", "r", json!(0)),
        (2, "invoke", "write", "r", json!(1)),
        (2, "ok", "write", "r", json!(1)),
    ]);
    let cases = [
        ("kv", write_both(tmp.path(), "kv", &kv), "\"\""),
        ("register", write_both(tmp.path(), "register", &register), "0"),
        ("cas-register", write_both(tmp.path(), "register", &register), "0"),
    ];
    for (model, files, initial) in &cases {
        for file in files {
            let (code, out, err) = lockchaos(&["check", "--model", model], file);
            assert_eq!(code, Some(1), "{model} {} from nil: {out}{err}", file.display());
            for nil in [["--initial", "null"], ["--initial", " null "]] {
                let (code, out, err) = lockchaos(&[&["check", "--model", model][..], &nil].concat(), file);
                assert_eq!(code, Some(1), "{model} {} with {nil:?}: {out}{err}", file.display());
            }
            let (code, out, err) = lockchaos(&["check", "--model", model, "--initial", initial], file);
            assert_eq!(code, Some(0), "{model} {} from {initial}: {out}{err}", file.display());
            assert!(out.contains(&format!("linearizability ({model}, initial value {initial}): valid")), "{out}");
        }
    }
    // The JSON report carries the value; a wrong value is still wrong.
    let [kv_jsonl, _] = &cases[0].1;
    let (code, out, _) = lockchaos(&["check", "--json", "--model", "kv", "--initial", "\"\""], kv_jsonl);
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["linearizability"]["initial"], "");
    assert_eq!(v["outcome"], "valid");
    let (code, _, _) = lockchaos(&["check", "--model", "kv", "--initial", "\"b\""], kv_jsonl);
    assert_eq!(code, Some(1));
}

#[test]
fn initial_value_errors_name_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let [file, _] =
        write_both(tmp.path(), "h", &events(&[(1, "invoke", "acquire", "l", Value::Null), (1, "ok", "acquire", "l", Value::Null)]));
    let one_error_line = |args: &[&str], needles: &[&str]| {
        let (code, out, err) = lockchaos(args, &file);
        assert_eq!(code, Some(2), "{args:?}: {out}{err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: {err}");
        for needle in needles {
            assert!(errors[0].contains(needle), "{args:?}: {needle:?} not in {err}");
        }
    };
    // Not JSON: a bare word, and the shell's empty string.
    one_error_line(&["check", "--model", "kv", "--initial", "abc"], &["--initial", "abc", "JSON"]);
    one_error_line(&["check", "--model", "kv", "--initial", ""], &["--initial", "JSON"]);
    one_error_line(&["check", "--model", "kv", "--initial", "1 2"], &["--initial", "JSON"]);
    // A lock starts free.
    one_error_line(&["check", "--model", "mutex", "--initial", "0"], &["--initial", "mutex"]);
    // Without a model there is nothing for it to apply to.
    one_error_line(&["check", "--initial", "0"], &["--model"]);
    // null is the mutex's default, so it is accepted.
    let (code, out, err) = lockchaos(&["check", "--model", "mutex", "--initial", "null"], &file);
    assert_eq!(code, Some(0), "{out}{err}");
}

#[test]
fn jepsen_logs_are_read_by_extension_by_content_and_by_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let data = Path::new(DATA).join("cas-register");
    for (name, want) in [("jepsen_log_timed_out_write_lands_late.valid.log", 0), ("jepsen_log_stale_read_after_cas.invalid.log", 1)] {
        let log = data.join(name);
        // By its extension; by its content (a .txt); by the flag over a misleading extension.
        let txt = tmp.path().join(format!("{name}.txt"));
        let misnamed = tmp.path().join(format!("{name}.jsonl"));
        std::fs::copy(&log, &txt).unwrap();
        std::fs::copy(&log, &misnamed).unwrap();
        for (file, flag) in [(&log, None), (&txt, None), (&misnamed, Some("jepsen-log"))] {
            let mut args = vec!["check", "--model", "cas-register"];
            if let Some(f) = flag {
                args.extend(["--format", f]);
            }
            let (code, out, err) = lockchaos(&args, file);
            assert_eq!(code, Some(want), "{}: {out}{err}", file.display());
            assert!(out.contains("(16 events)"), "only the 16 operation lines (2 of the nemesis) are events: {out}");
        }
    }
    // An operation line whose value is not EDN names its line.
    let bad = tmp.path().join("bad.log");
    std::fs::write(
        &bad,
        "INFO  jepsen.core - Running\nINFO  jepsen.util - 0\t:invoke\t:cas\t[1 2\nINFO  jepsen.util - 0\t:ok\t:cas\t[1 2]\n",
    )
    .unwrap();
    let (code, out, err) = lockchaos(&["check"], &bad);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("bad.log:2") && err.contains("the value `[1 2`"), "{err}");
}

/// Client 1's release fails at 2 s; client 2 asks from 2.1 s and is refused at 14 s: the lock
/// was free for 12 s with a client asking.
#[test]
fn the_stuck_property_is_printed_with_its_bound_from_the_flag_or_the_run_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let ops = [
        (1, "invoke", "acquire", 0u64),
        (1, "ok", "acquire", 10),
        (1, "invoke", "release", 1900),
        (1, "info", "release", 2000),
        (2, "invoke", "acquire", 2100),
        (2, "fail", "acquire", 14_000),
    ];
    let lines: String = ops
        .iter()
        .enumerate()
        .map(|(i, (p, kind, f, ms))| {
            serde_json::json!({"index": i, "time": ms * 1_000_000, "process": p, "type": kind, "f": f, "key": "k"}).to_string() + "\n"
        })
        .collect();
    let file = tmp.path().join("stuck.jsonl");
    std::fs::write(&file, &lines).unwrap();

    let (_, out, err) = lockchaos(&["check"], &file);
    assert!(out.contains("stuck: invalid (informational) — stuck 1 time(s), longest 12000 ms, bound 10000 ms"), "{out}{err}");
    assert!(out.contains("from 2.0 s to 14.0 s (12.0 s) the lock was free and nobody was granted it while client 2 asked; it began when client 1's release failed"), "{out}");

    let stuck_of = |args: &[&str], path: &Path| {
        let (_, out, err) = lockchaos(args, path);
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        assert_ne!(v["outcome"], "invalid", "stuck does not decide the outcome");
        (v["properties"]["stuck"]["verdict"].as_str().unwrap().to_string(), v["properties"]["stuck"]["bound_ms"].as_u64().unwrap())
    };
    assert_eq!(stuck_of(&["check", "--json"], &file), ("invalid".into(), 10_000));
    assert_eq!(stuck_of(&["check", "--json", "--stuck-after-ms", "20000"], &file), ("unknown".into(), 20_000));

    // A run folder: its scenario's bound, from run.json; the flag still wins.
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::write(run.join("history.jsonl"), &lines).unwrap();
    let effective = serde_json::json!({"description": "d", "expect": "safe", "backend": "redis-single", "clients": 2,
        "time_limit_secs": 20, "stuck_after_ms": 15_000, "lock": {"ttl_ms": 2000}});
    let run_json = serde_json::json!({"run_id": "r", "scenario": "s", "started_at": "t", "seed": 1, "effective": effective});
    std::fs::write(run.join("run.json"), run_json.to_string()).unwrap();
    assert_eq!(stuck_of(&["check", "--json"], &run), ("unknown".into(), 15_000));
    assert_eq!(stuck_of(&["check", "--json"], &run.join("history.jsonl")), ("unknown".into(), 15_000));
    assert_eq!(stuck_of(&["check", "--json", "--stuck-after-ms", "5000"], &run), ("invalid".into(), 5000));
}
