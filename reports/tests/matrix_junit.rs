//! The matrix, JUnit XML and the store's index over run results built from small real checks.

mod common;

use common::run;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus};
use reports::run_index::{self, IndexEntry};
use reports::{junit::junit_xml, matrix, Matrix, MatrixRun};
use results::{Expectation, Outcome};
use std::time::Duration;

fn href(path: &str) -> reports::href::Href {
    reports::href::Href::to_path(std::path::Path::new(path)).unwrap()
}

#[test]
fn cells_aggregate_runs_by_backend_and_failure_and_say_whether_they_match() {
    let results = [
        run("etcd-baseline", Expectation::Safe, false),
        run("etcd-baseline", Expectation::Safe, false),
        run("redis-pause", Expectation::Violation, true),
        run("redis-pause", Expectation::Violation, false),
    ];
    let cells = [("etcd", "baseline"), ("etcd", "baseline"), ("redis", "pause"), ("redis", "pause")];
    let runs: Vec<MatrixRun> = results
        .iter()
        .zip(cells)
        .map(|(r, (row, column))| MatrixRun {
            results: r,
            row: row.into(),
            column: column.into(),
            report: href(&format!("{}/report.html", r.run_id)),
            place: None,
        })
        .collect();
    let m = Matrix::from_runs(&runs);
    assert_eq!(m.rows, ["etcd", "redis"]);
    assert_eq!(m.columns, ["baseline", "pause"]);
    let etcd = m.cell("etcd", "baseline").unwrap();
    assert_eq!((etcd.tally.runs, etcd.tally.runs_with_violation, etcd.matches_expectation), (2, 0, true));
    assert_eq!((etcd.tally.lost_updates, etcd.tally.acknowledged_updates), (0, 6));
    assert_eq!(etcd.acquire_success_rate, Some(1.0));
    // p50 per run is 20 ms (acquires take 10, 20, 30 ms): the median of the runs' p50s.
    assert_eq!((etcd.acquire_p50_ms, etcd.acquire_p99_ms), (Some(20.0), Some(30.0)));
    let redis = m.cell("redis", "pause").unwrap();
    assert_eq!((redis.tally.runs, redis.tally.runs_with_violation, redis.tally.runs_matched, redis.matches_expectation), (2, 1, 1, false));
    assert_eq!(redis.tally.lost_updates, 2);
    assert!(!m.all_match);

    let html = matrix::render_html(&m, "lockchaos matrix");
    assert!(html.contains("<table id=\"matrix\">") && html.contains("class=\"mismatch\""), "{html}");
    assert!(html.contains("<a href=\"redis-pause-run/report.html\">1</a>"), "{html}");
    assert!(!html.contains("<script") && !html.contains("http"), "self-contained");
    let json = serde_json::to_string(&m).unwrap();
    assert_eq!(serde_json::from_str::<Matrix>(&json).unwrap(), m);
}

/// Issue 23: a cell with a run cut short by Ctrl-C or SIGTERM said "DOES NOT MATCH".
#[test]
fn a_cell_whose_unmatched_runs_were_interrupted_is_interrupted_and_no_runs_is_no_verdict() {
    use reports::decision_table::{DecisionTable, LockSystem, TableColumn, TablePlace};
    use reports::matrix::Verdict;
    let matched = run("redis-pause", Expectation::Violation, true);
    let mut cut = run("redis-pause", Expectation::Violation, false);
    (cut.outcome, cut.matches_expectation, cut.interrupted) = (Outcome::Unknown, false, true);
    let missed = run("redis-pause", Expectation::Violation, false);
    fn runs_of<'a>(results: Vec<&'a results::RunResults>) -> Vec<MatrixRun<'a>> {
        let place = Some(TablePlace { system: LockSystem::SingleRedis, column: TableColumn::Timing });
        results
            .into_iter()
            .map(|r| MatrixRun { results: r, row: "redis".into(), column: "pause".into(), report: href("r/report.html"), place })
            .collect()
    }

    let m = Matrix::from_runs(&runs_of(vec![&matched, &cut]));
    let cell = m.cell("redis", "pause").unwrap();
    assert_eq!((cell.tally.runs, cell.tally.runs_matched, cell.tally.runs_interrupted), (2, 1, 1));
    assert_eq!((cell.tally.verdict(), m.verdict()), (Verdict::Interrupted, Verdict::Interrupted));
    let html = matrix::render_html(&m, "m");
    assert!(html.contains("<td class=\"interrupted\"") && html.contains("Some runs were interrupted"), "{html}");
    assert!(!html.contains("class=\"mismatch\"") && !html.contains("did not match"), "{html}");
    let table = DecisionTable::from_runs(&runs_of(vec![&matched, &cut]));
    assert_eq!(table.cell(LockSystem::SingleRedis, TableColumn::Timing).agrees, None, "neither agrees nor disagrees");

    // A run that did not match outweighs the interrupted one.
    let m = Matrix::from_runs(&runs_of(vec![&matched, &cut, &missed]));
    assert_eq!(m.verdict(), Verdict::DidNotMatch);
    let table = DecisionTable::from_runs(&runs_of(vec![&matched, &cut, &missed]));
    assert_eq!(table.cell(LockSystem::SingleRedis, TableColumn::Timing).agrees, Some(false));

    let empty = Matrix::from_runs(&[]);
    assert_eq!(empty.verdict(), Verdict::NoRuns);
    let html = matrix::render_html(&empty, "m");
    assert!(html.contains("nothing was measured") && !html.contains("did not match"), "{html}");
}

#[test]
fn junit_has_a_case_per_run_a_failure_per_mismatch_and_escapes_names() {
    let mut odd = run("a<b>&\"c\"", Expectation::Safe, false);
    odd.outcome = Outcome::Unknown;
    odd.matches_expectation = false;
    let runs = [run("etcd-baseline", Expectation::Safe, false), run("redis-pause", Expectation::Violation, false), odd];
    let xml = junit_xml("lockchaos", &runs);
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"), "{xml}");
    // The hostile scenario name is escaped in the text, never markup.
    assert!(xml.contains("classname=\"a&lt;b&gt;&amp;&quot;c&quot;\"") && !xml.contains("a<b>"), "{xml}");
    assert_eq!(xml.matches("<testsuite ").count(), 1, "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 3, "{xml}");

    // The structure, read back by a JUnit parser rather than compared byte for byte.
    let report = Report::deserialize_from_str(&xml).unwrap();
    let [suite] = &report.test_suites[..] else { panic!("one testsuite: {xml}") };
    assert_eq!((suite.name.as_str(), suite.tests, suite.failures, suite.errors), ("lockchaos", 3, 1, 1), "{xml}");
    assert_eq!(suite.time, Some(Duration::from_millis(7500)), "{xml}");
    let case = |classname: &str| {
        let found = suite.test_cases.iter().filter(|c| c.classname.as_ref().map(|n| n.as_str()) == Some(classname)).collect::<Vec<_>>();
        let [c] = found[..] else { panic!("one case of {classname}: {xml}") };
        assert_eq!(c.time, Some(Duration::from_millis(2500)), "{xml}");
        c
    };
    let message = |c: &TestCase, want: NonSuccessKind| match &c.status {
        TestCaseStatus::NonSuccess { kind, message, .. } if *kind == want => message.as_ref().map(|m| m.as_str().to_string()),
        other => panic!("{} is {other:?}, not {want:?}", c.name.as_str()),
    };
    let etcd = case("etcd-baseline");
    assert_eq!(etcd.name.as_str(), "etcd-baseline-run (seed 7)");
    assert!(matches!(etcd.status, TestCaseStatus::Success { .. }), "{xml}");
    let redis = case("redis-pause");
    assert_eq!(redis.name.as_str(), "redis-pause-run (seed 7)");
    let failure = message(redis, NonSuccessKind::Failure).unwrap();
    assert!(failure.starts_with("expected violation, outcome safe: lost updates 0"), "{failure}");
    let odd = case("a<b>&\"c\"");
    assert_eq!(odd.name.as_str(), "a<b>&\"c\"-run (seed 7)");
    let error = message(odd, NonSuccessKind::Error).unwrap();
    assert!(error.starts_with("expected safe, outcome unknown: lost updates 0"), "{error}");
}

#[test]
fn the_index_lists_runs_newest_first_with_their_verdicts_and_links() {
    let mut old = run("redis-pause", Expectation::Violation, false);
    old.started_at = "2026-01-01T00:00:00Z".into();
    let mut new = run("etcd-baseline", Expectation::Safe, false);
    new.started_at = "2026-01-02T00:00:00Z".into();
    let mut entries = [
        IndexEntry { results: old, report: href("redis-pause/1/report.html") },
        IndexEntry { results: new, report: href("etcd-baseline/2/report.html") },
    ];
    let html = run_index::render(&mut entries);
    let (first, second) = (html.find("etcd-baseline/2/report.html").unwrap(), html.find("redis-pause/1/report.html").unwrap());
    assert!(first < second, "newest first: {html}");
    assert!(html.contains("2 run(s), 1 matched their expectation"), "{html}");
    assert!(html.contains("<tr class=\"mismatch\"><td>2026-01-01T00:00:00Z</td>"), "{html}");
}

#[test]
fn the_index_and_the_matrix_escape_names_from_runs_in_text_and_attributes() {
    let mut odd = run("a<b>&\"c\" <script>x</script>", Expectation::Safe, false);
    odd.backend = "<i>b</i>".into();
    let mut entries = [IndexEntry { results: odd.clone(), report: href("x\"><script>/report.html") }];
    let index = run_index::render(&mut entries);
    assert!(!index.contains("<script") && !index.contains("<i>"), "{index}");
    assert!(index.contains("<a href=\"x%22%3E%3Cscript%3E/report.html\">a&lt;b&gt;&amp;&quot;c&quot; &lt;script&gt;"), "{index}");
    assert!(index.contains("<td>&lt;i&gt;b&lt;/i&gt;</td>"), "{index}");

    let runs = [MatrixRun { results: &odd, row: "<r>".into(), column: "\"c\"".into(), report: href("b\"<x>/report.html"), place: None }];
    let html = matrix::render_html(&Matrix::from_runs(&runs), "t <&>");
    assert!(!html.contains("<script") && !html.contains("<r>") && !html.contains("<x>"), "{html}");
    // The cell's tooltip names the scenarios: the quote must not end the attribute.
    assert!(html.contains("title=\"a&lt;b&gt;&amp;&quot;c&quot; &lt;script&gt;x&lt;/script&gt;\""), "{html}");
    assert!(
        html.contains("<title>t &lt;&amp;&gt;</title>") && html.contains("<th>&lt;r&gt;</th>") && html.contains("<th>&quot;c&quot;</th>"),
        "{html}"
    );
    assert!(html.contains("<a href=\"b%22%3Cx%3E/report.html\">1</a>"), "{html}");
}
