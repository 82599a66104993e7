//! Requests the resource refused: not sent by a worker of the run (no proof, a wrong proof, a
//! line that is no request). They never reach the ledger or its log; they are recorded here,
//! beside it, so the run can say that somebody tried (a run with any cannot be `safe`).

use checker::bounded_read::{self, Problem, ReadError, SizeLimit};
use results::RefusedRequests as Refused;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// The file in the run folder.
pub const FILE: &str = "refused.jsonl";
/// At most this many refusals are recorded: enough to show what was tried, bounded however
/// much a program sends.
pub const MAX_RECORDED: u64 = 1000;
/// The bytes of a refused line kept in its record.
const EXCERPT: usize = 200;

/// One refused request, as recorded.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Refusal {
    /// Run time (ns) it arrived.
    pub time: u64,
    /// Where it came from (address:port).
    pub peer: String,
    pub reason: String,
    /// Its first bytes, as text.
    pub excerpt: String,
}

impl Refusal {
    pub fn new(time: u64, peer: String, reason: String, line: &str) -> Self {
        let mut end = line.len().min(EXCERPT);
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        Refusal { time, peer, reason, excerpt: line[..end].to_string() }
    }

    /// One line for a reader: when, from where, why.
    pub fn describe(&self) -> String {
        format!("at {} ms from {}: {} ({:?})", self.time / 1_000_000, self.peer, self.reason, self.excerpt)
    }
}

/// The resource's file of refusals.
pub struct RefusalLog {
    file: File,
    recorded: u64,
}

impl RefusalLog {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(RefusalLog { file: OpenOptions::new().create(true).append(true).open(path)?, recorded: 0 })
    }

    pub fn record(&mut self, refusal: &Refusal) -> std::io::Result<()> {
        if self.recorded >= MAX_RECORDED {
            return Ok(());
        }
        self.recorded += 1;
        let mut line = serde_json::to_vec(refusal)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.flush()
    }
}

/// How many refusals a run's results name one by one.
const NAMED: usize = 5;

/// Reads a run's file of refusals (the resource container's, so read bounded): how many
/// (`at_least` when the cap was reached) and the first few, described. A missing file is none.
pub fn read(path: &Path) -> anyhow::Result<Refused> {
    let limit = SizeLimit::new(MAX_RECORDED * (EXCERPT as u64 * 8 + 1024), "record of refused requests");
    let bytes = match bounded_read::read(path, limit) {
        Ok(bytes) => bytes,
        Err(ReadError { problem: Problem::Io(e), .. }) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Refused::default()),
        Err(e) => anyhow::bail!("{e}"),
    };
    let mut refused = Refused::default();
    for line in bytes.split(|b| *b == b'\n') {
        if line.is_empty() {
            continue;
        }
        refused.count += 1;
        if refused.first.len() < NAMED {
            let described = match serde_json::from_slice::<Refusal>(line) {
                Ok(r) => r.describe(),
                Err(e) => format!("an unreadable record ({e})"),
            };
            refused.first.push(described);
        }
    }
    refused.at_least = refused.count >= MAX_RECORDED;
    Ok(refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_recorded_up_to_the_cap_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("refused.jsonl");
        assert_eq!(read(&path).unwrap(), Refused::default(), "no file, no refusal");
        let mut log = RefusalLog::create(&path).unwrap();
        let long = "é".repeat(300);
        for i in 0..MAX_RECORDED + 5 {
            log.record(&Refusal::new(i * 1_000_000, "10.0.0.5:4000".into(), "no proof".into(), &long)).unwrap();
        }
        let refused = read(&path).unwrap();
        assert_eq!((refused.count, refused.at_least, refused.first.len()), (MAX_RECORDED, true, NAMED));
        assert!(refused.first[1].starts_with("at 1 ms from 10.0.0.5:4000: no proof"), "{}", refused.first[1]);
    }
}
