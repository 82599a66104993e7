//! The rules before the search (src/linearizability/refute.rs) against the plain search, on
//! generated histories: small enough for the search to decide every one, valid (by
//! construction) and invalid (corrupted reads), with indeterminate and failed operations and
//! few values (so values repeat and stale reads are possible). A rule must never refute a
//! history the search linearizes, and the verdict with the rules must be the search's.

#[path = "linearizability_gen.rs"]
mod gen;

use checker::linearizability::{check_with, ModelKind, Options};
use checker::Verdict;
use gen::{generate, Gen, GenModel};
use std::time::Duration;

fn options(rules: bool) -> Options {
    let mut opts = Options::new(Duration::from_secs(30));
    opts.rules = rules;
    opts.threads = 1;
    opts
}

#[test]
fn a_rule_never_refutes_a_history_the_search_linearizes() {
    let mut refuted = 0;
    let mut histories = 0;
    let mut search_invalid = 0;
    for (model, kind) in [(GenModel::Register, ModelKind::Register), (GenModel::CasRegister, ModelKind::CasRegister)] {
        for seed in 0..600u64 {
            let mut g = Gen::new(model, 2 + (seed % 4) as usize, 8 + (seed % 23) as usize);
            g.values = 1 + seed % 4;
            g.keys = 1 + (seed % 2) as usize;
            g.info = [0.0, 0.05, 0.15, 0.3][(seed / 4 % 4) as usize];
            g.fail = [0.0, 0.1][(seed / 16 % 2) as usize];
            g.corrupt = [0.0, 0.05, 0.2][(seed / 32 % 3) as usize];
            let events = generate(&g, seed);
            let alone = check_with(&events, kind, &options(false)).unwrap();
            let with_rules = check_with(&events, kind, &options(true)).unwrap();
            histories += 1;
            assert_ne!(alone.verdict, Verdict::Unknown, "{kind} seed {seed}: the search must decide histories this small");
            let by_rule: Vec<&str> = with_rules.failures.iter().filter_map(|f| f.rule.as_deref()).collect();
            if !by_rule.is_empty() {
                refuted += 1;
                assert_eq!(
                    alone.verdict,
                    Verdict::Invalid,
                    "{kind} seed {seed}: a rule refuted a linearizable history: {by_rule:?}\n{events:?}"
                );
            }
            search_invalid += usize::from(alone.verdict == Verdict::Invalid);
            assert_eq!(with_rules.verdict, alone.verdict, "{kind} seed {seed}: {by_rule:?}");
        }
    }
    eprintln!("{histories} histories: {search_invalid} invalid by the search, {refuted} of them refuted by a rule");
    // The comparison means something only if both kinds of history came up, and rules fired.
    assert!(search_invalid > 100 && histories - search_invalid > 100, "{search_invalid} invalid of {histories}");
    assert!(refuted > 50, "the rules refuted only {refuted} of {search_invalid} invalid histories");
}
