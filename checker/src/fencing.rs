//! Fencing: the tokens the lock hands out, and the order in which the resource accepts them.
//!
//! Two separate questions, counted separately because they blame different parties:
//!
//! - Grant order (the lock service): a grant (client acquire ok with a `token`) must carry a
//!   higher token than every grant that completed before it was requested, on the same key.
//!   Grants whose invoke..ok windows overlap are concurrent: real time cannot order them, so
//!   they are never compared.
//! - Acceptance order (the resource): in the resource's own log (process "resource", f write,
//!   ok = accepted), no accepted write may carry a lower token than one accepted before on the
//!   same key. A fenced resource refuses such writes (counted as `stale_writes_rejected`); an
//!   unfenced resource that logs tokens but accepts a lower one is counted here. That is the
//!   failure fencing exists to prevent, so it makes the verdict invalid even though the
//!   resource never claimed to fence: the verdict is about the history, not the intent.
//!
//! Backends without tokens (Redis, Redlock) give no grant a token: the verdict is unknown and
//! `applies` is false, so the run outcome ignores this property (see `lib.rs`).
//!
//! O(n log n): per key, grants sorted by completion are swept against grants sorted by
//! request, keeping the highest token completed so far.

use crate::history::{Event, EventType, Process};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Fencing {
    pub verdict: Verdict,
    /// Some grant carried a token (or tokens were found out of order): the backend fences.
    pub applies: bool,
    /// Client acquire ok events.
    pub grants: u64,
    pub grants_with_token: u64,
    /// Grants whose token is <= that of a grant completed before they were requested.
    pub non_increasing_grants: u64,
    /// Per violating grant: `earlier` = the completed grant with the highest token.
    pub grant_evidence: Vec<TokenPair>,
    /// Resource write records (ok or fail) that carry a token.
    pub resource_writes_with_token: u64,
    /// Writes the resource accepted with a lower token than one it had accepted before.
    pub accepted_writes_out_of_order: u64,
    /// Per out-of-order write: `earlier` = the accepted write with the highest token.
    pub write_evidence: Vec<TokenPair>,
    /// Writes the resource rejected (resource, write, fail).
    pub stale_writes_rejected: u64,
    /// Evidence left out of both lists beyond `max_evidence` each.
    pub evidence_omitted: u64,
    pub notes: Vec<String>,
}

/// Two token-carrying events on one key, `earlier` first in real time / resource order.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TokenPair {
    pub key: Option<String>,
    pub earlier: TokenRef,
    pub later: TokenRef,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TokenRef {
    /// `Event.index` of the grant (acquire ok) or of the resource's write record.
    pub index: u64,
    pub time: u64,
    pub token: u64,
    /// The client: the grantee, or for a resource record the client that sent the write
    /// (`"resource"` when the record does not say).
    pub process: Process,
}

impl Fencing {
    /// The result when nothing was checked; also what an older results.json without this
    /// property reads as.
    pub fn not_checked() -> Fencing {
        Fencing {
            verdict: Verdict::Unknown,
            applies: false,
            grants: 0,
            grants_with_token: 0,
            non_increasing_grants: 0,
            grant_evidence: Vec::new(),
            resource_writes_with_token: 0,
            accepted_writes_out_of_order: 0,
            write_evidence: Vec::new(),
            stale_writes_rejected: 0,
            evidence_omitted: 0,
            notes: Vec::new(),
        }
    }
}

#[derive(Default)]
struct Request {
    time: u64,
    acquire_pending: bool,
}

struct Grant {
    invoke_time: u64,
    at: TokenRef,
}

/// Checks grant order and acceptance order over a history in its merged order.
pub fn check_fencing(events: &[Event], max_evidence: usize) -> Fencing {
    let mut r = Fencing::not_checked();
    // Per process, a lower bound of when its next grant was requested: its outstanding
    // acquire invoke, else its last event (if the invoke is missing, the real one came no
    // earlier; too early only orders fewer grants, never a concurrent pair).
    let mut requested: HashMap<&Process, Request> = HashMap::new();
    let mut grants: HashMap<Option<&str>, Vec<Grant>> = HashMap::new();
    // Per key: the accepted write with the highest token so far.
    let mut highest: HashMap<Option<&str>, TokenRef> = HashMap::new();
    let mut write_pairs = Vec::new();

    for e in events {
        if e.process.is_named(Process::RESOURCE) {
            if e.f == "write" && matches!(e.kind, EventType::Ok | EventType::Fail) {
                accept_write(e, &mut r, &mut highest, &mut write_pairs);
            }
            continue;
        }
        if e.process.client().is_none() {
            continue;
        }
        let req = requested.entry(&e.process).or_default();
        if e.f == "acquire" && e.kind == EventType::Ok {
            r.grants += 1;
            if let Some(token) = e.token {
                r.grants_with_token += 1;
                grants
                    .entry(e.key.as_deref())
                    .or_default()
                    .push(Grant { invoke_time: req.time, at: token_ref(e, token, e.process.clone()) });
            }
        }
        // An outstanding acquire invoke stays the request time until the acquire completes.
        let completes_acquire = e.f == "acquire" && e.kind != EventType::Invoke;
        if !req.acquire_pending || completes_acquire {
            req.time = e.time;
            req.acquire_pending = e.f == "acquire" && e.kind == EventType::Invoke;
        }
    }

    let mut grant_pairs: Vec<TokenPair> = Vec::new();
    for (key, list) in &grants {
        non_increasing(*key, list, &mut grant_pairs);
    }
    r.non_increasing_grants = grant_pairs.len() as u64;
    r.accepted_writes_out_of_order = write_pairs.len() as u64;
    r.grant_evidence = bounded(grant_pairs, max_evidence, &mut r.evidence_omitted);
    r.write_evidence = bounded(write_pairs, max_evidence, &mut r.evidence_omitted);

    let violations = r.non_increasing_grants + r.accepted_writes_out_of_order;
    r.applies = r.grants_with_token > 0 || violations > 0;
    if r.grants > r.grants_with_token && r.grants_with_token > 0 {
        r.notes.push(format!("{} of {} grants carried no token; they are not compared", r.grants - r.grants_with_token, r.grants));
    }
    r.verdict = if violations > 0 {
        Verdict::Invalid
    } else if r.grants_with_token == 0 {
        r.notes.push(
            "no grant carried a fencing token: the backend does not fence (e.g. Redis), \
             so there is nothing to check"
                .into(),
        );
        Verdict::Unknown
    } else {
        Verdict::Valid
    };
    r
}

fn token_ref(e: &Event, token: u64, process: Process) -> TokenRef {
    TokenRef { index: e.index, time: e.time, token, process }
}

/// One resource write record, in the order the resource received it.
fn accept_write<'a>(e: &'a Event, r: &mut Fencing, highest: &mut HashMap<Option<&'a str>, TokenRef>, pairs: &mut Vec<TokenPair>) {
    let accepted = e.kind == EventType::Ok;
    if !accepted {
        r.stale_writes_rejected += 1;
    }
    let Some(token) = e.token else { return };
    r.resource_writes_with_token += 1;
    if !accepted {
        return;
    }
    let client = e.client.map_or_else(|| e.process.clone(), Process::Client);
    let this = token_ref(e, token, client);
    let key = e.key.as_deref();
    match highest.get(&key) {
        Some(top) if token < top.token => pairs.push(TokenPair { key: key.map(str::to_string), earlier: top.clone(), later: this }),
        Some(top) if token == top.token => {} // the same holder writing again
        _ => {
            highest.insert(key, this);
        }
    }
}

/// Grants whose token is not above every grant completed before their request.
fn non_increasing(key: Option<&str>, grants: &[Grant], out: &mut Vec<TokenPair>) {
    let mut by_ok: Vec<&Grant> = grants.iter().collect();
    by_ok.sort_by_key(|g| (g.at.time, g.at.index));
    let mut by_invoke: Vec<&Grant> = grants.iter().collect();
    by_invoke.sort_by_key(|g| (g.invoke_time, g.at.index));

    let mut done = by_ok.iter().peekable();
    let mut top: Option<&Grant> = None;
    for g in by_invoke {
        // Strictly before: a grant completing at the same instant is concurrent.
        while let Some(prev) = done.next_if(|p| p.at.time < g.invoke_time) {
            if top.is_none_or(|t| prev.at.token > t.at.token) {
                top = Some(prev);
            }
        }
        // Not itself: only possible when a clock put an ok before its own invoke.
        let earlier = top.filter(|t| !std::ptr::eq(*t, g) && g.at.token <= t.at.token);
        if let Some(t) = earlier {
            out.push(TokenPair { key: key.map(str::to_string), earlier: t.at.clone(), later: g.at.clone() });
        }
    }
}

/// Sorted by the later event's index (a stable report order), cut to `max`.
fn bounded(mut pairs: Vec<TokenPair>, max: usize, omitted: &mut u64) -> Vec<TokenPair> {
    pairs.sort_by_key(|p| (p.later.index, p.earlier.index));
    if pairs.len() > max {
        *omitted += (pairs.len() - max) as u64;
        pairs.truncate(max);
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A grant whose invoke is missing: a malformed history for the parser (see
    /// history_rules.rs), but events handed over directly still get a careful answer. Client 2's
    /// request can only be placed after its previous event (2 ms), before client 1's grant
    /// completed (10 ms): the two grants cannot be ordered, and the checker does not guess.
    #[test]
    fn a_grant_without_its_invoke_is_not_ordered_by_guess() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fencing/missing_invoke.jsonl");
        let events = crate::read_history_file(std::path::Path::new(path)).unwrap().events;
        let r = check_fencing(&events, 10);
        assert_eq!((r.verdict, r.grants_with_token, r.non_increasing_grants), (Verdict::Valid, 2, 0));
        assert_eq!(crate::check(&events, &crate::CheckOptions::default()).outcome, Verdict::Unknown);
    }
}
