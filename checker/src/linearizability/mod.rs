//! Linearizability against a sequential model, porcupine-class (docs/architecture.md, "Checker properties").
//!
//! - `model.rs`: what a model is (spec); `models/`: mutex, register, cas-register, kv;
//! - `pairing.rs`: events → operations (invoke + completion per client process);
//! - `refute.rs`, `reigns.rs`: rules that prove a partition invalid before any search;
//! - `search.rs`: Wing–Gong–Lowe search with memoisation (the checker, model-agnostic), over
//!   `entries.rs` (the history as a linked list) and `bitset.rs` (the memo's key);
//! - here: partitioning (P-compositionality), running partitions in parallel, the result.
//!
//! Semantics: `ok` ops took effect between invoke and completion; `fail` ops did not happen;
//! `info` ops and invokes never completed are indeterminate: they may take effect at any
//! point after their invoke, or never. Real-time order is the order of events in the slice.
//! Malformed input for the model is an `Err` naming the event; a history that cannot be
//! linearized is an `invalid` verdict with evidence; a search that runs out of time (or of
//! memo cache budget) is `unknown`.

mod bitset;
mod entries;
pub mod model;
pub mod models;
mod pairing;
pub mod refute;
mod reigns;
mod search;

pub use model::{partition_by_key, HistoryOp, Model, Op, Partition};

use crate::history::Event;
use crate::verdict::Verdict;
use search::{GiveUp, Limits, Outcome};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Memo cache budget shared by all search threads: past it a partition is `unknown`.
pub const DEFAULT_MAX_MEMO_BYTES: usize = 1 << 30;

/// The built-in models, by the names used on the command line and in results.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    Mutex,
    Register,
    CasRegister,
    Kv,
}

impl ModelKind {
    pub const ALL: [ModelKind; 4] = [ModelKind::Mutex, ModelKind::Register, ModelKind::CasRegister, ModelKind::Kv];

    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Mutex => "mutex",
            ModelKind::Register => "register",
            ModelKind::CasRegister => "cas-register",
            ModelKind::Kv => "kv",
        }
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ModelKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ModelKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown model {s:?}: expected mutex, register, cas-register or kv"))
    }
}

/// Limits of one check, and the models' initial value. `Options::new(timeout)`, then set fields.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// Wall-clock budget for the whole check; undecided partitions are then `unknown`.
    pub timeout: Duration,
    /// Estimated memo cache bytes, split evenly between search threads.
    pub max_memo_bytes: usize,
    /// Search threads; 0 = the machine's available parallelism.
    pub threads: usize,
    /// The value each object holds before its first write (default `Null`, nil): each register
    /// for `register` and `cas-register`, each key for `kv` (`""` is porcupine's kv
    /// convention, absent keys read as the empty string). The `mutex` model has no value (a
    /// lock starts free): anything but `Null` is an error with it.
    pub initial: Value,
    /// Try the models' rules (refute.rs) before the search (default). Off: the search alone,
    /// for measuring it and for checking the rules against it.
    pub rules: bool,
}

impl Options {
    pub fn new(timeout: Duration) -> Self {
        Options { timeout, max_memo_bytes: DEFAULT_MAX_MEMO_BYTES, threads: 0, initial: Value::Null, rules: true }
    }
}

/// The result of the linearizability property.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Linearizability {
    pub verdict: Verdict,
    pub model: String,
    /// The value each object started from ([`Options::initial`]); absent in JSON when `null`.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub initial: Value,
    pub partitions: usize,
    /// Operations checked: ok and indeterminate ones (failed ones did not happen).
    pub operations: usize,
    /// Of which indeterminate (info, or never completed).
    pub indeterminate: usize,
    /// One per non-linearizable partition, by partition label.
    pub failures: Vec<PartitionFailure>,
    /// Partitions left undecided (time or memo budget ran out; `notes` says which).
    pub timed_out_partitions: Vec<String>,
    pub notes: Vec<String>,
}

/// Evidence for one non-linearizable partition: operations are named by their invoke's
/// `Event.index`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PartitionFailure {
    /// The partition's key (or "all" / "(no key)").
    pub partition: String,
    /// The longest linearizable prefix found (by determinate operations), in linearization
    /// order; indeterminate operations placed in it are included.
    pub longest_prefix: Vec<u64>,
    /// The operations that could come next in real time, none of which the model accepts
    /// after `longest_prefix`, in history order.
    pub unplaceable: Vec<u64>,
    /// The model state after `longest_prefix` (Rust `Debug` text).
    pub state: String,
    /// When a rule proved it before any search (refute.rs): what it shows, naming the
    /// operations; `unplaceable` is then the one operation it cannot place, and
    /// `longest_prefix` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// Checks `events` (in history order) against a built-in model.
pub fn check(events: &[Event], model: ModelKind, timeout: Duration) -> Result<Linearizability, String> {
    check_with(events, model, &Options::new(timeout))
}

/// Checks `events` against a built-in model, each object starting from `opts.initial`.
pub fn check_with(events: &[Event], model: ModelKind, opts: &Options) -> Result<Linearizability, String> {
    let initial = opts.initial.clone();
    let mut result = match model {
        ModelKind::Mutex if !initial.is_null() => {
            return Err(format!("an initial value ({initial}) does not apply to the mutex model: a lock starts free"))
        }
        ModelKind::Mutex => check_model(events, &models::Mutex, opts),
        ModelKind::Register => check_model(events, &models::Register { initial: initial.clone() }, opts),
        ModelKind::CasRegister => check_model(events, &models::CasRegister { initial: initial.clone() }, opts),
        ModelKind::Kv => check_model(events, &models::Kv { initial: initial.clone() }, opts),
    }?;
    result.initial = initial;
    Ok(result)
}

/// Checks `events` against any [`Model`] (which has its own initial state: `opts.initial` is
/// not used here, and the result's `initial` is `Null`).
pub fn check_model<M: Model>(events: &[Event], model: &M, opts: &Options) -> Result<Linearizability, String> {
    let deadline = Instant::now() + opts.timeout;
    let paired = pairing::pair(model, events)?;
    let ops = &paired.ops;
    let mut parts = model.partition(ops);
    parts.retain(|p| !p.ops.is_empty());

    let available = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = match opts.threads {
        0 => available,
        n => n,
    }
    .clamp(1, parts.len().max(1));
    let limits = Limits { deadline, max_cache_bytes: opts.max_memo_bytes / threads };
    let outcomes = run_partitions(model, ops, &parts, &limits, threads, opts.rules);

    let mut result = Linearizability {
        verdict: Verdict::Valid,
        model: model.name().to_string(),
        initial: Value::Null,
        partitions: parts.len(),
        operations: ops.len(),
        indeterminate: paired.indeterminate,
        failures: Vec::new(),
        timed_out_partitions: Vec::new(),
        notes: paired.notes,
    };
    let (mut timeouts, mut cache_full) = (0, 0);
    for (part, outcome) in parts.iter().zip(outcomes) {
        let index = |i: &usize| ops[part.ops[*i]].index;
        match outcome {
            Outcome::Linearizable => {}
            Outcome::NotLinearizable(f) => result.failures.push(PartitionFailure {
                partition: part.label.clone(),
                longest_prefix: f.prefix.iter().map(index).collect(),
                unplaceable: f.unplaceable.iter().map(index).collect(),
                state: f.state,
                rule: None,
            }),
            Outcome::Refuted(r) => result.failures.push(PartitionFailure {
                partition: part.label.clone(),
                longest_prefix: vec![],
                unplaceable: vec![index(&r.op)],
                state: String::new(),
                rule: Some(r.rule),
            }),
            Outcome::GaveUp(why) => {
                match why {
                    GiveUp::Timeout => timeouts += 1,
                    GiveUp::CacheFull => cache_full += 1,
                }
                result.timed_out_partitions.push(part.label.clone());
            }
        }
    }
    if timeouts > 0 {
        result.notes.push(format!("{timeouts} partition(s) undecided within the {:?} timeout", opts.timeout));
    }
    if cache_full > 0 {
        result
            .notes
            .push(format!("{cache_full} partition(s) stopped at the memo cache limit ({} MiB per thread)", limits.max_cache_bytes >> 20));
    }
    result.verdict = if !result.failures.is_empty() {
        Verdict::Invalid
    } else if !result.timed_out_partitions.is_empty() {
        Verdict::Unknown
    } else if ops.is_empty() {
        // Nothing was tested: no evidence either way.
        result.notes.push(format!("no {} operations in the history", model.name()));
        Verdict::Unknown
    } else {
        Verdict::Valid
    };
    Ok(result)
}

/// Searches every partition, largest first, on up to `threads` threads; outcomes are
/// returned in partition order.
fn run_partitions<M: Model>(
    model: &M,
    ops: &[HistoryOp<M::Input, M::Output>],
    parts: &[Partition],
    limits: &Limits,
    threads: usize,
    rules: bool,
) -> Vec<Outcome> {
    let run = |p: usize| {
        let part_ops: Vec<&HistoryOp<M::Input, M::Output>> = parts[p].ops.iter().map(|&i| &ops[i]).collect();
        // A rule's proof first: when one holds, no search is needed.
        match if rules { model.refute(&part_ops) } else { None } {
            Some(r) => Outcome::Refuted(r),
            None => search::search(model, &part_ops, limits),
        }
    };
    if threads <= 1 {
        return (0..parts.len()).map(run).collect();
    }
    // Largest first, so one big partition does not start last and run alone.
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&p| std::cmp::Reverse(parts[p].ops.len()));
    let next = AtomicUsize::new(0);
    let mut outcomes: Vec<Option<Outcome>> = (0..parts.len()).map(|_| None).collect();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    while let Some(&p) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                        done.push((p, run(p)));
                    }
                    done
                })
            })
            .collect();
        for worker in workers {
            let done = worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            for (p, outcome) in done {
                outcomes[p] = Some(outcome);
            }
        }
    });
    outcomes.into_iter().map(|o| o.expect("every partition was searched")).collect()
}
