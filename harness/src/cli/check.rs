//! `lockchaos check FILE`: the checker on its own, for our histories and for Jepsen's.
//!
//! Without `--model`, the lock properties decide (as in a run); with `--model`, the
//! linearizability verdict decides and the lock properties are shown for information (a Jepsen
//! register history has no resource records, so they do not apply to it).
//! Exit status, Jepsen's convention: 0 valid, 1 invalid, 2 unknown or error.
//!
//! A run folder is checked from its parties' own files (workers/*.jsonl, resource.jsonl,
//! nemesis.jsonl), merged here without writing into the folder, so a run killed before it wrote
//! history.jsonl can be checked too. When that run was cut short (interrupted, or it never
//! finished) a valid verdict becomes unknown, as in its results.json: what it did not record
//! might have broken the lock.
//!
//! The stuck property's bound is `--stuck-after-ms`, else the run folder's scenario's (its
//! run.json), else the checker's default (10 s).
//!
//! `--recheck STORE...` judges every finished run of the stores again, as its own end did
//! (`harness::recheck`), and lists those whose verdict changed from their results.json
//! (check/recheck.rs). Exit status: 0 none changed, 1 some did, 2 nothing could be rechecked
//! or an error.

use anyhow::Context;
use checker::linearizability::{self, ModelKind};
use checker::{CheckOptions, HistoryFormat, ParsedHistory, Verdict};
use harness::{run_store, run_verdict};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

mod recheck;

/// Seconds the linearizability search gets without `--timeout`.
const DEFAULT_TIMEOUT_SECS: u64 = 60;

#[derive(clap::Args)]
pub struct Args {
    /// history.jsonl, a Jepsen history.edn or jepsen.log, or a run folder; with --recheck, one
    /// or more stores.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Judge every finished run of the stores (FILE...) again with today's checker, as the run's
    /// end did, and list each run whose verdict changed from its results.json. Nothing is
    /// written.
    #[arg(long)]
    recheck: bool,
    /// Check linearizability against this model (its verdict then decides).
    #[arg(long, value_parser = |s: &str| s.parse::<ModelKind>())]
    model: Option<ModelKind>,
    /// jsonl, edn or jepsen-log (Jepsen's log lines, jepsen.log) (default: from the extension,
    /// .jsonl, .edn or .log, else from the content).
    #[arg(long, value_parser = |s: &str| s.parse::<HistoryFormat>().map_err(|e| e.to_string()))]
    format: Option<HistoryFormat>,
    /// With --model: the JSON value each object holds before its first write (default null, nil).
    /// register, cas-register: every register's value; kv: every key's value (porcupine's kv
    /// histories read absent keys as "": --initial '""'); mutex: none (a lock starts free; only
    /// null is accepted).
    #[arg(long, value_name = "JSON", value_parser = parse_initial)]
    initial: Option<serde_json::Value>,
    /// Seconds for the linearizability search; past it the verdict is unknown (default 60).
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<u64>,
    /// Print the results object as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// How long (ms) the lock may stay free without a grant while clients ask before the stuck
    /// property calls it stuck (default: a run folder's scenario's bound, else 10000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    stuck_after_ms: Option<u64>,
}

#[derive(Serialize)]
struct CheckReport {
    file: PathBuf,
    events: usize,
    warnings: Vec<String>,
    outcome: Verdict,
    /// The lock properties (resource safety, fencing, holder overlap, stuck, ...).
    properties: checker::CheckResults,
    linearizability: Option<linearizability::Linearizability>,
    /// Why the run of this folder cannot vouch for safety (it was cut short); then a valid
    /// history gives `outcome` unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    cut_short: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.recheck {
        refuse_flags_of_one_history(&args)?;
        return recheck::run(&args.files, args.json);
    }
    let [input] = args.files.as_slice() else {
        anyhow::bail!("check takes one FILE, {} given (several are for --recheck STORE...)", args.files.len());
    };
    match (args.model, &args.initial) {
        (None, Some(_)) => anyhow::bail!("--initial needs --model: it is the initial value of the model's objects"),
        (Some(ModelKind::Mutex), Some(v)) if !v.is_null() => {
            anyhow::bail!("--initial {v} does not apply to --model mutex: a lock starts free (only null is accepted)")
        }
        _ => {}
    }
    let (file, mut parsed, cut_short) = read_input(input, args.format)?;
    let mut check_options = CheckOptions::default();
    let folders_bound = match (args.stuck_after_ms, run_folder(input)) {
        (None, Some(folder)) => run_verdict::stuck_bound_of(folder).unwrap_or_else(|e| {
            parsed.warnings.push(format!("{e:#}: the stuck bound is the default"));
            None
        }),
        _ => None,
    };
    check_options.stuck_bound = args.stuck_after_ms.map(Duration::from_millis).or(folders_bound).unwrap_or(checker::stuck::DEFAULT_BOUND);
    let properties = checker::check(&parsed.events, &check_options);
    let mut opts = linearizability::Options::new(Duration::from_secs(args.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS)));
    opts.initial = args.initial.unwrap_or_default();
    let lin = args
        .model
        .map(|m| linearizability::check_with(&parsed.events, m, &opts))
        .transpose()
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let refused = run_folder(input).map(run_verdict::refused).unwrap_or_default();
    if !refused.is_empty() {
        parsed.warnings.push(format!(
            "the run's resource refused {} that no worker sent (first: {}): it cannot be judged safe",
            refused.counted(),
            refused.first.first().map_or("", String::as_str)
        ));
    }
    let outcome =
        run_verdict::vouched(lin.as_ref().map(|l| l.verdict).unwrap_or(properties.outcome), cut_short.is_some() || !refused.is_empty());
    let report =
        CheckReport { file, events: parsed.events.len(), warnings: parsed.warnings, outcome, properties, linearizability: lin, cut_short };
    if args.json {
        harness::print_line!("{}", serde_json::to_string_pretty(&report).context("serialising the results")?);
    } else {
        print_human(&report);
    }
    Ok(ExitCode::from(match outcome {
        Verdict::Valid => 0,
        Verdict::Invalid => 1,
        Verdict::Unknown => 2,
    }))
}

/// A recheck judges each run as its end did, by the run's own options: the flags that say how
/// to read or check one history are refused beside it.
fn refuse_flags_of_one_history(args: &Args) -> anyhow::Result<()> {
    let flags = [
        ("--model", args.model.is_some()),
        ("--initial", args.initial.is_some()),
        ("--format", args.format.is_some()),
        ("--timeout", args.timeout.is_some()),
        ("--stuck-after-ms", args.stuck_after_ms.is_some()),
    ];
    match flags.iter().find(|(_, given)| *given) {
        Some((flag, _)) => anyhow::bail!("--recheck does not take {flag}: each run is checked again as its own end checked it"),
        None => Ok(()),
    }
}

/// `--initial`: one JSON value. The usual slip is a string without its JSON quotes. An integer
/// beyond i64 and u64 is refused as in a history (serde_json would round it).
fn parse_initial(s: &str) -> Result<serde_json::Value, String> {
    let value = serde_json::from_str(s).map_err(|e| format!("not a JSON value ({e}); a string needs its quotes, e.g. --initial '\"\"'"))?;
    match checker::wide_integer::find_in_json(s.as_bytes()) {
        Some(wide) => Err(wide.integer.to_string()),
        None => Ok(value),
    }
}

/// The run folder `path` names: itself, or the folder of a history.jsonl.
fn run_folder(path: &Path) -> Option<&Path> {
    if path.is_dir() {
        return Some(path);
    }
    path.parent().filter(|_| path.file_name().is_some_and(|n| n == "history.jsonl"))
}

/// The history to check, and why its run cannot vouch for safety, if it was cut short. A run
/// folder is its parties' files merged (or its history.jsonl when it holds none); a run
/// folder's history.jsonl stands for its run too.
fn read_input(path: &Path, format: Option<HistoryFormat>) -> anyhow::Result<(PathBuf, ParsedHistory, Option<String>)> {
    // A HistoryError's text names the file and the cause; its source chain would say the cause twice.
    // check holds a history file to the history rules (index order, paired completions).
    let read = |file: &Path| checker::read_history(file, format).map_err(|e| anyhow::anyhow!("{e}"));
    if !path.is_dir() {
        return Ok((path.to_path_buf(), read(path)?, run_folder(path).and_then(run_store::cut_short)));
    }
    let cut_short = run_store::cut_short(path);
    if run_store::party_files(path).is_empty() {
        let history = path.join("history.jsonl");
        if !history.exists() {
            anyhow::bail!(
                "{}: no history.jsonl and no party's event files (workers/*.jsonl, resource.jsonl, nemesis.jsonl): not a run folder",
                path.display()
            );
        }
        return Ok((path.to_path_buf(), read(&history)?, cut_short));
    }
    if let Some(other @ (HistoryFormat::Edn | HistoryFormat::JepsenLog)) = format {
        anyhow::bail!("{}: a run folder's event files are JSON lines, not {other}", path.display());
    }
    let (events, warnings) = run_store::read_party_files(path)?;
    Ok((path.to_path_buf(), ParsedHistory { events, warnings }, cut_short))
}

fn print_human(r: &CheckReport) {
    for w in &r.warnings {
        harness::eprint_line!("warning: {w}");
    }
    let p = &r.properties;
    let rs = &p.resource_safety;
    let decides = |name: &str| if r.linearizability.is_none() && p.decides_outcome(name) { "" } else { " (informational)" };
    harness::print_line!(
        "resource_safety: {}{} — lost updates {}, interleaved sections {}, accepted writes {}, rejected writes {}",
        rs.verdict,
        decides("resource_safety"),
        rs.lost_updates,
        rs.interleaved_sections,
        rs.accepted_writes,
        rs.rejected_writes
    );
    let f = &p.fencing;
    harness::print_line!(
        "fencing: {}{} — grants with token {}, non-increasing grants {}, accepted out of order {}, stale writes rejected {}",
        f.verdict,
        decides("fencing"),
        f.grants_with_token,
        f.non_increasing_grants,
        f.accepted_writes_out_of_order,
        f.stale_writes_rejected
    );
    let o = &p.holder_overlap;
    harness::print_line!(
        "holder_overlap: {}{} — overlaps {}, total {:.0} ms, longest {:.0} ms",
        o.verdict,
        decides("holder_overlap"),
        o.overlaps,
        o.total_overlap_ms,
        o.longest_overlap_ms
    );
    let once = &p.exactly_once;
    if once.applies {
        harness::print_line!(
            "exactly_once: {}{} — operations {}, applied twice {}, acknowledged but never applied {}, deliveries {} (sent again {}, answered from the record {}), claims refused {}",
            once.verdict,
            decides("exactly_once"),
            once.operations,
            once.applied_twice,
            once.acknowledged_missing,
            once.deliveries,
            once.resent,
            once.answered_from_record,
            once.claims_refused
        );
    }
    let stuck = &p.stuck;
    if stuck.applies {
        harness::print_line!(
            "stuck: {}{} — stuck {} time(s), longest {:.0} ms, bound {} ms",
            stuck.verdict,
            decides("stuck"),
            stuck.stuck_stretches,
            stuck.longest_stuck_ms,
            stuck.bound_ms
        );
        for st in &stuck.stretches {
            harness::print_line!("  {}", st.in_words());
        }
        if stuck.evidence_omitted > 0 {
            harness::print_line!("  and {} more", stuck.evidence_omitted);
        }
        for n in &stuck.notes {
            harness::print_line!("  {n}");
        }
    }
    if let Some(l) = &r.linearizability {
        let from = if l.initial.is_null() { String::new() } else { format!(", initial value {}", l.initial) };
        harness::print_line!(
            "linearizability ({}{from}): {} — {} operations ({} indeterminate) in {} partition(s)",
            l.model,
            l.verdict,
            l.operations,
            l.indeterminate,
            l.partitions
        );
        for failure in &l.failures {
            if let Some(rule) = &failure.rule {
                harness::print_line!("  partition {}: {rule}", failure.partition);
                continue;
            }
            harness::print_line!(
                "  partition {}: linearizable up to {} operation(s); none of operations {:?} can come next (state {})",
                failure.partition,
                failure.longest_prefix.len(),
                failure.unplaceable,
                failure.state
            );
        }
        for p in &l.timed_out_partitions {
            harness::print_line!("  partition {p}: undecided within the time limit");
        }
    }
    if let Some(why) = &r.cut_short {
        let history_says = r.linearizability.as_ref().map(|l| l.verdict).unwrap_or(p.outcome);
        let note =
            if history_says == Verdict::Valid { ": its history says valid, but a cut-short run cannot vouch for safety" } else { "" };
        harness::print_line!("cut short: {why}{note}");
    }
    harness::print_line!("{}: {} ({} events)", r.file.display(), r.outcome, r.events);
}
