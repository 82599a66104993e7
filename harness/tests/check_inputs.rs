//! What `lockchaos check` and `lockchaos scenario` do with input that is not a history or a
//! scenario file: endless input ends with an error within seconds, Ctrl-C ends a check that
//! waits for input. No Docker.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `command` for at most `limit`; `None` if it was still running then (it is killed).
fn run_for(mut command: Command, limit: Duration) -> Option<Output> {
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    while start.elapsed() < limit {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    None
}

fn lockchaos(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lockchaos"));
    c.args(args);
    c
}

/// /dev/zero never ends: it is a device, not a history, and refused unread, naming it (it used
/// to be read until memory ran out, then until its first line was too long).
#[test]
fn check_of_endless_input_is_an_error_within_seconds() {
    for format in ["jsonl", "edn"] {
        let out = run_for(lockchaos(&["check", "--format", format, "/dev/zero"]), Duration::from_secs(5))
            .unwrap_or_else(|| panic!("check --format {format} /dev/zero still running after 5 s"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("/dev/zero: a character device, not a regular file: refused as a history"), "{err}");
    }
}

/// A scenario file is a regular file of a few kilobytes; /dev/zero is refused unread, naming it.
#[test]
fn scenario_from_endless_input_is_an_error_within_seconds() {
    let out = run_for(lockchaos(&["scenario", "/dev/zero"]), Duration::from_secs(5)).expect("scenario /dev/zero still running after 5 s");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("/dev/zero: a character device, not a regular file: refused as a scenario file"), "{err}");
}

/// `check` installs no signal handler, so Ctrl-C (SIGINT) ends it, even while it waits for
/// input that never comes (a FIFO nobody writes). The child gets SIGINT's default action
/// explicitly: a shell's background job inherits SIGINT ignored, and so would this test.
#[test]
fn sigint_ends_a_check_waiting_for_input() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("history.jsonl");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let mut child = Command::new("env")
        .arg("--default-signal=INT")
        .arg(env!("CARGO_BIN_EXE_lockchaos"))
        .arg("check")
        .arg(&fifo)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Opened for writing and kept open: the check's read blocks instead of seeing the end.
    let writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "check ended before any input");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(2) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("check still running 2 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(writer);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(nix::sys::signal::Signal::SIGINT as i32), "{status:?}");
    assert!(Path::new(&fifo).exists());
}

/// Lines in another order than their indexes: the same history, the same verdict (it used to
/// be `invalid`, with overlapping holders).
#[test]
fn check_takes_events_in_index_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = vec![];
    for round in 0..30u64 {
        let c = round % 3 + 1;
        for (kind, f, extra) in [("invoke", "acquire", ""), ("ok", "acquire", ""), ("invoke", "release", ""), ("ok", "release", "")] {
            let i = lines.len();
            let time = (i + 1) * 1000;
            lines.push(format!(r#"{{"index":{i},"time":{time},"process":{c},"type":"{kind}","f":"{f}","key":"k"{extra}}}"#));
        }
    }
    let ordered = dir.path().join("ordered.jsonl");
    std::fs::write(&ordered, lines.join("\n") + "\n").unwrap();
    lines.reverse();
    let reversed = dir.path().join("reversed.jsonl");
    std::fs::write(&reversed, lines.join("\n") + "\n").unwrap();
    for file in [&ordered, &reversed] {
        let out = lockchaos(&["check", "--json", "--model", "mutex"]).arg(file).output().unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{}: no results ({e}): {}", file.display(), String::from_utf8_lossy(&out.stderr)));
        assert_eq!(out.status.code(), Some(0), "{}: {report}", file.display());
        assert_eq!(report["properties"]["holder_overlap"]["overlaps"], 0, "{}", file.display());
        assert_eq!(report["linearizability"]["verdict"], "valid", "{}", file.display());
    }
}

/// A client's completion without its invoke is a malformed history in both formats (exit 2,
/// naming the file and line), whatever the model.
#[test]
fn check_refuses_a_completion_without_its_invoke() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("h.jsonl");
    std::fs::write(
        &jsonl,
        "{\"index\":0,\"time\":1,\"process\":\"nemesis\",\"type\":\"info\",\"f\":\"pause\"}\n\
         {\"index\":1,\"time\":2,\"process\":1,\"type\":\"ok\",\"f\":\"acquire\"}\n",
    )
    .unwrap();
    let edn = dir.path().join("h.edn");
    std::fs::write(&edn, "{:index 0, :process 0, :type :invoke, :f :acquire}\n{:index 1, :process 0, :type :ok, :f :acquire}\n{:index 2, :process 1, :type :ok, :f :release}\n").unwrap();
    for (file, line, args) in [(&jsonl, 2, &["check"][..]), (&edn, 3, &["check"][..]), (&edn, 3, &["check", "--model", "mutex"][..])] {
        let out = lockchaos(args).arg(file).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?} {}: {err}", file.display());
        assert!(err.contains(&format!("{}:{line}: ", file.display())) && err.contains("without an open invoke"), "{err}");
    }
}

/// A register written 10^30 and read back as 10^30 + 1 was `valid`: serde_json rounded both to
/// one f64. An integer beyond i64 and u64 is now refused in every format, naming the file, the
/// line and the integer (exit 2), and so is one given as `--initial`.
#[test]
fn check_refuses_an_integer_beyond_64_bits_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let (written, read) = ("1000000000000000000000000000000", "1000000000000000000000000000001");
    let ops = [("invoke", "write", written), ("ok", "write", written), ("invoke", "read", "nil"), ("ok", "read", read)];
    let jsonl: String = ops
        .iter()
        .enumerate()
        .map(|(i, (kind, f, v))| {
            let v = if *v == "nil" { "null" } else { v };
            format!("{{\"index\":{i},\"time\":{},\"process\":1,\"type\":\"{kind}\",\"f\":\"{f}\",\"value\":{v}}}\n", (i + 1) * 1000)
        })
        .collect();
    let edn: String = ops.iter().map(|(kind, f, v)| format!("{{:process 1, :type :{kind}, :f :{f}, :value {v}}}\n")).collect();
    let log: String = ops.iter().map(|(kind, f, v)| format!("INFO  jepsen.util - 1\t:{kind}\t:{f}\t{v}\n")).collect();
    for (name, text) in [("h.jsonl", jsonl), ("h.edn", edn), ("jepsen.log", log)] {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let out = lockchaos(&["check", "--model", "register"]).arg(&file).output().unwrap();
        let (stdout, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "{name}: {stdout}{err}");
        assert!(err.contains(&format!("{}:1: ", file.display())) && err.contains(written), "{name}: {err}");
        assert!(err.contains("neither i64 nor u64"), "{name}: {err}");
    }
    let file = dir.path().join("reads.jsonl");
    std::fs::write(&file, "{\"time\":1,\"process\":1,\"type\":\"invoke\",\"f\":\"read\"}\n{\"time\":2,\"process\":1,\"type\":\"ok\",\"f\":\"read\",\"value\":18446744073709551615}\n").unwrap();
    let out = lockchaos(&["check", "--model", "register", "--initial", "18446744073709551616"]).arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--initial") && err.contains("18446744073709551616") && err.contains("neither i64 nor u64"), "{err}");
    // u64::MAX itself is exact: read as the initial value, valid.
    let out = lockchaos(&["check", "--model", "register", "--initial", "18446744073709551615"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
