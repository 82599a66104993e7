//! `lockchaos check STORE --recheck`: every finished run of a store judged again by today's
//! checker, as its own end judged it (the same history, check options and stuck bound, and
//! run_verdict's rule for a cut-short run, refused requests and faults not applied), and set
//! beside the verdict its results.json records: which runs' verdicts changed, and in which
//! properties. Nothing is written into the store.

use crate::run_store;
use crate::run_verdict::{self, RunEnding};
use checker::{Event, Verdict};
use results::{Outcome, RunResults, UnknownCause};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What a recheck of some stores found.
#[derive(Serialize, Debug, Default)]
pub struct RecheckReport {
    /// The runs judged again: `changed` and `unchanged` together.
    pub rechecked: usize,
    /// The runs whose outcome, match or any property's verdict changed, in folder order.
    pub changed: Vec<ChangedRun>,
    pub unchanged: usize,
    /// Run folders left out, each with why (no results.json, a file that cannot be read).
    pub unreadable: Vec<Unreadable>,
}

/// A run whose verdict today differs from its recorded one.
#[derive(Serialize, Debug)]
pub struct ChangedRun {
    pub folder: PathBuf,
    pub scenario: String,
    pub outcome: Change<Outcome>,
    /// Why the outcome is unknown, before and now (None: not unknown).
    pub unknown_cause: Change<Option<UnknownCause>>,
    pub matches_expectation: Change<bool>,
    /// Only the properties whose verdict changed.
    pub properties: Vec<PropertyChange>,
}

#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change<T> {
    pub old: T,
    pub new: T,
}

impl<T: PartialEq> Change<T> {
    pub fn changed(&self) -> bool {
        self.old != self.new
    }
}

/// A property's verdict before and now; None where the checker of the time did not judge it
/// (an older results.json, or a property that applies to this history no more).
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct PropertyChange {
    pub property: &'static str,
    pub old: Option<Verdict>,
    pub new: Option<Verdict>,
}

#[derive(Serialize, Debug)]
pub struct Unreadable {
    pub folder: PathBuf,
    /// One line.
    pub why: String,
}

/// Rechecks every run folder of `stores`. A folder reached twice (the same store given twice,
/// a link) is rechecked once. Err only when a store itself cannot be read.
pub fn recheck(stores: &[PathBuf]) -> anyhow::Result<RecheckReport> {
    let mut report = RecheckReport::default();
    for (folder, _) in run_store::run_folders_once(stores)? {
        match recheck_run(&folder) {
            Ok((old, new)) => {
                report.rechecked += 1;
                match compare(folder, &old, &new) {
                    Some(changed) => report.changed.push(changed),
                    None => report.unchanged += 1,
                }
            }
            Err(why) => report.unreadable.push(Unreadable { folder, why }),
        }
    }
    Ok(report)
}

/// The run's recorded results, and the results today's checker gives its history; or why the
/// folder cannot be rechecked (one line naming the file).
fn recheck_run(folder: &Path) -> Result<(RunResults, RunResults), String> {
    let old = match RunResults::read(&folder.join("results.json")) {
        Ok(results) => results,
        Err(e) if e.is_missing() => return Err("no results.json (the run was killed or is still going)".into()),
        Err(e) => return Err(e.to_string()),
    };
    let inputs = run_store::read_inputs(folder).map_err(|e| format!("{e:#}"))?;
    let events = history(folder)?;
    let check = checker::check(&events, &run_verdict::check_options(&events, run_verdict::stuck_bound(&inputs.effective)));
    let refused_requests = run_verdict::refused(folder);
    let ending = RunEnding::as_recorded(&old, !refused_requests.is_empty());
    let effective = &inputs.effective;
    let claims = effective.claims.implied_by(effective.expect).check(&check);
    let verdict = ending.verdict(&check, effective.expect, &claims);
    let new = RunResults {
        expect: effective.expect,
        outcome: verdict.outcome,
        matches_expectation: verdict.matches_expectation,
        unknown_cause: verdict.unknown_cause,
        refused_requests,
        properties: check,
        claims,
        ..old.clone()
    };
    Ok((old, new))
}

/// The history the run was judged by: its history.jsonl, else (a run killed before writing
/// it) its parties' files merged, as its end would have merged them.
fn history(folder: &Path) -> Result<Vec<Event>, String> {
    let merged = folder.join("history.jsonl");
    if merged.symlink_metadata().is_ok() {
        // The error's text names the file and the cause.
        return checker::parse::read_history_file(&merged).map(|h| h.events).map_err(|e| e.to_string());
    }
    run_store::read_party_files(folder).map(|(events, _)| events).map_err(|e| format!("{e:#}"))
}

/// The run as a change, when its outcome, its match or any property's verdict changed.
fn compare(folder: PathBuf, old: &RunResults, new: &RunResults) -> Option<ChangedRun> {
    let (before, now) = (old.properties.verdicts(), new.properties.verdicts());
    let verdict_in = |verdicts: &[(&'static str, Verdict)], name: &str| verdicts.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    // In the checker's order of today, then any property it no longer judges.
    let mut names: Vec<&'static str> = now.iter().map(|(n, _)| *n).collect();
    names.extend(before.iter().map(|(n, _)| *n).filter(|n| verdict_in(&now, n).is_none()));
    let properties: Vec<PropertyChange> = names
        .into_iter()
        .map(|property| PropertyChange { property, old: verdict_in(&before, property), new: verdict_in(&now, property) })
        .filter(|p| p.old != p.new)
        .collect();
    let outcome = Change { old: old.outcome, new: new.outcome };
    let matches_expectation = Change { old: old.matches_expectation, new: new.matches_expectation };
    if !outcome.changed() && !matches_expectation.changed() && properties.is_empty() {
        return None;
    }
    Some(ChangedRun {
        folder,
        scenario: old.scenario.clone(),
        outcome,
        unknown_cause: Change { old: old.unknown_cause(), new: new.unknown_cause() },
        matches_expectation,
        properties,
    })
}
