//! explore.html: one explore campaign (or several merged) on one page. What was searched, and
//! for each distinct failure found: the minimal schedule that still shows it, how often it
//! reproduced, what happened in the lock's words, and the runs (linked). Then the behaviours
//! the lock showed under each fault, and when the search first saw each.
//!
//! Every word from outside (scenario names, the lock's story, paths) goes through maud, which
//! escapes it; links are [`Href`]s, relative and percent-encoded, and a path that cannot be one
//! (absolute: outside the store) is shown without a link.

use crate::href::Href;
use maud::{html, Markup, Render};
use results::explore::{ExploreResults, Finding};
use std::path::Path;

/// The page of `campaigns` (one, or several merged). Each finding comes with the path from the
/// page to its campaign's folder (empty, or ending in `/`): its scenario is there, and its runs
/// two folders up (a campaign's folder is `STORE/explore/<start>/`).
pub fn render_many(campaigns: &[ExploreResults], found: &[(String, Finding)], title: &str) -> String {
    let body = html! {
        table {
            thead { tr {
                th { "scenario" } th { "backend" } th { "strategy" } th { "seed" } th { "shard" }
                th { "search runs" } th { "faults tried" } th { "shrink runs" } th { "confirm runs" } th { "not counted" }
                th { "time" } th { "stopped" }
            } }
            tbody {
                @for c in campaigns {
                    tr {
                        td { (c.scenario) } td { (c.backend) } td { (c.strategy) } td { (c.seed) }
                        td { (c.shard.as_deref().unwrap_or("–")) }
                        td { (c.runs) } td { (c.faults_tried) } td { (c.shrink_runs) } td { (c.confirm_runs) } td { (c.unknown_runs) }
                        td { (format!("{:.0} s", c.elapsed_s)) } td { (c.stopped) }
                    }
                }
            }
        }
        h2 { "Found" }
        @for c in campaigns {
            @if let Some(e) = &c.error { p class="flaky" { "Stopped by an error: " (e) } }
        }
        @if found.is_empty() {
            @let runs: u64 = campaigns.iter().map(|c| c.runs).sum();
            @let unknown: u64 = campaigns.iter().map(|c| c.unknown_runs).sum();
            p { "Nothing in " (runs - unknown) " search runs that counted (" (unknown) " did not count: an error, an interruption, a fault that did not take effect): no schedule tried broke the lock's safety or left it stuck." }
        }
        @for (folder, f) in found {
            (finding(folder, f))
        }
        h2 { "What the lock did under each fault" }
        p { "Behaviours as the search tells them apart (what the lock's clients and resource saw around an episode), and the search run that first showed each." }
        table {
            thead { tr { th { "fault" } th { "behaviour" } th { "first in search run" } } }
            tbody {
                @for c in campaigns {
                    @for b in &c.behaviours {
                        tr { td { (b.fault) } td { (b.pattern) } td { (b.run) } }
                    }
                }
            }
        }
    };
    crate::page::page(title, CSS, body)
}

/// explore.html of one campaign, in its own folder (found files beside it).
pub fn render(results: &ExploreResults) -> String {
    let found: Vec<(String, Finding)> = results.found.iter().map(|f| (String::new(), f.clone())).collect();
    render_many(std::slice::from_ref(results), &found, &format!("lockchaos explore: {}", results.scenario))
}

/// `text` linking to `path` (relative to the page), or only `text` when `path` cannot be a link.
fn link_or_text(path: &Path, text: impl Render) -> Markup {
    match Href::to_path(path) {
        Some(href) => html! { a href=(href) { (text) } },
        None => html! { (text) " (" (path.display().to_string()) ")" },
    }
}

fn finding(folder: &str, f: &Finding) -> Markup {
    // A run's folder is relative to the store (absolute when it was outside: no link).
    let report = |run: &str| {
        if Path::new(run).is_absolute() {
            Path::new(run).join("report.html")
        } else {
            Path::new(folder).join("../..").join(run).join("report.html")
        }
    };
    html! {
        section class="finding" {
            h3 {
                (f.kind) ": " (f.property) " — "
                (link_or_text(&Path::new(folder).join(&f.scenario), &f.scenario))
            }
            p {
                "Found in search run " (f.runs_to_find) " after " (format!("{:.0} s", f.seconds_to_find))
                "; reproduced in " strong { (f.reproduced) } " confirmation runs"
                @if flaky(&f.reproduced) { strong class="flaky" { " (flaky: the schedule does not always reach the failure)" } }
                "; "
                (f.shrink_steps) " shrinking steps kept (" (f.shrink_runs) " runs)."
            }
            h4 { "The smallest schedule that still shows it" }
            ol { @for line in &f.schedule { li { code { (line) } } } }
            h4 { "What happened" }
            ul class="story" { @for line in &f.story { li { (line) } } }
            p class="runs" {
                "Runs: "
                (link_or_text(&report(&f.found_in), "found"))
                @if let Some(run) = &f.shrunk_run { ", " (link_or_text(&report(run), "shrunk")) }
                @for (i, run) in f.confirm_runs.iter().enumerate() { ", " (link_or_text(&report(run), format!("confirm {}", i + 1))) }
            }
            details {
                summary { "Found with" }
                ol { @for line in &f.found_with { li { code { (line) } } } }
            }
        }
    }
}

/// Reproduced in fewer than 9 of 10 confirmation runs.
fn flaky(reproduced: &str) -> bool {
    let parsed = reproduced.split_once('/').and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    parsed.is_some_and(|(k, n)| n > 0 && k * 10 < n * 9)
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:70em}\
table{border-collapse:collapse;margin-top:1em}th,td{border:1px solid #ccc;padding:.3em .6em;font-size:.9em}\
thead th{background:#f4f4f4}section.finding{border-left:4px solid #b00;padding:.2em 1em;margin:1.5em 0}\
ul.story li{margin:.2em 0}code{background:#f6f6f6;padding:0 .2em}.flaky{color:#b00}";

#[cfg(test)]
mod tests {
    use super::*;
    use results::explore::{Behaviour, FailureKind, Property, Strategy};

    #[test]
    fn words_from_outside_are_escaped_and_runs_link_into_the_store() {
        let f = Finding {
            kind: FailureKind::Liveness,
            property: Property::Stuck,
            scenario: "found-1.toml".into(),
            runs_to_find: 3,
            seconds_to_find: 40.0,
            reproduced: "10/10".into(),
            schedule: vec!["partition holder from n1 for 3000 ms, when in-section".into()],
            story: vec!["<script>alert(1)</script>".into()],
            found_in: "x-explore/20261206T000000Z".into(),
            shrunk_run: None,
            confirm_runs: vec!["x-found-1/20261206T000100Z".into()],
            found_with: vec![],
            shrink_steps: 2,
            shrink_runs: 6,
        };
        let results = ExploreResults {
            scenario: "<b>x</b>".into(),
            scenario_file: "x.toml".into(),
            backend: "redis-single".into(),
            seed: 7,
            strategy: Strategy::Guided,
            shard: None,
            started_at: "t".into(),
            runs: 3,
            faults_tried: 12,
            shrink_runs: 6,
            confirm_runs: 10,
            unknown_runs: 0,
            elapsed_s: 100.0,
            stopped: "budget spent".into(),
            interrupted: false,
            error: None,
            found: vec![f],
            behaviours: vec![Behaviour { fault: "partition".into(), pattern: "release-unknown".into(), run: 2 }],
        };
        let page = render(&results);
        assert!(!page.contains("<script>alert") && page.contains("&lt;script&gt;"), "{page}");
        assert!(!page.contains("<b>x</b>"));
        assert!(page.contains("href=\"../../x-explore/20261206T000000Z/report.html\""));
        assert!(page.contains("href=\"found-1.toml\"") && page.contains("10/10"));
    }
}
