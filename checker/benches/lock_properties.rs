//! All lock-safety properties (resource safety, fencing, holder overlap) on a 1,000,000-event
//! lock history. Target: under 2 s on one core, memory linear in events (see BENCHMARKS.md).

use checker::{check, CheckOptions, Event, EventType, Process};
use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

/// A realistic lock history: `clients` workers taking turns on one key, each round
/// acquire → read → write → release with resource records, a fencing token per grant, and
/// every 50th round a stale write (a paused holder) that the resource rejects.
fn lock_history(events: usize, clients: u64) -> Vec<Event> {
    let mut out = Vec::with_capacity(events + 16);
    let mut time = 0u64;
    let mut value = 0i64;
    let mut token = 0u64;
    let mut round = 0u64;
    let push = |out: &mut Vec<Event>, time: &mut u64, p: Process, kind: EventType, f: &str, fill: &dyn Fn(&mut Event)| {
        *time += 1_000;
        let mut e = Event::new(*time, p, kind, f);
        e.index = out.len() as u64;
        e.key = Some("ledger".into());
        fill(&mut e);
        out.push(e);
    };
    while out.len() < events {
        let c = round % clients + 1;
        token += 1;
        let (t, v) = (token, value);
        let me = Process::Client(c);
        let resource = || Process::Named("resource".into());
        push(&mut out, &mut time, me.clone(), EventType::Invoke, "acquire", &|_| {});
        push(&mut out, &mut time, me.clone(), EventType::Ok, "acquire", &|e| {
            e.token = Some(t);
            e.validity_ms = Some(2000);
        });
        push(&mut out, &mut time, me.clone(), EventType::Invoke, "read", &|e| e.token = Some(t));
        push(&mut out, &mut time, resource(), EventType::Ok, "read", &|e| {
            e.client = Some(c);
            e.token = Some(t);
            e.value = v.into();
        });
        push(&mut out, &mut time, me.clone(), EventType::Ok, "read", &|e| e.value = v.into());
        push(&mut out, &mut time, me.clone(), EventType::Invoke, "write", &|e| e.value = (v + 1).into());
        push(&mut out, &mut time, resource(), EventType::Ok, "write", &|e| {
            e.client = Some(c);
            e.token = Some(t);
            e.value = (v + 1).into();
        });
        push(&mut out, &mut time, me.clone(), EventType::Ok, "write", &|e| e.value = (v + 1).into());
        if round % 50 == 49 {
            // A holder from long ago wakes up: its write carries an old token and is rejected.
            push(&mut out, &mut time, resource(), EventType::Fail, "write", &|e| {
                e.client = Some(c % clients + 1);
                e.token = Some(t.saturating_sub(3));
                e.value = v.into();
                e.error = Some("stale token".into());
            });
        }
        push(&mut out, &mut time, me.clone(), EventType::Invoke, "release", &|_| {});
        push(&mut out, &mut time, me, EventType::Ok, "release", &|_| {});
        value += 1;
        round += 1;
    }
    out
}

fn bench(c: &mut Criterion) {
    let history = lock_history(1_000_000, 5);
    let results = check(&history, &CheckOptions::default());
    // The benchmark measures real work: the history must be checked as valid and complete.
    assert_eq!(results.resource_safety.lost_updates, 0);
    assert!(results.resource_safety.accepted_writes > 90_000);
    let mut group = c.benchmark_group("lock_properties");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function("all_lock_properties_1m_events", |b| b.iter(|| check(&history, &CheckOptions::default())));
    // What `lockchaos check` adds in front: reading the JSON lines.
    let text: String = history.iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect();
    group.bench_function("parse_jsonl_1m_events", |b| b.iter(|| checker::parse_jsonl(&text).unwrap()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
