//! Resource safety: the ground truth, computed from the protected resource's own log.
//!
//! The resource is a counter per key starting at 0; a client's critical section reads the
//! counter and writes read+1. The resource logs every request it receives, in the order it
//! received them (process "resource", f = read | write, type ok = accepted, fail = rejected,
//! `client` = the requester). That order, not client timestamps, decides what happened.
//!
//! One pass, O(n) time: per key we keep the list of accepted writes, and per (client, key) the
//! open read together with how many accepted writes the key had at that moment. When the
//! client's write closes the section, every accepted write added since then is by another
//! client (the client's own next write is the one closing the section), so the count is a
//! subtraction and the evidence is a slice.

use crate::history::{Event, EventType, Process};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Evidence entries kept by default; the rest are only counted (`evidence_omitted`).
pub const DEFAULT_MAX_EVIDENCE: usize = 100;
/// Other clients' writes listed per interleaving; a paused client can span thousands.
const MAX_LISTED_WRITES: usize = 10;
const MAX_NOTES: usize = 20;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ResourceSafety {
    pub verdict: Verdict,
    /// Writes the resource accepted (resource, write, ok).
    pub accepted_writes: u64,
    /// Writes the resource rejected (resource, write, fail): stale writes stopped by fencing.
    pub rejected_writes: u64,
    /// Accepted writes whose increment is missing from the final value, summed over keys.
    pub lost_updates: u64,
    /// Sections whose accepted write was preceded, inside the section, by another client's
    /// accepted write: the lock let two sections overlap and the stale one committed.
    pub interleaved_sections: u64,
    /// Sections overlapped the same way but whose own write the resource rejected: the lock
    /// failed, fencing caught it. Reported, not a violation.
    pub fenced_interleavings: u64,
    /// Writes the clients were told succeeded (numbered process, write, ok), all keys: what
    /// the final values would sum to if no update were lost.
    pub acknowledged_increments: u64,
    /// Writes a client was told did not happen (numbered process, write, fail): a conditional
    /// write's conflicts (each one a retry), a write held back because the lock was known lost.
    #[serde(default)]
    pub refused_writes: u64,
    /// Writes a client was told succeeded that the resource has no accepted record of (same
    /// client, key and value): acknowledged, then lost with the resource's state, as after a
    /// failover to a replica that never received them. Counted only when the history has
    /// resource records at all.
    #[serde(default)]
    pub acknowledged_missing: u64,
    /// `Event.index` of the first such acknowledgements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acknowledged_missing_evidence: Vec<u64>,
    /// Per key: the value of the last accepted write, 0 if none.
    pub final_values: BTreeMap<String, i64>,
    /// Interleaved sections (violations only), in the order their writes were received.
    pub evidence: Vec<Interleaving>,
    pub evidence_omitted: u64,
    /// Records the property could not interpret (they make a non-invalid verdict unknown).
    pub notes: Vec<String>,
}

/// One interleaved critical section.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Interleaving {
    pub key: String,
    /// The client whose section was interleaved.
    pub client: u64,
    /// `Event.index` of the resource's record of the section's read and of its write.
    pub read_index: u64,
    pub write_index: u64,
    /// Other clients' accepted writes inside the section, first ones only.
    pub other_writes: Vec<WriteRef>,
    pub other_writes_total: u64,
    /// The section's client and the writers in `other_writes`, sorted.
    pub clients: Vec<u64>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteRef {
    pub index: u64,
    pub client: u64,
}

#[derive(Default)]
struct KeyState {
    accepted: Vec<WriteRef>,
    /// Counted here (not from `accepted`) so keys without a client field still count.
    accepted_count: u64,
    final_value: i64,
}

struct OpenRead {
    read_index: u64,
    /// `accepted.len()` of the key when the read was received.
    writes_before: usize,
}

/// Bounded list of notes, so a history full of odd records stays a readable report.
#[derive(Default)]
struct Notes {
    kept: Vec<String>,
    omitted: u64,
}

impl Notes {
    fn push(&mut self, note: String) {
        if self.kept.len() < MAX_NOTES {
            self.kept.push(note);
        } else {
            self.omitted += 1;
        }
    }
    fn finish(mut self) -> Vec<String> {
        if self.omitted > 0 {
            self.kept.push(format!("... and {} more such records", self.omitted));
        }
        self.kept
    }
}

/// Computes resource safety over a history in its merged order, keeping at most
/// `max_evidence` interleavings as evidence.
pub fn check_resource_safety(events: &[Event], max_evidence: usize) -> ResourceSafety {
    let mut key_ids: HashMap<&str, usize> = HashMap::new();
    let mut key_names: Vec<&str> = Vec::new();
    let mut keys: Vec<KeyState> = Vec::new();
    let mut open: HashMap<(u64, usize), OpenRead> = HashMap::new();
    let mut notes = Notes::default();
    // (client, key, value) of acknowledged writes with their index, and of accepted records.
    let mut acknowledged: Vec<(u64, &str, Option<i64>, u64)> = Vec::new();
    let mut recorded: HashSet<(u64, &str, Option<i64>)> = HashSet::new();
    let mut invoked_value: HashMap<u64, Option<i64>> = HashMap::new();
    let mut r = ResourceSafety {
        verdict: Verdict::Unknown,
        accepted_writes: 0,
        rejected_writes: 0,
        lost_updates: 0,
        interleaved_sections: 0,
        fenced_interleavings: 0,
        acknowledged_increments: 0,
        refused_writes: 0,
        acknowledged_missing: 0,
        acknowledged_missing_evidence: Vec::new(),
        final_values: BTreeMap::new(),
        evidence: Vec::new(),
        evidence_omitted: 0,
        notes: Vec::new(),
    };

    for e in events {
        let is_write = e.f == "write";
        if !is_write && e.f != "read" {
            continue;
        }
        if let Process::Client(c) = e.process {
            if is_write && e.kind == EventType::Invoke {
                invoked_value.insert(c, e.value.as_i64());
            }
            if is_write && e.kind == EventType::Fail {
                r.refused_writes += 1;
            }
            if is_write && e.kind == EventType::Ok {
                r.acknowledged_increments += 1;
                // The value written: on the completion, or (Jepsen histories often leave it
                // there) on the invoke. Without either, the write cannot be looked up.
                let value = e.value.as_i64().or(invoked_value.get(&c).copied().flatten());
                if value.is_some() {
                    acknowledged.push((c, e.key.as_deref().unwrap_or_default(), value, e.index));
                }
            }
            continue;
        }
        if !e.process.is_named(Process::RESOURCE) {
            continue;
        }
        // The resource logs what it decided; anything else is not one of its records.
        let accepted = match e.kind {
            EventType::Ok => true,
            EventType::Fail => false,
            EventType::Invoke | EventType::Info => continue,
        };
        let Some(key_name) = e.key.as_deref() else {
            notes.push(format!("event {}: resource {} without a key, ignored", e.index, e.f));
            continue;
        };
        let k = *key_ids.entry(key_name).or_insert_with(|| {
            key_names.push(key_name);
            keys.push(KeyState::default());
            keys.len() - 1
        });
        let state = &mut keys[k];

        if !is_write {
            match e.client {
                Some(c) if accepted => {
                    // A later read replaces an earlier one: the write is computed from the
                    // latest read, and an abandoned read is not a section.
                    let read = OpenRead { read_index: e.index, writes_before: state.accepted.len() };
                    open.insert((c, k), read);
                }
                Some(_) => {} // a rejected read opens no section
                None => notes.push(format!("event {}: resource read without a client", e.index)),
            }
            continue;
        }

        if accepted {
            r.accepted_writes += 1;
            state.accepted_count += 1;
            if let Some(c) = e.client {
                recorded.insert((c, key_name, e.value.as_i64()));
            }
            match e.value.as_i64() {
                Some(v) => state.final_value = v,
                None => notes.push(format!("event {}: accepted write of a non-integer value {}", e.index, e.value)),
            }
        } else {
            r.rejected_writes += 1;
        }
        let Some(c) = e.client else {
            notes.push(format!("event {}: resource write without a client", e.index));
            continue;
        };
        if let Some(read) = open.remove(&(c, k)) {
            let others = &state.accepted[read.writes_before..];
            if !others.is_empty() {
                if !accepted {
                    r.fenced_interleavings += 1;
                } else {
                    r.interleaved_sections += 1;
                    if r.evidence.len() < max_evidence {
                        r.evidence.push(interleaving(key_name, c, &read, e.index, others));
                    } else {
                        r.evidence_omitted += 1;
                    }
                }
            }
        }
        if accepted {
            state.accepted.push(WriteRef { index: e.index, client: c });
        }
    }

    for (name, state) in key_names.iter().zip(&keys) {
        r.final_values.insert((*name).to_string(), state.final_value);
        let accepted = i64::try_from(state.accepted_count).unwrap_or(i64::MAX);
        if state.final_value > accepted {
            // More than one increment per write: the counter did not start at 0, or writes
            // are not increments. The lost-update count would hide losses, so say so.
            notes.push(format!(
                "key {name}: final value {} exceeds {accepted} accepted writes; lost updates not countable",
                state.final_value
            ));
        } else {
            r.lost_updates += (accepted - state.final_value.max(0)) as u64;
        }
    }
    if r.accepted_writes + r.rejected_writes > 0 {
        for (c, key, value, index) in acknowledged {
            if !recorded.contains(&(c, key, value)) {
                r.acknowledged_missing += 1;
                if r.acknowledged_missing_evidence.len() < max_evidence {
                    r.acknowledged_missing_evidence.push(index);
                }
            }
        }
    }
    let had_notes = !notes.kept.is_empty();
    r.notes = notes.finish();

    r.verdict = if r.lost_updates > 0 || r.interleaved_sections > 0 || r.acknowledged_missing > 0 {
        Verdict::Invalid
    } else if r.accepted_writes == 0 || had_notes {
        Verdict::Unknown
    } else {
        Verdict::Valid
    };
    r
}

fn interleaving(key: &str, client: u64, read: &OpenRead, write_index: u64, others: &[WriteRef]) -> Interleaving {
    let listed: Vec<WriteRef> = others.iter().take(MAX_LISTED_WRITES).copied().collect();
    let clients: BTreeSet<u64> = std::iter::once(client).chain(listed.iter().map(|w| w.client)).collect();
    Interleaving {
        key: key.to_string(),
        client,
        read_index: read.read_index,
        write_index,
        other_writes: listed,
        other_writes_total: others.len() as u64,
        clients: clients.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(index: u64, kind: EventType, f: &str, client: u64, key: &str, value: i64) -> Event {
        let mut e = Event::new(index * 10, Process::Named("resource".into()), kind, f);
        e.index = index;
        e.client = Some(client);
        e.key = Some(key.into());
        e.value = value.into();
        e
    }

    #[test]
    fn evidence_is_bounded_and_counted() {
        // Client 1 reads, then clients 2..=30 each complete a section, then client 1 writes;
        // repeated 3 times with max_evidence 2.
        let mut events = Vec::new();
        let mut i = 0;
        let mut v = 0;
        for _ in 0..3 {
            events.push(res(i, EventType::Ok, "read", 1, "k", v));
            i += 1;
            for c in 2..=30 {
                events.push(res(i, EventType::Ok, "read", c, "k", v));
                events.push(res(i + 1, EventType::Ok, "write", c, "k", v + 1));
                i += 2;
                v += 1;
            }
            events.push(res(i, EventType::Ok, "write", 1, "k", 1));
            i += 1;
            v = 1;
        }
        let r = check_resource_safety(&events, 2);
        assert_eq!(r.verdict, Verdict::Invalid);
        assert_eq!(r.interleaved_sections, 3);
        assert_eq!(r.evidence.len(), 2);
        assert_eq!(r.evidence_omitted, 1);
        let first = &r.evidence[0];
        assert_eq!(first.other_writes.len(), MAX_LISTED_WRITES);
        assert_eq!(first.other_writes_total, 29);
        assert_eq!(first.clients, (1..=11).collect::<Vec<_>>());
        assert_eq!(r.accepted_writes, 90);
        assert_eq!(r.final_values["k"], 1);
        assert_eq!(r.lost_updates, 89);
    }

    #[test]
    fn write_without_client_is_noted_and_makes_valid_unknown() {
        let mut w = res(1, EventType::Ok, "write", 1, "k", 1);
        w.client = None;
        let r = check_resource_safety(&[res(0, EventType::Ok, "read", 1, "k", 0), w], 100);
        assert_eq!(r.accepted_writes, 1);
        assert_eq!(r.lost_updates, 0);
        assert_eq!(r.notes.len(), 1);
        assert_eq!(r.verdict, Verdict::Unknown);
    }
}
