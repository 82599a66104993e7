//! Evidence stays bounded and the sweeps stay fast on large, badly broken histories.

use checker::{check_fencing, check_holder_overlap, Event, EventType, Process, Verdict};
use std::time::Instant;

fn client(time: u64, c: u64, kind: EventType, f: &str, index: &mut u64) -> Event {
    let mut e = Event::new(time, Process::Client(c), kind, f);
    e.index = *index;
    *index += 1;
    e.key = Some("ledger".into());
    e
}

/// `n` sequential grants that all carry token 1: every grant after the first violates.
fn same_token_grants(n: u64) -> Vec<Event> {
    let mut index = 0;
    let mut events = Vec::new();
    for i in 0..n {
        let t = i * 100;
        events.push(client(t, i % 5 + 1, EventType::Invoke, "acquire", &mut index));
        let mut ok = client(t + 10, i % 5 + 1, EventType::Ok, "acquire", &mut index);
        ok.token = Some(1);
        events.push(ok);
        events.push(client(t + 20, i % 5 + 1, EventType::Invoke, "release", &mut index));
    }
    events
}

#[test]
fn fencing_evidence_is_bounded_and_counted() {
    let events = same_token_grants(50_000);
    let started = Instant::now();
    let r = check_fencing(&events, 3);
    assert!(started.elapsed().as_secs() < 5, "took {:?}", started.elapsed());
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(r.non_increasing_grants, 49_999);
    assert_eq!(r.grant_evidence.len(), 3);
    assert_eq!(r.evidence_omitted, 49_996);
    // The first violations, each against the first grant.
    assert_eq!(r.grant_evidence[0].earlier.index, 1);
    assert_eq!(r.grant_evidence[0].later.index, 4);
    assert_eq!(r.grant_evidence[2].later.index, 10);
}

#[test]
fn holder_overlap_evidence_is_the_earliest_and_bounded() {
    // 300 clients acquire in turn and none releases: every pair overlaps.
    let mut index = 0;
    let mut events = Vec::new();
    for c in 1..=300u64 {
        events.push(client(c * 10, c, EventType::Invoke, "acquire", &mut index));
        events.push(client(c * 10 + 5, c, EventType::Ok, "acquire", &mut index));
    }
    // Beliefs run to the end of the history; without this the last one would be empty.
    events.push(client(10_000, 1, EventType::Invoke, "read", &mut index));
    let r = check_holder_overlap(&events, 4);
    let pairs = 300 * 299 / 2;
    assert_eq!(r.verdict, Verdict::Invalid);
    assert_eq!(r.overlaps, pairs);
    assert_eq!(r.evidence.len(), 4);
    assert_eq!(r.evidence_omitted, pairs - 4);
    let first: Vec<([u64; 2], u64)> = r.evidence.iter().map(|o| (o.processes, o.start_time)).collect();
    assert_eq!(first, [([1, 2], 25), ([1, 3], 35), ([2, 3], 35), ([1, 4], 45)]);
    assert_eq!(r.believed_overlap_ignoring_validity.overlaps, pairs);
}

#[test]
fn holder_overlap_scales_on_long_clean_histories() {
    let events = same_token_grants(200_000);
    let started = Instant::now();
    let r = check_holder_overlap(&events, 100);
    assert!(started.elapsed().as_secs() < 5, "took {:?}", started.elapsed());
    assert_eq!(r.verdict, Verdict::Valid);
    assert_eq!(r.acquires, 200_000);
}
