//! Following the workers' event files while the run is live, so the nemesis can react to what
//! clients do (e.g. pause the client that is inside its critical section): each client's phase
//! in its round, when it entered it, and when it last sent each operation.

use crate::scenario::Trigger;
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
    /// acquire sent, not yet answered.
    Acquiring,
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
    /// Per (client, operation), the run time (ns) it last sent it (its invoke).
    sent_at: BTreeMap<(u64, &'static str), u64>,
    /// The latest send time of an acquire that was granted: a grant "since t" is one whose
    /// acquire was sent at or after t.
    latest_granted_send: Option<u64>,
}

/// The operations whose sending is a trigger, or whose send time a grant is measured from.
const SENT: [&str; 4] = ["acquire", "renew", "write", "release"];

impl LiveHistory {
    pub fn new() -> Self {
        LiveHistory::default()
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
                        let sent = self.sent_at.get(&(*process, "acquire")).copied();
                        self.latest_granted_send = self.latest_granted_send.max(sent);
                    }
                    if let (Some(f), EventType::Invoke) = (SENT.iter().find(|f| **f == ev.f), ev.kind) {
                        self.sent_at.insert((*process, f), ev.time);
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
        self.fired(Trigger::Acquired, since_ns).into_iter().map(|(c, _)| c).collect()
    }

    /// The clients whose events fire `trigger` from run time `since_ns` on, each with the time
    /// (ns) of the event that fired it (a delay counts from there), in process order.
    /// `waiting` holds for a client whose acquire is unanswered while another holds the lock,
    /// from the later of its acquire and that grant (not before `since_ns`); the others, for
    /// the client whose own event (its grant, its entry into the phase, its send) came at or
    /// after `since_ns`: for a grant or a phase, as long as the client is still in it.
    pub fn fired(&self, trigger: Trigger, since_ns: u64) -> Vec<(u64, u64)> {
        let holders = self.holders();
        let in_phase = |c: &u64, p: &Phase| self.phases.get(c) == Some(p);
        let sent = |c: u64, f: &'static str| self.sent_at.get(&(c, f)).copied().filter(|t| *t >= since_ns).map(|t| (c, t));
        let clients = self.phases.keys().copied();
        match trigger {
            Trigger::Waiting => clients
                .filter(|c| in_phase(c, &Phase::Acquiring))
                .filter_map(|c| {
                    let grant = holders.iter().filter(|h| **h != c).filter_map(|h| self.acquired_at.get(h)).max()?;
                    let asked = self.sent_at.get(&(c, "acquire")).copied().unwrap_or(0);
                    Some((c, asked.max(*grant).max(since_ns)))
                })
                .collect(),
            Trigger::Acquired => {
                holders.iter().filter_map(|c| self.acquired_at.get(c).filter(|t| **t >= since_ns).map(|t| (*c, *t))).collect()
            }
            Trigger::InSection => self.entered(Phase::InSection, since_ns),
            Trigger::AfterCheck => self.entered(Phase::Checked, since_ns),
            // A send is an instant: a poll may see the next ones with it, so the phase is not
            // asked (a write is followed by its release within a millisecond).
            Trigger::RenewSent => clients.filter_map(|c| sent(c, "renew")).collect(),
            Trigger::WriteSent => clients.filter_map(|c| sent(c, "write")).collect(),
            Trigger::ReleaseSent => clients.filter_map(|c| sent(c, "release")).collect(),
        }
    }

    /// The clients in phase `phase` that entered it at or after `since_ns`, with that time.
    fn entered(&self, phase: Phase, since_ns: u64) -> Vec<(u64, u64)> {
        self.phases
            .iter()
            .filter(|(_, p)| **p == phase)
            .filter_map(|(c, _)| self.entered_at.get(&(*c, phase)).filter(|t| **t >= since_ns).map(|t| (*c, *t)))
            .collect()
    }

    /// The clients that hold a grant now (they have not sent its release), in process order.
    pub fn holders(&self) -> Vec<u64> {
        self.phases.iter().filter(|(_, p)| matches!(p, Phase::Holding | Phase::InSection | Phase::Checked)).map(|(c, _)| *c).collect()
    }

    /// Whether some client was granted the lock on an acquire it sent at or after `since_ns`:
    /// the lock works again after a fault healed at that time.
    pub fn granted_since(&self, since_ns: u64) -> bool {
        self.latest_granted_send.is_some_and(|t| t >= since_ns)
    }
}

fn next_phase(current: Phase, ev: &Event) -> Phase {
    match (ev.f.as_str(), ev.kind) {
        ("acquire", EventType::Invoke) => Phase::Acquiring,
        ("acquire", EventType::Fail | EventType::Info) => Phase::Idle,
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
        assert_eq!(live.fired(Trigger::InSection, 0), vec![(1, 1)]);
        assert_eq!((live.fired(Trigger::InSection, 1), live.fired(Trigger::InSection, 2)), (vec![(1, 1)], vec![]));
        write!(f, "{}", line("ok", "check")).unwrap();
        live.poll();
        assert_eq!((live.phase(1), live.fired(Trigger::AfterCheck, 1)), (Phase::Checked, vec![(1, 1)]));
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

    #[test]
    fn every_lock_event_fires_its_trigger_with_its_own_time() {
        let dir = tempfile::tempdir().unwrap();
        let mut live = LiveHistory::new();
        let mut files = vec![];
        for p in [1u64, 2] {
            let path = dir.path().join(format!("client-{p}.jsonl"));
            files.push(std::fs::File::create(&path).unwrap());
            live.add(p, &format!("client-{p}"), path);
        }
        let mut at = |p: u64, time: u64, t: &str, f: &str| {
            let line = format!("{{\"time\":{time},\"process\":{p},\"type\":\"{t}\",\"f\":\"{f}\"}}\n");
            files[p as usize - 1].write_all(line.as_bytes()).unwrap();
        };
        // Client 2 asks first; nobody holds, so nobody waits.
        at(2, 10, "invoke", "acquire");
        live.poll();
        assert_eq!(live.fired(Trigger::Waiting, 0), vec![]);
        // Client 1 is granted it (sent at 5): now client 2 waits, from that grant on.
        at(1, 5, "invoke", "acquire");
        at(1, 20, "ok", "acquire");
        live.poll();
        assert_eq!(live.fired(Trigger::Waiting, 0), vec![(2, 20)]);
        assert_eq!(live.fired(Trigger::Waiting, 30), vec![(2, 30)], "waiting still, so from the step's due time");
        assert_eq!(live.holders(), vec![1]);
        assert!(live.granted_since(5) && !live.granted_since(6), "a grant counts from its acquire's send");
        // Client 1's round: renew, write and release, each an instant.
        at(1, 40, "invoke", "renew");
        at(1, 41, "ok", "renew");
        at(1, 50, "invoke", "write");
        at(1, 51, "ok", "write");
        at(1, 52, "invoke", "release");
        live.poll();
        assert_eq!(live.fired(Trigger::RenewSent, 0), vec![(1, 40)]);
        assert_eq!(live.fired(Trigger::RenewSent, 41), vec![]);
        assert_eq!(live.fired(Trigger::WriteSent, 45), vec![(1, 50)], "seen though its release followed in the same poll");
        assert_eq!(live.fired(Trigger::ReleaseSent, 45), vec![(1, 52)]);
        assert_eq!(live.fired(Trigger::Waiting, 0), vec![], "nobody holds: nobody waits");
        // Client 2's acquire fails: it no longer asks.
        at(2, 60, "fail", "acquire");
        at(1, 61, "invoke", "acquire");
        at(1, 62, "ok", "acquire");
        live.poll();
        assert_eq!((live.fired(Trigger::Waiting, 0), live.fired(Trigger::Acquired, 61)), (vec![], vec![(1, 62)]));
        assert!(live.granted_since(61));
    }
}
