//! Append-only JSON-lines event files, one write and flush per event, so a worker that is
//! killed mid-run leaves every event it completed (at worst a truncated last line).

use anyhow::Context;
use checker::Event;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct EventLog {
    path: PathBuf,
    file: File,
    next_index: u64,
}

impl EventLog {
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        let file =
            OpenOptions::new().create(true).append(true).open(path).with_context(|| format!("cannot open event log {}", path.display()))?;
        Ok(EventLog { path: path.to_path_buf(), file, next_index: 0 })
    }

    /// Stamps the event with this log's next index and appends it.
    pub fn append(&mut self, mut event: Event) -> anyhow::Result<Event> {
        event.index = self.next_index;
        self.next_index += 1;
        let mut line = serde_json::to_vec(&event)?;
        line.push(b'\n');
        self.file.write_all(&line).and_then(|_| self.file.flush()).with_context(|| format!("cannot append to {}", self.path.display()))?;
        Ok(event)
    }
}
