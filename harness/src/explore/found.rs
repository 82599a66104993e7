//! `found-N.toml`: a finding as a normal scenario. `lockchaos scenario found-N.toml` runs it
//! and exits 0 exactly when the failure shows again: a safety finding expects `violation`, a
//! liveness finding `stuck`.
//! Its comments say where it came from, how often it reproduced and what happened.

use super::candidate::Candidate;
use super::space::Space;
use crate::paths::{absolute, relative};
use crate::scenario::{Expectation, LoadedScenario};
use results::explore::{FailureKind, Finding, Strategy};
use std::path::Path;

pub fn write(
    path: &Path,
    space: &Space,
    base: &LoadedScenario,
    minimal: &Candidate,
    finding: &Finding,
    seed: u64,
    strategy: Strategy,
) -> anyhow::Result<()> {
    let mut s = minimal.to_scenario(space, base);
    s.description = one_line(&format!(
        "found by lockchaos explore from {} ({strategy}, seed {seed}): {} — {}",
        base.name,
        finding.property,
        finding.schedule.join("; ")
    ));
    match finding.kind {
        FailureKind::Safety => s.expect = Expectation::Violation,
        FailureKind::Liveness => s.expect = Expectation::Stuck,
    }
    if s.client.command.is_some() {
        // The program lives in the base's project; this file does not.
        let folder = path.parent().unwrap_or(Path::new("."));
        s.client.project = Some(relative(&absolute(folder), &base.project_root()));
    }
    let mut text = String::new();
    text.push_str(&format!("# Found by `lockchaos explore {}` ({strategy} strategy, seed {seed}).\n", base.path.display()));
    text.push_str(&format!(
        "# {} failure: {}. Found in search run {} after {:.0} s; reproduced in {} confirmation runs.\n",
        finding.kind, finding.property, finding.runs_to_find, finding.seconds_to_find, finding.reproduced
    ));
    text.push_str(&format!("# Found with: {}\n", finding.found_with.join("; ")));
    text.push_str("# What happened:\n");
    for line in &finding.story {
        text.push_str(&format!("#   {}\n", one_line(line)));
    }
    text.push('\n');
    text.push_str(&as_edited_base(base, &s).unwrap_or(toml::to_string(&s)?));
    // The whole file must read back as the scenario it says (comments included: TOML takes no
    // control character in them, and the story quotes clients' own error texts).
    let again = crate::scenario::parse(&text, path)
        .map_err(|e| anyhow::anyhow!("{}: the found scenario does not read back: {e}", path.display()))?;
    anyhow::ensure!(
        serde_json::to_value(&again)? == serde_json::to_value(&s)?,
        "{}: the found scenario does not read back as the one found",
        path.display()
    );
    std::fs::write(path, text)?;
    Ok(())
}

/// The found scenario written as the base's own file with what differs set in it (its
/// comments and shape kept), when that reads back as the same scenario; else None.
fn as_edited_base(base: &LoadedScenario, s: &crate::scenario::Scenario) -> Option<String> {
    use toml_edit::{value, DocumentMut};
    let mut doc: DocumentMut = base.text.parse().ok()?;
    doc["description"] = value(&s.description);
    doc["expect"] = value(s.expect.name());
    doc["clients"] = value(s.clients as i64);
    doc["time_limit_secs"] = value(s.time_limit_secs as i64);
    for gone in ["seed", "nemesis", "claims"] {
        doc.remove(gone);
    }
    if s.workload.work_ms != base.scenario.workload.work_ms {
        let work = doc.entry("workload").or_insert(toml_edit::table());
        work["work_ms"] = value(s.workload.work_ms.max as i64);
    }
    if let Some(project) = &s.client.project {
        doc["client"]["project"] = value(project.display().to_string());
    }
    let mut text = doc.to_string();
    // What the edit cannot write in place: the claims and the episodes, as TOML of their own.
    #[derive(serde::Serialize)]
    struct Tail<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        claims: Option<&'a results::Claims>,
        #[serde(skip_serializing_if = "Option::is_none")]
        nemesis: Option<&'a crate::scenario::Nemesis>,
    }
    let claims = (s.claims != results::Claims::default()).then_some(&s.claims);
    let nemesis = (!s.nemesis.episode.is_empty()).then_some(&s.nemesis);
    let tail = toml::to_string(&Tail { claims, nemesis }).ok()?;
    if !text.ends_with("\n\n") {
        text.push('\n');
    }
    text.push_str(&tail);
    let again = crate::scenario::parse(&text, &base.path).ok()?;
    (serde_json::to_value(&again).ok()? == serde_json::to_value(s).ok()?).then_some(text)
}

/// One comment line's worth: no line break or other control character (TOML refuses them).
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}
