//! The history page's reading of made-up nights: a real shift is a change and chance is not,
//! against the nights before and against a baseline; unknown runs of every kind stay out of the
//! rates.

mod common;

use reports::change::Change;
use reports::history::{CellState, History, NightInput};
use reports::href::Href;
use reports::{Matrix, MatrixRun};
use results::{Expectation, Outcome, RunResults, UnknownCause};
use strum::IntoEnumIterator;

/// A cell's runs on one night: violations, safe runs, and unknown runs by cause.
struct Runs<'a> {
    row: &'a str,
    violations: u32,
    safe: u32,
    unknown: &'a [UnknownCause],
}

fn results_of(r: &Runs) -> Vec<RunResults> {
    let mut all = vec![];
    all.extend((0..r.violations).map(|_| common::run(r.row, Expectation::Violation, true)));
    all.extend((0..r.safe).map(|_| common::run(r.row, Expectation::Violation, false)));
    for &cause in r.unknown {
        let mut u = common::run(r.row, Expectation::Violation, false);
        u.outcome = Outcome::Unknown;
        u.matches_expectation = false;
        u.unknown_cause = Some(cause);
        all.push(u);
    }
    all
}

fn matrix(cells: &[Runs]) -> Matrix {
    let results: Vec<(String, Vec<RunResults>)> = cells.iter().map(|c| (c.row.to_string(), results_of(c))).collect();
    let runs: Vec<MatrixRun> = results
        .iter()
        .flat_map(|(row, rs)| {
            rs.iter().enumerate().map(move |(i, r)| MatrixRun {
                results: r,
                row: row.clone(),
                column: "pause".into(),
                report: Href::to_path(std::path::Path::new(&format!("{row}/{i}/report.html"))).unwrap(),
                place: None,
            })
        })
        .collect();
    Matrix::from_runs(&runs)
}

fn night(label: &str, cells: &[Runs]) -> NightInput {
    NightInput {
        label: label.into(),
        started_at: None,
        matrix_page: Href::to_path(std::path::Path::new(&format!("{label}/matrix.html"))),
        matrix: matrix(cells),
    }
}

fn runs(row: &str, violations: u32, safe: u32) -> Runs<'_> {
    Runs { row, violations, safe, unknown: &[] }
}

fn cell<'a>(h: &'a History, row: &str) -> &'a reports::history::CellHistory {
    h.cells.iter().find(|c| c.row == row).unwrap()
}

#[test]
fn a_real_shift_changes_its_cell_and_the_others_stay_steady() {
    let nights = [
        night("n1", &[runs("redis", 5, 0), runs("redlock", 0, 5), runs("etcd", 2, 3)]),
        night("n2", &[runs("redis", 5, 0), runs("redlock", 0, 5), runs("etcd", 3, 2)]),
        night("n3", &[runs("redis", 0, 5), runs("redlock", 0, 5), runs("etcd", 1, 4)]),
    ];
    let h = History::build(&nights, None);
    let redis = cell(&h, "redis");
    assert_eq!((redis.state, redis.changed_at.as_slice()), (CellState::Changed, &[2][..]), "{redis:?}");
    assert_eq!(redis.tonight.as_ref().unwrap().change, Change::Fell);
    // 2/5, 3/5 then 1/5: chance.
    for steady in ["redlock", "etcd"] {
        let c = cell(&h, steady);
        assert_eq!((c.state, c.changed_at.len()), (CellState::Steady, 0), "{c:?}");
    }
    let moved: Vec<&str> = h.moved_tonight().iter().map(|c| c.row.as_str()).collect();
    assert_eq!(moved, ["redis"]);
    // A change earlier than tonight is a change, not a move tonight.
    let later = [nights[0].clone(), nights[1].clone(), nights[2].clone(), night("n4", &[runs("redis", 0, 5)])];
    let h = History::build(&later, None);
    assert_eq!(cell(&h, "redis").state, CellState::Changed);
    assert!(h.moved_tonight().is_empty(), "{:?}", h.moved_tonight());
}

#[test]
fn against_a_baseline_a_real_shift_is_a_regression_and_chance_is_not() {
    let baseline = matrix(&[runs("redis", 0, 10), runs("etcd", 3, 7)]);
    let tonight = [night("tonight", &[runs("redis", 4, 0), runs("etcd", 5, 5)])];
    let h = History::build(&tonight, Some((vec!["base".into()], &baseline)));
    assert_eq!(cell(&h, "redis").tonight.as_ref().unwrap().change, Change::Rose);
    assert_eq!(cell(&h, "etcd").tonight.as_ref().unwrap().change, Change::Steady);
    assert_eq!(h.moved_tonight().len(), 1);
}

#[test]
fn unknown_runs_of_every_kind_stay_out_of_the_rates() {
    let every: Vec<UnknownCause> = UnknownCause::iter().collect();
    assert_eq!(every.len(), 5);
    let nights = [night("n1", &[runs("redis", 0, 10)]), night("n2", &[Runs { row: "redis", violations: 0, safe: 3, unknown: &every }])];
    let h = History::build(&nights, None);
    let redis = cell(&h, "redis");
    let n2 = redis.nights[1].as_ref().unwrap();
    assert_eq!((n2.rate.violations, n2.rate.runs), (0, 3));
    assert_eq!(n2.unknown.len(), 5);
    assert!(every.iter().all(|k| n2.unknown[k] == 1));
    assert_eq!(redis.state, CellState::Steady);
    assert_eq!(h.nights[1].runs, 8);
    // A night of broken runners only: nothing measured, nothing moved.
    let broken = [night("n1", &[runs("redis", 0, 10)]), night("n2", &[Runs { row: "redis", violations: 0, safe: 0, unknown: &every }])];
    let h = History::build(&broken, None);
    assert_eq!(cell(&h, "redis").tonight.as_ref().unwrap().change, Change::Unmeasured);
    assert!(h.moved_tonight().is_empty());
}

#[test]
fn the_page_marks_each_cell_by_its_state_and_escapes_names() {
    let nights = [
        night("n1", &[runs("<b>redis</b>", 5, 0), runs("redlock", 0, 5)]),
        night("n2", &[runs("<b>redis</b>", 5, 0), runs("redlock", 0, 5)]),
        night("n3", &[runs("<b>redis</b>", 0, 5), runs("redlock", 0, 5)]),
    ];
    let page = reports::history::render_html(&History::build(&nights, None), "history");
    assert!(!page.contains("<b>redis</b>") && page.contains("&lt;b&gt;redis&lt;/b&gt;"));
    assert!(page.contains(r#"data-state="changed" data-row="&lt;b&gt;redis&lt;/b&gt;""#), "{page}");
    assert!(page.contains(r#"data-state="steady" data-row="redlock""#), "{page}");
    assert!(page.contains("Tonight 1 cell(s) moved beyond chance"), "{page}");
    assert_eq!(page.matches("<svg").count(), 2);
}
