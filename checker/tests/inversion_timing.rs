//! Timing of issue #25's class, the new-old inversion (tests/inversion_gen.rs): 2,000 operations,
//! 10 clients, 3 % and 6 % indeterminate, several seeds, invalid and valid twins, each within
//! 10 s on one core. Ignored by default (meaningful only optimised; run it on one core):
//! `taskset -c 1 cargo test -p checker --release --test inversion_timing -- --ignored
//! --nocapture --test-threads 1`. `TIMING_SEARCH_ALONE=1`: the search alone (`rules` off),
//! `TIMING_TIMEOUT=1`: a 10 s timeout, asserting nothing (both for
//! the "before" figures); `INVERSION_OPS=400`: another size.
//!
//! The non-ignored test asserts a definite verdict at a moderate size with a generous timeout.

#[path = "inversion_gen.rs"]
mod inversion_gen;

use checker::linearizability::{check_with, Linearizability, ModelKind, Options};
use checker::{Event, Verdict};
use inversion_gen::{inversion, Inversion};
use std::time::{Duration, Instant};

fn options() -> Options {
    let mut opts = Options::new(Duration::from_secs(60));
    opts.threads = 1;
    if std::env::var_os("TIMING_SEARCH_ALONE").is_some() {
        opts.rules = false;
        opts.timeout = Duration::from_secs(10);
    }
    if std::env::var_os("TIMING_TIMEOUT").is_some() {
        opts.timeout = Duration::from_secs(10);
    }
    opts
}

fn timed(events: &[Event], opts: &Options) -> (Linearizability, Duration) {
    let start = Instant::now();
    let r = check_with(events, ModelKind::CasRegister, opts).expect("well-formed");
    (r, start.elapsed())
}

#[test]
#[ignore = "timing: run optimised with --ignored, on one core"]
fn inversion_2000() {
    let ops = std::env::var("INVERSION_OPS").ok().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let opts = options();
    let mut worst = Duration::ZERO;
    for info in [0.03, 0.06] {
        for seed in 0..5 {
            for valid in [false, true] {
                let events = inversion(&Inversion { ops, clients: 10, info, valid }, seed);
                let (r, t) = timed(&events, &opts);
                let how = r.failures.first().map_or("", |f| if f.rule.is_some() { " (by a rule)" } else { " (by the search)" });
                println!(
                    "{ops} ops info {info} seed {seed} {:7}: {}{how} in {:.2} ms ({} ops, {} indeterminate)",
                    if valid { "valid" } else { "invalid" },
                    r.verdict,
                    t.as_secs_f64() * 1e3,
                    r.operations,
                    r.indeterminate
                );
                worst = worst.max(t);
                if opts.timeout == Duration::from_secs(60) {
                    assert_eq!(r.verdict, if valid { Verdict::Valid } else { Verdict::Invalid });
                    assert!(t < Duration::from_secs(10), "{t:?}");
                }
            }
        }
    }
    println!("worst: {:.3} s", worst.as_secs_f64());
}

/// Not timing: the class gets a definite verdict (invalid by rule 4, valid by the search) at a
/// moderate size, with a generous timeout, in any build.
#[test]
fn the_inversion_class_is_decided_not_unknown() {
    let mut opts = Options::new(Duration::from_secs(120));
    opts.threads = 1;
    for (seed, info) in [(0, 0.03), (1, 0.06), (2, 0.06)] {
        for valid in [false, true] {
            let events = inversion(&Inversion { ops: 800, clients: 10, info, valid }, seed);
            let (r, _) = timed(&events, &opts);
            assert_eq!(r.verdict, if valid { Verdict::Valid } else { Verdict::Invalid }, "seed {seed} info {info}: {:?}", r.notes);
            if !valid {
                let rule = r.failures[0].rule.as_deref().expect("proved by a rule");
                assert!(rule.starts_with("new-old inversion: "), "{rule}");
            }
        }
    }
}
