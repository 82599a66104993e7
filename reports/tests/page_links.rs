//! Every page of the store, made from a run whose scenario, row, column and folder are hostile
//! (`"'<>&`, markup, `javascript:`), read back by an HTML5 parser as a browser reads it: every
//! link is a relative path of percent-encoded segments (no scheme, no host, no query), no
//! element or event handler came from the run, and the hostile words are there as text.

use checker::{check, CheckOptions, Event, EventType, Process};
use reports::decision_table::{LockSystem, TableColumn, TablePlace};
use reports::href::Href;
use reports::{DecisionTable, Matrix, MatrixRun};
use results::explore::{ExploreResults, FailureKind, Finding, Property, Strategy};
use results::{Expectation, Outcome, RunResults};
use scraper::{Html, Selector};
use std::path::Path;

/// Quotes of both kinds, markup that would run, and a scheme.
const HOSTILE: &str = "javascript:alert(1)//\"'<>&<img src=x onerror=alert(2)><script>alert(3)</script>";

fn link(path: &str) -> Href {
    Href::to_path(Path::new(path)).expect("a relative path")
}

/// A run folder named by the hostile words, as the store holds it: `<scenario>/<start>`.
fn folder() -> String {
    format!("{HOSTILE}/20260101T000000Z")
}

fn history() -> Vec<Event> {
    let mut h = vec![];
    let mut push = |ms: u64, kind: EventType, f: &str| {
        let mut e = Event::new(ms * 1_000_000, Process::Client(1), kind, f);
        e.index = h.len() as u64;
        e.key = Some("ledger".into());
        h.push(e);
    };
    push(0, EventType::Invoke, "acquire");
    push(5, EventType::Ok, "acquire");
    push(10, EventType::Invoke, "release");
    push(15, EventType::Ok, "release");
    h
}

fn results(history: &[Event]) -> RunResults {
    let properties = check(history, &CheckOptions::default());
    RunResults {
        scenario: HOSTILE.into(),
        description: HOSTILE.into(),
        expect: Expectation::Safe,
        outcome: Outcome::Safe,
        matches_expectation: true,
        run_id: HOSTILE.into(),
        backend: HOSTILE.into(),
        seed: 1,
        clients: 1,
        time_limit_secs: 1,
        started_at: "2026-01-01T00:00:00+00:00".into(),
        duration_secs: 1.0,
        interrupted: false,
        workers: vec![],
        warnings: vec![HOSTILE.into()],
        not_applied: vec![],
        refused_requests: Default::default(),
        unknown_cause: None,
        properties,
        claims: vec![],
    }
}

/// What a browser would see in `page`: each link must be relative and encoded, nothing active
/// may have come from the run, and the hostile words must be in the text. Returns the links.
fn read(name: &str, page: &str) -> Vec<String> {
    let doc = Html::parse_document(page);
    let all = Selector::parse("*").unwrap();
    let mut links = vec![];
    for element in doc.select(&all) {
        let e = element.value();
        assert!(!matches!(e.name(), "script" | "img" | "iframe" | "object" | "embed"), "{name}: a <{}> element", e.name());
        for (attribute, value) in e.attrs() {
            assert!(!attribute.starts_with("on"), "{name}: an event handler {attribute}={value:?}");
            if matches!(attribute, "href" | "src" | "xlink:href" | "action" | "formaction") {
                let encoded = value.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~%/".contains(&b));
                let segments_named = value.trim_end_matches('/').split('/').all(|s| !s.is_empty());
                assert!(encoded && segments_named, "{name}: {attribute}={value:?} is not a relative path of encoded segments");
                links.push(value.to_string());
            }
        }
    }
    let text: String = doc.root_element().text().collect();
    assert!(text.contains(HOSTILE), "{name}: the run's words are not on the page as text");
    links
}

/// The hostile folder's report, as a page one level up from the scenario folders links it.
fn reaches_report(name: &str, links: &[String], prefix: &str) {
    let want = format!("{prefix}javascript%3Aalert%281%29/%22%27%3C%3E%26%3Cimg%20src%3Dx%20onerror%3Dalert%282%29%3E%3Cscript%3Ealert%283%29%3C/script%3E/20260101T000000Z/report.html");
    assert!(links.contains(&want), "{name}: no link to the run's report in {links:?}");
}

#[test]
fn the_store_index_links_a_hostile_run_folder_as_an_encoded_relative_path() {
    let history = history();
    let mut entries =
        vec![reports::run_index::IndexEntry { results: results(&history), report: link(&format!("{}/report.html", folder())) }];
    let page = reports::run_index::render(&mut entries);
    reaches_report("index.html", &read("index.html", &page), "");
}

#[test]
fn the_matrix_and_the_table_link_a_hostile_run_folder_as_an_encoded_relative_path() {
    let history = history();
    let results = results(&history);
    let runs = vec![MatrixRun {
        results: &results,
        row: HOSTILE.into(),
        column: HOSTILE.into(),
        report: link(&format!("../other store/{}/report.html", folder())),
        place: Some(TablePlace { system: LockSystem::SingleRedis, column: TableColumn::Timing }),
    }];
    let matrix = reports::matrix::render_html(&Matrix::from_runs(&runs), HOSTILE);
    reaches_report("matrix.html", &read("matrix.html", &matrix), "../other%20store/");
    let table = reports::decision_table::render_html(&DecisionTable::from_runs(&runs), HOSTILE);
    reaches_report("table.html", &read("table.html", &table), "../other%20store/");
}

#[test]
fn a_report_and_a_sweep_of_a_hostile_run_have_no_live_link() {
    let history = history();
    let results = results(&history);
    let report = reports::run_report::render(&results, &history);
    let links = read("report.html", &report);
    assert!(links.contains(&"history.jsonl".to_string()) && links.contains(&"logs/".to_string()), "{links:?}");

    let point = reports::sweep::point(&results, &history, link(&format!("../../{}/report.html", folder())), None);
    let sweep = reports::sweep::Sweep {
        clients: vec![1],
        lines: vec![{
            let mut line = reports::sweep::SweepLine::new(HOSTILE.into(), HOSTILE.into(), None);
            line.push(point);
            line
        }],
    };
    let page = reports::sweep::render_html(&sweep, HOSTILE);
    reaches_report("sweep.html", &read("sweep.html", &page), "../../");
}

#[test]
fn an_explore_page_of_hostile_runs_links_them_encoded_or_not_at_all() {
    let finding = Finding {
        kind: FailureKind::Safety,
        property: Property::ResourceSafety,
        scenario: format!("{HOSTILE}.toml"),
        runs_to_find: 1,
        seconds_to_find: 1.0,
        reproduced: "1/1".into(),
        schedule: vec![HOSTILE.into()],
        story: vec![HOSTILE.into()],
        found_in: folder(),
        // A run outside the store (an absolute path) has no link, only its words.
        shrunk_run: Some(format!("/{}", folder())),
        confirm_runs: vec![folder()],
        found_with: vec![],
        shrink_steps: 0,
        shrink_runs: 0,
    };
    let campaign = ExploreResults {
        scenario: HOSTILE.into(),
        scenario_file: HOSTILE.into(),
        backend: HOSTILE.into(),
        seed: 1,
        strategy: Strategy::Guided,
        shard: None,
        started_at: "t".into(),
        runs: 1,
        faults_tried: 1,
        shrink_runs: 0,
        confirm_runs: 1,
        unknown_runs: 0,
        elapsed_s: 1.0,
        stopped: HOSTILE.into(),
        interrupted: false,
        error: None,
        found: vec![finding],
        behaviours: vec![],
    };
    let page = reports::explore::render(&campaign);
    let links = read("explore.html", &page);
    reaches_report("explore.html", &links, "../../");
    assert_eq!(links.iter().filter(|l| l.ends_with("report.html")).count(), 2, "found and confirm, not the absolute one: {links:?}");
}
