//! Following the workers' event files while the run is live, so the nemesis can react to what
//! clients do (e.g. pause the client that is inside its critical section).

use checker::{Event, EventType};
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

struct Tail {
    /// The member the process runs as (`client-2`).
    member: String,
    path: PathBuf,
    /// The process is gone: its late lines change no phase.
    gone: bool,
    offset: u64,
    partial: String,
}

/// Per-client phase as last seen in its events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Phase {
    #[default]
    Idle,
    /// acquire returned ok, release not yet invoked.
    Holding,
    /// Holding, read done, write not yet sent: a pause now makes a stale write.
    InSection,
    /// In its section, and its check just before the write said the lock is still valid: a
    /// pause now lands between the check and the write.
    Checked,
}

#[derive(Default)]
pub struct LiveHistory {
    tails: BTreeMap<u64, Tail>,
    phases: BTreeMap<u64, Phase>,
    /// Per (client, phase), the run time (ns) of the event that last entered that phase.
    entered_at: BTreeMap<(u64, Phase), u64>,
    /// Per client, the run time (ns) of its last acquire ok.
    acquired_at: BTreeMap<u64, u64>,
}

impl LiveHistory {
    pub fn new() -> Self {
        LiveHistory { tails: BTreeMap::new(), phases: BTreeMap::new(), entered_at: BTreeMap::new(), acquired_at: BTreeMap::new() }
    }

    /// Follows a client process from now on: its member's name and its event file.
    pub fn add(&mut self, process: u64, member: &str, events: PathBuf) {
        self.tails.insert(process, Tail { member: member.to_string(), path: events, gone: false, offset: 0, partial: String::new() });
    }

    /// A process that is gone (killed, exited) holds nothing and is in no section any more.
    pub fn forget(&mut self, process: u64) {
        self.phases.remove(&process);
        if let Some(tail) = self.tails.get_mut(&process) {
            tail.gone = true;
        }
    }

    /// The member a process runs as.
    pub fn member(&self, process: u64) -> Option<&str> {
        self.tails.get(&process).map(|t| t.member.as_str())
    }

    /// Reads what the workers appended since the last poll and updates their phases.
    pub fn poll(&mut self) -> Vec<Event> {
        let mut out = vec![];
        for (process, tail) in &mut self.tails {
            let Ok(mut file) = std::fs::File::open(&tail.path) else { continue };
            if file.seek(SeekFrom::Start(tail.offset)).is_err() {
                continue;
            }
            let mut buf = String::new();
            let Ok(n) = file.read_to_string(&mut buf) else { continue };
            tail.offset += n as u64;
            tail.partial.push_str(&buf);
            // Only complete lines: the writer may be mid-line.
            while let Some(nl) = tail.partial.find('\n') {
                let line: String = tail.partial.drain(..=nl).collect();
                if let Ok(ev) = serde_json::from_str::<Event>(line.trim_end()) {
                    if tail.gone {
                        continue;
                    }
                    let phase = self.phases.entry(*process).or_default();
                    let next = next_phase(*phase, &ev);
                    if next != *phase {
                        self.entered_at.insert((*process, next), ev.time);
                    }
                    if ev.f == "acquire" && ev.kind == EventType::Ok {
                        self.acquired_at.insert(*process, ev.time);
                    }
                    *phase = next;
                    out.push(ev);
                }
            }
        }
        out
    }

    #[cfg(test)]
    pub fn phase(&self, process: u64) -> Phase {
        self.phases.get(&process).copied().unwrap_or_default()
    }

    /// Clients that still hold a grant whose acquire returned at or after run time `since_ns`
    /// (read or not: the trigger must not miss a client that is already in its section).
    pub fn acquired_since(&self, since_ns: u64) -> Vec<u64> {
        self.phases
            .iter()
            .filter(|(c, p)| **p != Phase::Idle && self.acquired_at.get(c).is_some_and(|t| *t >= since_ns))
            .map(|(c, _)| *c)
            .collect()
    }

    /// Clients inside a critical section that they entered at or after run time `since_ns`
    /// (by their own event's time, so a slow poll loop does not move the trigger).
    pub fn entered_since(&self, phase: Phase, since_ns: u64) -> Vec<u64> {
        self.phases
            .iter()
            .filter(|(c, p)| **p == phase && self.entered_at.get(&(**c, phase)).is_some_and(|t| *t >= since_ns))
            .map(|(c, _)| *c)
            .collect()
    }
}

fn next_phase(current: Phase, ev: &Event) -> Phase {
    match (ev.f.as_str(), ev.kind) {
        ("acquire", EventType::Ok) => Phase::Holding,
        ("read", EventType::Ok) if current == Phase::Holding => Phase::InSection,
        ("check", EventType::Ok) if current == Phase::InSection => Phase::Checked,
        ("write", EventType::Invoke) if matches!(current, Phase::InSection | Phase::Checked) => Phase::Holding,
        ("check", EventType::Fail) => Phase::Holding,
        ("release", EventType::Invoke) => Phase::Idle,
        _ => current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn follows_appends_and_ignores_a_partial_line_until_complete() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client-1.jsonl");
        let mut f = std::fs::File::create(&path).unwrap();
        let mut live = LiveHistory::new();
        live.add(1, "client-1", path.clone());
        let line = |t: &str, f: &str| format!("{{\"time\":1,\"process\":1,\"type\":\"{t}\",\"f\":\"{f}\"}}\n");
        write!(f, "{}{}", line("invoke", "acquire"), line("ok", "acquire")).unwrap();
        assert_eq!(live.poll().len(), 2);
        assert_eq!(live.phase(1), Phase::Holding);
        assert_eq!((live.acquired_since(1), live.acquired_since(2)), (vec![1], vec![]));
        let read_ok = line("ok", "read");
        let (a, b) = read_ok.split_at(10);
        write!(f, "{}{a}", line("invoke", "read")).unwrap();
        assert_eq!(live.poll().len(), 1);
        assert_eq!(live.phase(1), Phase::Holding);
        write!(f, "{b}").unwrap();
        assert_eq!(live.poll().len(), 1);
        assert_eq!(live.entered_since(Phase::InSection, 0), vec![1]);
        assert_eq!((live.entered_since(Phase::InSection, 1), live.entered_since(Phase::InSection, 2)), (vec![1], vec![]));
        write!(f, "{}", line("ok", "check")).unwrap();
        live.poll();
        assert_eq!((live.phase(1), live.entered_since(Phase::Checked, 1)), (Phase::Checked, vec![1]));
        write!(f, "{}", line("invoke", "write")).unwrap();
        live.poll();
        assert_eq!(live.phase(1), Phase::Holding);
        assert_eq!(live.acquired_since(1), vec![1], "still holding after its write");
        write!(f, "{}", line("invoke", "release")).unwrap();
        live.poll();
        assert_eq!(live.phase(1), Phase::Idle);
        assert_eq!(live.acquired_since(0), Vec::<u64>::new(), "released");
    }

    #[test]
    fn a_forgotten_process_holds_nothing_even_when_its_last_lines_arrive_late() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client-1.jsonl");
        let mut f = std::fs::File::create(&path).unwrap();
        let mut live = LiveHistory::new();
        live.add(3, "client-1", path.clone());
        let line = |t: &str, f: &str| format!("{{\"time\":1,\"process\":3,\"type\":\"{t}\",\"f\":\"{f}\"}}\n");
        write!(f, "{}", line("invoke", "acquire")).unwrap();
        live.poll();
        assert_eq!(live.member(3), Some("client-1"));
        // Killed right after its grant, before the poll saw it.
        write!(f, "{}{}", line("ok", "acquire"), line("ok", "read")).unwrap();
        live.forget(3);
        live.poll();
        assert_eq!((live.phase(3), live.acquired_since(0)), (Phase::Idle, vec![]));
    }
}
