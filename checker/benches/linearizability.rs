//! Linearizability checking on generated histories, one search thread (the targets are stated
//! for one core; see BENCHMARKS.md):
//! - cas-register and register, 10 clients, ~400 ops, one key (no partitioning), valid and
//!   invalid (the last ok read corrupted to a value nobody wrote): target < 1 s each;
//! - kv, 50 clients, ~2,000 ops, 10 keys, valid: target < 0.1 s;
//! - thousands of events, hard: cas-register, one key, 6,000 invocations, 10% info, invalid,
//!   with a 2 s timeout: must come back within it (`unknown` or a verdict), memory bounded.
//!
//! Every verdict is asserted before measuring, so the benchmark measures real work.
//!
//! Two extra modes, outside criterion (`LOCKCHAOS_BENCH=...`):
//! - `hard-once`: the hard case once, printing verdict, time and peak RSS (run the binary
//!   under `/usr/bin/time -v` for an outside view of memory; `LOCKCHAOS_BENCH_TIMEOUT=60` for
//!   a longer search);
//! - `info-sweep`: invalid cas-register histories at 3%, 6% and 10% info, ten seeds each, one
//!   run per seed with a 60 s timeout: the known limit (exponential in indeterminate ops).

#[path = "../tests/linearizability_gen.rs"]
#[allow(unused_imports)] // its own tests' `use super::*`, compiled here too
mod gen;
#[path = "../tests/inversion_gen.rs"]
#[allow(unused_imports)]
mod inversion_gen;

use checker::linearizability::{check_with, Linearizability, ModelKind, Options};
use checker::{Event, EventType, Verdict};
use criterion::{Criterion, SamplingMode};
use gen::{generate, Gen, GenModel};
use serde_json::json;
use std::time::{Duration, Instant};

/// Share of operations that end `info` in the ~400-op single-key cases.
const INFO_400: f64 = 0.03;
/// The hard "thousands of events" case.
const HARD_INVOCATIONS: usize = 6_000;
const HARD_INFO: f64 = 0.10;
const HARD_TIMEOUT: Duration = Duration::from_secs(2);

/// One thread; the search alone (`rules` off): these groups measure the search, as before the
/// rules existed (a rule proves the corrupted histories at once).
fn opts(timeout: Duration) -> Options {
    let mut o = Options::new(timeout);
    o.threads = 1;
    o.rules = false;
    o
}

/// 10 clients on one key, few distinct values (many orders fit), some failed and some
/// crashed (info) operations; 480 invocations give about 400 operations once failed ones are
/// dropped. Same shape as tests/linearizability_timing.rs.
fn single_key(model: GenModel, invocations: usize, info: f64, seed: u64) -> Vec<Event> {
    let mut g = Gen::new(model, 10, invocations);
    g.values = 5;
    g.info = info;
    g.fail = 0.02;
    generate(&g, seed)
}

fn kv_50_clients(seed: u64) -> Vec<Event> {
    let mut g = Gen::new(GenModel::Kv, 50, 2000);
    g.keys = 10;
    g.info = 0.01;
    g.fail = 0.02;
    generate(&g, seed)
}

/// Makes the last ok read impossible: it reports a value nobody wrote.
fn corrupt_last_read(mut events: Vec<Event>) -> Vec<Event> {
    let last = events.iter().rposition(|e| e.kind == EventType::Ok && e.f == "read").expect("a read");
    events[last].value = json!(99);
    events
}

fn hard_history() -> Vec<Event> {
    corrupt_last_read(single_key(GenModel::CasRegister, HARD_INVOCATIONS, HARD_INFO, 1))
}

fn describe(what: &str, events: &[Event], r: &Linearizability, t: Duration) {
    eprintln!(
        "{what}: {} events, {} ops ({} indeterminate = {:.1}%), {} partition(s): {} in {:.1} ms",
        events.len(),
        r.operations,
        r.indeterminate,
        100.0 * r.indeterminate as f64 / r.operations.max(1) as f64,
        r.partitions,
        r.verdict,
        t.as_secs_f64() * 1e3,
    );
}

/// Checks once, asserting the verdict, so that what is measured is the real thing.
fn checked(what: &str, events: &[Event], kind: ModelKind, o: &Options, ok: &[Verdict]) {
    let start = Instant::now();
    let r = check_with(events, kind, o).expect("well-formed history");
    describe(what, events, &r, start.elapsed());
    assert!(ok.contains(&r.verdict), "{what}: {} not in {ok:?}", r.verdict);
}

fn bench(c: &mut Criterion) {
    let long = opts(Duration::from_secs(60));
    let mut group = c.benchmark_group("linearizability");
    group.sample_size(20);
    let cases = [
        ("cas_register_10c_400ops", GenModel::CasRegister, ModelKind::CasRegister),
        ("register_10c_400ops", GenModel::Register, ModelKind::Register),
    ];
    for (name, gm, kind) in cases {
        let valid = single_key(gm, 480, INFO_400, 0);
        let invalid = corrupt_last_read(valid.clone());
        let (v, i) = (format!("{name}_valid"), format!("{name}_invalid"));
        checked(&v, &valid, kind, &long, &[Verdict::Valid]);
        checked(&i, &invalid, kind, &long, &[Verdict::Invalid]);
        group.bench_function(&v, |b| b.iter(|| check_with(&valid, kind, &long).unwrap()));
        group.bench_function(&i, |b| b.iter(|| check_with(&invalid, kind, &long).unwrap()));
    }
    let kv = kv_50_clients(0);
    checked("kv_50c_2000ops_valid", &kv, ModelKind::Kv, &long, &[Verdict::Valid]);
    group.bench_function("kv_50c_2000ops_valid", |b| b.iter(|| check_with(&kv, ModelKind::Kv, &long).unwrap()));
    group.finish();

    // The class the search alone gives up on (2,000 ops, 10 clients, 6% indeterminate, one
    // anomaly near the end), with the rules (refute.rs, reigns.rs): valid, a value never
    // written, stale, and a new-old inversion's twins.
    let mut rules = opts(Duration::from_secs(60));
    rules.rules = true;
    let mut group = c.benchmark_group("linearizability_rules");
    group.sample_size(20);
    let valid = single_key(GenModel::CasRegister, 2400, 0.06, 0);
    let never = corrupt_last_read(valid.clone());
    let mut g = Gen::new(GenModel::CasRegister, 10, 2400);
    g.info = 0.06;
    g.fail = 0.02;
    let mut stale = generate(&g, 0);
    gen::stale_last_read(&mut stale);
    // Issue #25's new-old inversion (tests/inversion_gen.rs), 2,000 invocations, 6%: rule 4.
    let twin = |valid| inversion_gen::inversion(&inversion_gen::Inversion { ops: 2000, clients: 10, info: 0.06, valid }, 0);
    let (inversion_valid, inversion_invalid) = (twin(true), twin(false));
    for (name, events, want) in [
        ("cas_register_2000ops_6pct_info_valid", &valid, Verdict::Valid),
        ("cas_register_2000ops_6pct_info_never_written", &never, Verdict::Invalid),
        ("cas_register_2000ops_6pct_info_stale", &stale, Verdict::Invalid),
        ("inversion_2000ops_6pct_info_valid", &inversion_valid, Verdict::Valid),
        ("inversion_2000ops_6pct_info_invalid", &inversion_invalid, Verdict::Invalid),
    ] {
        checked(name, events, ModelKind::CasRegister, &rules, &[want]);
        group.bench_function(name, |b| b.iter(|| check_with(events, ModelKind::CasRegister, &rules).unwrap()));
    }
    group.finish();

    // The hard case: each run takes up to the timeout, so few flat samples.
    let hard = hard_history();
    let short = opts(HARD_TIMEOUT);
    let start = Instant::now();
    checked("cas_register_6000inv_10pct_info_invalid_2s", &hard, ModelKind::CasRegister, &short, &[Verdict::Unknown, Verdict::Invalid]);
    assert!(start.elapsed() < HARD_TIMEOUT + Duration::from_millis(500), "overran the timeout");
    let mut group = c.benchmark_group("linearizability_hard");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(20));
    group.bench_function("cas_register_6000inv_10pct_info_invalid_2s", |b| {
        b.iter(|| {
            let r = check_with(&hard, ModelKind::CasRegister, &short).unwrap();
            assert_ne!(r.verdict, Verdict::Valid);
            r
        })
    });
    group.finish();
}

/// Peak resident set size of this process (Linux), in MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn hard_once() {
    let hard = hard_history();
    let start = Instant::now();
    // LOCKCHAOS_BENCH_TIMEOUT=seconds: how memory grows given more time (the memo budget).
    let timeout = std::env::var("LOCKCHAOS_BENCH_TIMEOUT").ok().and_then(|s| s.parse().ok()).map_or(HARD_TIMEOUT, Duration::from_secs);
    let r = check_with(&hard, ModelKind::CasRegister, &opts(timeout)).unwrap();
    describe("hard once", &hard, &r, start.elapsed());
    eprintln!("notes: {:?}", r.notes);
    eprintln!("peak RSS: {:.1} MiB", peak_rss_mib().unwrap_or(f64::NAN));
}

fn info_sweep() {
    let o = opts(Duration::from_secs(60));
    for (info, seeds) in [(0.03, 10usize), (0.06, 10), (0.10, 10)] {
        let mut times = Vec::new();
        for seed in 0..seeds as u64 {
            let events = corrupt_last_read(single_key(GenModel::CasRegister, 480, info, seed));
            let start = Instant::now();
            let r = check_with(&events, ModelKind::CasRegister, &o).unwrap();
            let t = start.elapsed();
            describe(&format!("info {info} seed {seed}"), &events, &r, t);
            times.push((t, r.verdict));
        }
        times.sort_by_key(|(t, _)| *t);
        let unknown = times.iter().filter(|(_, v)| *v == Verdict::Unknown).count();
        eprintln!(
            "info {info}: min {:.2} s, median {:.2} s, max {:.2} s, {unknown} unknown of {seeds}",
            times[0].0.as_secs_f64(),
            times[seeds / 2].0.as_secs_f64(),
            times[seeds - 1].0.as_secs_f64(),
        );
    }
}

fn main() {
    match std::env::var("LOCKCHAOS_BENCH").as_deref() {
        Ok("hard-once") => hard_once(),
        Ok("info-sweep") => info_sweep(),
        _ => {
            let mut c = Criterion::default().configure_from_args();
            bench(&mut c);
            c.final_summary();
        }
    }
}
