//! report.html from histories built here: a realistic lost update under a pause, an empty run,
//! hostile strings, and a large history that must stay a small page.

use checker::{check, CheckOptions, Event, EventType, Process};
use reports::run_report;
use results::{Expectation, Outcome, RunResults, WorkerFate, WorkerStatus};

const MS: u64 = 1_000_000;

/// Builds a history in order, numbering events as the merge does.
#[derive(Default)]
struct History(Vec<Event>);

impl History {
    fn push(&mut self, ms: u64, process: Process, kind: EventType, f: &str) -> &mut Event {
        let mut e = Event::new(ms * MS, process, kind, f);
        e.index = self.0.len() as u64;
        e.key = Some("ledger".into());
        self.0.push(e);
        self.0.last_mut().unwrap()
    }
    fn client(&mut self, ms: u64, c: u64, kind: EventType, f: &str) -> &mut Event {
        self.push(ms, Process::Client(c), kind, f)
    }
    fn resource(&mut self, ms: u64, c: u64, accepted: bool, f: &str, value: i64) {
        let kind = if accepted { EventType::Ok } else { EventType::Fail };
        let e = self.push(ms, Process::Named("resource".into()), kind, f);
        e.client = Some(c);
        e.value = value.into();
    }
    fn fault(&mut self, ms: u64, f: &str, node: &str, phase: &str) {
        let e = self.push(ms, Process::Named("nemesis".into()), EventType::Info, f);
        e.key = None;
        e.node = Some(node.into());
        e.value = phase.into();
    }
    /// One client's full critical section: acquire, read, write read+1, release.
    fn section(&mut self, ms: u64, c: u64, token: u64, read: i64) {
        self.client(ms, c, EventType::Invoke, "acquire");
        let ok = self.client(ms + 5, c, EventType::Ok, "acquire");
        ok.token = Some(token);
        ok.validity_ms = Some(1000);
        self.client(ms + 10, c, EventType::Invoke, "read");
        self.resource(ms + 11, c, true, "read", read);
        self.client(ms + 12, c, EventType::Ok, "read").value = read.into();
        self.client(ms + 20, c, EventType::Invoke, "write").value = (read + 1).into();
        self.resource(ms + 21, c, true, "write", read + 1);
        self.client(ms + 22, c, EventType::Ok, "write");
        self.client(ms + 30, c, EventType::Invoke, "release");
        self.client(ms + 31, c, EventType::Ok, "release");
    }
}

/// Client 1 reads, is paused past its lease, client 2 completes a section, client 1 wakes
/// and writes its stale value: one lost update.
fn lost_update_under_pause() -> Vec<Event> {
    let mut h = History::default();
    h.client(0, 1, EventType::Invoke, "acquire");
    h.client(5, 1, EventType::Ok, "acquire").token = Some(1);
    h.client(10, 1, EventType::Invoke, "read");
    h.resource(11, 1, true, "read", 0);
    h.client(12, 1, EventType::Ok, "read").value = 0.into();
    h.fault(20, "pause", "client-1", "start");
    h.section(1100, 2, 2, 0);
    h.fault(2000, "pause", "client-1", "stop");
    h.client(2010, 1, EventType::Invoke, "write").value = 1.into();
    h.resource(2011, 1, true, "write", 1);
    h.client(2012, 1, EventType::Ok, "write");
    h.client(2020, 1, EventType::Invoke, "release");
    h.client(2025, 1, EventType::Fail, "release").error = Some("lease expired".into());
    h.0
}

fn results_for(history: &[Event], expect: Expectation) -> RunResults {
    let properties = check(history, &CheckOptions::default());
    let outcome = Outcome::of_verdict(properties.outcome);
    RunResults {
        scenario: "redis-single-pause".into(),
        description: "single Redis, holder paused past its TTL".into(),
        matches_expectation: expect.is_met_by(outcome),
        expect,
        outcome,
        run_id: "20250101-120000-redis-single-pause".into(),
        backend: "redis-single".into(),
        seed: 42,
        clients: 2,
        time_limit_secs: 10,
        started_at: "2025-01-01T12:00:00+00:00".into(),
        duration_secs: 2.5,
        interrupted: false,
        workers: (1..=2)
            .map(|p| WorkerStatus {
                name: format!("client-{p}"),
                process: p,
                status: WorkerFate::Finished,
                exit_code: Some(0),
                died_at_ms: None,
            })
            .collect(),
        warnings: vec![],
        not_applied: vec![],
        refused_requests: Default::default(),
        unknown_cause: None,
        properties,
        claims: vec![],
    }
}

fn assert_self_contained(page: &str) {
    assert!(!page.contains("http://") && !page.contains("https://"), "external reference");
    assert!(!page.contains("<script"), "scripts");
    assert!(!page.contains(" src="), "external asset");
}

#[test]
fn lost_update_report_shows_verdict_violation_lanes_and_fault() {
    let history = lost_update_under_pause();
    let results = results_for(&history, Expectation::Violation);
    assert_eq!(results.outcome, Outcome::Violation);
    let page = run_report::render(&results, &history);

    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("<div class=\"verdict good\"><div class=\"outcome\">violation</div>"));
    assert!(page.contains("as expected"));
    // The violation, in words, with the stale write's event and time.
    assert!(page.contains("<li class=\"violation\">"));
    assert!(page.contains("Client 1 read key “ledger”"));
    assert!(page.contains("a lost update"));
    assert!(page.contains("<td>2.011</td>"), "time of the stale write in seconds");
    assert!(page.contains("lost updates: 1"));
    // One lane per client, the overlapping holds in red, the pause band with its label.
    assert_eq!(page.matches("<g class=\"lane\"").count(), 2);
    assert!(page.contains("data-client=\"1\"") && page.contains("data-client=\"2\""));
    assert_eq!(page.matches("<rect class=\"hold overlap\"").count(), 2);
    assert!(page.contains(">pause client-1</text>"));
    // Writes at the resource as ticks; run files linked relatively.
    assert!(page.contains("class=\"w-ok\""));
    for f in ["history.jsonl", "results.json", "scenario.toml", "logs/"] {
        assert!(page.contains(&format!("href=\"{f}\"")));
    }
    // What the pause cost in time, and the claims beside their measurements.
    assert!(page.contains("<section id=\"availability\">"));
    assert!(page.contains("longest time without a grant: "));
    assert_self_contained(&page);
}

#[test]
fn availability_shows_a_killed_holder_and_the_claims_that_do_not_hold() {
    let mut history = lost_update_under_pause();
    history.push({
        let mut e = Event::new(1_000_000, Process::Named(Process::NEMESIS.into()), EventType::Info, "kill");
        e.node = Some("client-2".into());
        e.value = "start".into();
        e
    });
    let mut results = results_for(&history, Expectation::Violation);
    let claims: results::Claims = serde_json::from_str(r#"{"freed_after_ms": [100, 200], "unavailable_at_end": false}"#).unwrap();
    results.claims = claims.check(&results.properties);
    results.matches_expectation = RunResults::matches(results.expect, results.outcome, &results.claims);
    assert!(!results.matches_expectation, "{:?}", results.claims);
    let page = run_report::render(&results, &history);
    assert!(page.contains("<td>client-2</td><td>0.001</td>"), "the kill, when");
    assert!(page.contains("freed_after_ms in 100..200 ms"));
    assert!(page.contains("<td class=\"bad\">does NOT hold</td>"));
    assert!(page.contains("<td class=\"good\">holds</td>"), "available at the end, as claimed");
    assert!(page.contains("NOT as expected"));
}

#[test]
fn mismatch_is_red_and_clean_run_has_no_red_bars() {
    let mut h = History::default();
    h.section(0, 1, 1, 0);
    h.section(100, 2, 2, 1);
    let results = results_for(&h.0, Expectation::Violation);
    assert_eq!(results.outcome, Outcome::Safe);
    let page = run_report::render(&results, &h.0);
    assert!(page.contains("<div class=\"verdict bad\"><div class=\"outcome\">safe</div>"));
    assert!(page.contains("NOT as expected"));
    assert!(page.contains("No violation of resource safety."));
    assert_eq!(page.matches("<rect class=\"hold\"").count(), 2);
    assert!(!page.contains("hold overlap\" x="));
}

#[test]
fn empty_history_renders_grey_unknown() {
    let results = results_for(&[], Expectation::Safe);
    assert_eq!(results.outcome, Outcome::Unknown);
    let page = run_report::render(&results, &[]);
    assert!(page.contains("<div class=\"verdict unknown\">"));
    assert!(page.contains("No events were recorded"));
    assert!(page.ends_with("</html>\n"));
    assert_self_contained(&page);
}

#[test]
fn an_unknown_run_says_why_under_its_verdict_and_a_decided_one_does_not() {
    let mut results = results_for(&[], Expectation::Safe);
    results.interrupted = true;
    results.unknown_cause = Some(results::UnknownCause::Infrastructure);
    let page = run_report::render(&results, &[]);
    assert!(page.contains("<div class=\"outcome\">unknown</div><div class=\"cause\">infrastructure</div>"), "the cause as recorded");
    results.unknown_cause = None;
    let page = run_report::render(&results, &[]);
    assert!(page.contains("<div class=\"cause\">interrupted</div>"), "an older results.json: the cause inferred");
    let history = lost_update_under_pause();
    let page = run_report::render(&results_for(&history, Expectation::Violation), &history);
    assert!(!page.contains("class=\"cause\""));
}

#[test]
fn untrusted_strings_are_escaped() {
    let mut history = lost_update_under_pause();
    // The stale write's resource record carries a hostile error; it is shown as evidence.
    let stale = history.iter_mut().find(|e| e.time == 2011 * MS).unwrap();
    stale.error = Some("<script>alert(1)</script>".into());
    history.push({
        let mut e = Event::new(2100 * MS, Process::Named("nemesis".into()), EventType::Info, "<img onerror=x>");
        e.node = Some("\"><script>".into());
        e.value = "start".into();
        e
    });
    let mut results = results_for(&history, Expectation::Violation);
    results.scenario = "<b>bold</b>".into();
    results.description = "a & b <script>alert(2)</script>".into();
    results.warnings = vec!["worker said <script>alert(3)</script>".into()];
    let page = run_report::render(&results, &history);

    assert!(!page.contains("<script"));
    assert!(!page.contains("<b>bold"));
    assert!(!page.contains("<i>died"));
    assert!(!page.contains("<img"));
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.contains("a &amp; b &lt;script&gt;alert(2)"));
    assert!(page.contains("worker said &lt;script&gt;alert(3)"));
    assert!(page.contains("&lt;img onerror=x&gt; &quot;&gt;&lt;script&gt; (not healed)"));
}

#[test]
fn large_history_stays_a_small_page() {
    // 10 clients, 100k+ events, every fifth section overlapping another client's.
    let mut h = History::default();
    for i in 0..10_000u64 {
        let c = i % 10 + 1;
        h.section(i * 40, c, i + 1, i as i64);
        if i % 5 == 0 {
            let e = h.client(i * 40 + 30, c, EventType::Ok, "acquire");
            e.token = Some(i + 1);
        }
        if i % 500 == 0 {
            h.fault(i * 40, "pause", &format!("client-{c}"), "start");
            h.fault(i * 40 + 300, "pause", &format!("client-{c}"), "stop");
        }
    }
    assert!(h.0.len() > 100_000);
    let results = results_for(&h.0, Expectation::Safe);
    let start = std::time::Instant::now();
    let page = run_report::render(&results, &h.0);
    assert!(start.elapsed().as_secs() < 10);
    assert!(page.len() < 3_000_000, "page is {} bytes", page.len());
    assert_eq!(page.matches("<g class=\"lane\"").count(), 10);
    assert_self_contained(&page);
}
