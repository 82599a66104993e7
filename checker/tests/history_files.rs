//! A history given to `check` is a path from outside: a device or a folder is refused at once
//! with a line naming the file (/dev/zero used to be read until its first line was too long), a
//! file larger than any history is refused by its size, and a pipe is read as it comes.

use checker::{read_history, read_history_file};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// `read_history(path)`'s error, or a failure if it took more than a few seconds.
fn refusal(path: &Path) -> String {
    let (tx, rx) = mpsc::channel();
    let owned = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(read_history(&owned, None).map(|h| h.events.len()).map_err(|e| e.to_string()));
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(Err(e)) => e,
        Ok(Ok(n)) => panic!("{} read as a history of {n} events", path.display()),
        Err(_) => panic!("reading {} did not return within 10 s", path.display()),
    }
}

#[test]
fn a_link_to_dev_zero_is_refused_as_a_history_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let zero = dir.path().join("history.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    assert_eq!(refusal(&zero), format!("{}: a character device, not a regular file: refused as a history", zero.display()));
    // A party's event file is read the same way.
    assert!(read_history_file(&zero).unwrap_err().to_string().contains("a character device, not a regular file"));
    assert!(refusal(dir.path()).ends_with("a folder, not a regular file: refused as a history"));
}

#[test]
fn a_history_over_the_limit_is_refused_by_its_size_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.jsonl");
    // Sparse: no disk is spent on it, and its size alone refuses it, before any byte is read.
    std::fs::File::create(&path).unwrap().set_len((4 << 30) + 1).unwrap();
    assert_eq!(refusal(&path), format!("{}: larger than 4 GiB, the limit for a history", path.display()));
}

#[test]
fn a_history_through_a_pipe_is_read_as_it_comes() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("history.jsonl");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let writer = {
        let fifo = fifo.clone();
        let line = |i: u64, t: &str| format!("{{\"index\":{i},\"time\":{i},\"process\":1,\"type\":\"{t}\",\"f\":\"acquire\"}}\n");
        std::thread::spawn(move || std::fs::write(&fifo, line(0, "invoke") + &line(1, "ok")))
    };
    assert_eq!(read_history(&fifo, None).unwrap().events.len(), 2);
    writer.join().unwrap().unwrap();
}
