//! The rules before the search (src/linearizability/refute.rs) against the plain search, on
//! generated histories: small enough for the search to decide every one, valid (by
//! construction) and invalid (corrupted reads), with indeterminate and failed operations and
//! few values (so values repeat and stale reads are possible). A rule must never refute a
//! history the search linearizes, and the verdict with the rules must be the search's.

#[path = "linearizability_gen.rs"]
mod gen;
#[path = "inversion_gen.rs"]
mod inversion_gen;

use checker::linearizability::{check_with, ModelKind, Options};
use checker::Verdict;
use gen::{generate, Gen, GenModel};
use inversion_gen::{inversion, Inversion};
use rand::{Rng, SeedableRng};
use std::time::Duration;

fn options(rules: bool) -> Options {
    let mut opts = Options::new(Duration::from_secs(30));
    opts.rules = rules;
    opts.threads = 1;
    opts
}

/// Histories compared so far: how many, how many the search found invalid, how many of those a
/// rule refuted.
#[derive(Default)]
struct Tally {
    histories: usize,
    invalid: usize,
    refuted: usize,
    /// Of which by rule 4 (reigns.rs), a new-old inversion.
    by_reigns: usize,
}

impl Tally {
    /// Checks `events` with and without the rules: a rule's refutation only where the search
    /// finds the history invalid, and the same verdict either way. A history with no operation
    /// of the model is not counted (the search has nothing to decide).
    fn compare(&mut self, events: &[checker::Event], kind: ModelKind, what: &str) {
        let alone = check_with(events, kind, &options(false)).unwrap();
        let with_rules = check_with(events, kind, &options(true)).unwrap();
        if alone.operations == 0 {
            return;
        }
        self.histories += 1;
        assert_ne!(alone.verdict, Verdict::Unknown, "{what}: the search must decide histories this small");
        let by_rule: Vec<&str> = with_rules.failures.iter().filter_map(|f| f.rule.as_deref()).collect();
        if !by_rule.is_empty() {
            self.refuted += 1;
            self.by_reigns += usize::from(by_rule.iter().any(|r| r.starts_with("new-old inversion")));
            assert_eq!(alone.verdict, Verdict::Invalid, "{what}: a rule refuted a linearizable history: {by_rule:?}\n{events:?}");
        }
        self.invalid += usize::from(alone.verdict == Verdict::Invalid);
        assert_eq!(with_rules.verdict, alone.verdict, "{what}: {by_rule:?}");
    }

    /// The comparison means something only if both kinds of history came up, and rules fired.
    fn assert_meaningful(&self, what: &str) {
        let Tally { histories, invalid, refuted, by_reigns } = self;
        eprintln!("{histories} {what}: {invalid} invalid by the search, {refuted} of them refuted by a rule ({by_reigns} by rule 4)");
        assert!(*invalid > 100 && histories - invalid > 100, "{invalid} invalid of {histories}");
        assert!(*refuted > 50, "the rules refuted only {refuted} of {invalid} invalid histories");
    }
}

#[test]
fn a_rule_never_refutes_a_history_the_search_linearizes() {
    let mut tally = Tally::default();
    for (model, kind) in [(GenModel::Register, ModelKind::Register), (GenModel::CasRegister, ModelKind::CasRegister)] {
        for seed in 0..600u64 {
            let mut g = Gen::new(model, 2 + (seed % 4) as usize, 8 + (seed % 23) as usize);
            g.values = 1 + seed % 4;
            g.keys = 1 + (seed % 2) as usize;
            g.info = [0.0, 0.05, 0.15, 0.3][(seed / 4 % 4) as usize];
            g.fail = [0.0, 0.1][(seed / 16 % 2) as usize];
            g.corrupt = [0.0, 0.05, 0.2][(seed / 32 % 3) as usize];
            tally.compare(&generate(&g, seed), kind, &format!("{kind} seed {seed}"));
        }
    }
    tally.assert_meaningful("register histories");
}

/// Makes some ok reads report the value of a write or cas called before them (stale, new-old
/// inversions, or by chance what they saw): `share` of them, at least one.
fn misread(events: &mut [checker::Event], seed: u64, share: f64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed);
    let reads: Vec<usize> = (0..events.len()).filter(|&i| events[i].kind == checker::EventType::Ok && events[i].f == "read").collect();
    for (n, &r) in reads.iter().enumerate() {
        if n > 0 && rng.random::<f64>() >= share {
            continue;
        }
        let r = if n == 0 { reads[rng.random_range(0..reads.len())] } else { r };
        let stored: Vec<serde_json::Value> = events[..r]
            .iter()
            .filter(|e| e.kind == checker::EventType::Invoke)
            .filter_map(|e| match e.f.as_str() {
                "write" => Some(e.value.clone()),
                "cas" => e.value.get(1).cloned(),
                _ => None,
            })
            .collect();
        if !stored.is_empty() {
            events[r].value = stored[rng.random_range(0..stored.len())].clone();
        }
    }
}

/// Rule 4's class (tests/inversion_gen.rs) at sizes the search decides, twins valid and
/// invalid, and the same histories with reads misreported as earlier-stored values; then the
/// random generator with fresh values (every value written once), misread likewise.
#[test]
fn the_inversion_rule_never_refutes_a_history_the_search_linearizes() {
    let mut tally = Tally::default();
    for seed in 0..500u64 {
        let g = Inversion {
            ops: 24 + (seed % 37) as usize,
            clients: 5 + (seed % 3) as usize,
            info: [0.05, 0.15, 0.3][(seed / 2 % 3) as usize],
            valid: seed % 2 == 0,
        };
        let mut events = inversion(&g, seed);
        tally.compare(&events, ModelKind::CasRegister, &format!("inversion seed {seed} {g:?}"));
        if seed % 2 == 0 {
            misread(&mut events, seed, 0.1);
            tally.compare(&events, ModelKind::CasRegister, &format!("inversion misread seed {seed} {g:?}"));
        }
    }
    for (model, kind) in [(GenModel::Register, ModelKind::Register), (GenModel::CasRegister, ModelKind::CasRegister)] {
        for seed in 0..400u64 {
            let mut g = Gen::new(model, 2 + (seed % 4) as usize, 8 + (seed % 23) as usize);
            g.values = [0, 0, 2][(seed % 3) as usize];
            g.info = [0.0, 0.1, 0.3][(seed / 3 % 3) as usize];
            g.fail = [0.0, 0.1][(seed / 9 % 2) as usize];
            let mut events = generate(&g, seed);
            if seed % 4 != 0 {
                misread(&mut events, seed, [0.05, 0.2][(seed / 18 % 2) as usize]);
            }
            tally.compare(&events, kind, &format!("{kind} fresh values seed {seed}"));
        }
    }
    tally.assert_meaningful("histories of written-once values");
    assert!(tally.by_reigns > 50, "rule 4 refuted only {} histories", tally.by_reigns);
}

/// A lock history made by simulation: each process acquires (ok when the lock is free at its
/// completion, else fail), holds, releases; some operations end `info` (taking effect or not,
/// and the process is replaced by a fresh one, as in Jepsen); with `corrupt`, an acquire is
/// granted although the lock is held (a violation, most of the time).
fn mutex_history(seed: u64, processes: u64, steps: usize, info: f64, corrupt: f64) -> Vec<checker::Event> {
    use checker::{Event, EventType, Process};
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Idle,
        Acquiring,
        Holding,
        Releasing,
    }
    let mut procs: Vec<(u64, State)> = (0..processes).map(|p| (p, State::Idle)).collect();
    let mut next_id = processes;
    let mut holder: Option<u64> = None;
    let mut events = vec![];
    let push = |events: &mut Vec<Event>, p: u64, kind: EventType, f: &str| {
        let mut e = Event::new(events.len() as u64, Process::Client(p), kind, f);
        e.index = events.len() as u64;
        e.key = Some("lock".into());
        events.push(e);
    };
    for _ in 0..steps {
        let slot = rng.random_range(0..procs.len());
        let (p, state) = procs[slot];
        match state {
            State::Idle => {
                push(&mut events, p, EventType::Invoke, "acquire");
                procs[slot].1 = State::Acquiring;
            }
            State::Acquiring => {
                if rng.random::<f64>() < info {
                    if holder.is_none() && rng.random::<bool>() {
                        holder = Some(p);
                    }
                    push(&mut events, p, EventType::Info, "acquire");
                    procs[slot] = (next_id, State::Idle);
                    next_id += 1;
                } else if holder.is_none() || rng.random::<f64>() < corrupt {
                    holder = Some(p);
                    push(&mut events, p, EventType::Ok, "acquire");
                    procs[slot].1 = State::Holding;
                } else {
                    push(&mut events, p, EventType::Fail, "acquire");
                    procs[slot].1 = State::Idle;
                }
            }
            State::Holding => {
                push(&mut events, p, EventType::Invoke, "release");
                procs[slot].1 = State::Releasing;
            }
            State::Releasing => {
                let took_effect = rng.random::<f64>() >= info || rng.random::<bool>();
                if took_effect && holder == Some(p) {
                    holder = None;
                }
                if took_effect && rng.random::<f64>() >= info {
                    push(&mut events, p, EventType::Ok, "release");
                    procs[slot].1 = State::Idle;
                } else {
                    push(&mut events, p, EventType::Info, "release");
                    procs[slot] = (next_id, State::Idle);
                    next_id += 1;
                }
            }
        }
    }
    events
}

#[test]
fn the_mutex_rule_never_refutes_a_lock_history_the_search_linearizes() {
    let mut tally = Tally::default();
    for seed in 0..1000u64 {
        let corrupt = [0.0, 0.1, 0.3][(seed % 3) as usize];
        let info = [0.0, 0.05, 0.2][(seed / 3 % 3) as usize];
        let events = mutex_history(seed, 2 + seed % 3, 10 + (seed % 30) as usize, info, corrupt);
        tally.compare(&events, ModelKind::Mutex, &format!("seed {seed}"));
    }
    tally.assert_meaningful("lock histories");
}
