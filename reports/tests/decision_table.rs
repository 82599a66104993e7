//! The article's table: every cell is built, runs land where their place says, a cell agrees
//! only when its runs matched, and the page says which cells cannot run here.

mod common;

use checker::FreedAfterKill;
use common::run;
use reports::decision_table::{render_html, DecisionTable, LockSystem, TableColumn, TablePlace};
use reports::MatrixRun;
use results::{Expectation, RunResults};

fn place(system: LockSystem, column: TableColumn) -> Option<TablePlace> {
    Some(TablePlace { system, column })
}

/// The runs as the matrix reporter hands them over, each with its place and its report.
fn matrix_runs<'a>(runs: &[(&'a RunResults, Option<TablePlace>)]) -> Vec<MatrixRun<'a>> {
    runs.iter()
        .map(|(r, place)| MatrixRun {
            results: r,
            row: String::new(),
            column: String::new(),
            report: reports::href::Href::to_path(&std::path::Path::new(&r.scenario).join("report.html")).unwrap(),
            place: *place,
        })
        .collect()
}

#[test]
fn cells_count_their_runs_compare_with_the_article_and_say_what_cannot_run() {
    let mut killed = run("postgres-session-holder-killed", Expectation::Safe, false);
    killed.properties.availability.freed_after_kill =
        vec![FreedAfterKill { client: "client-2".into(), killed_at_ns: 5, freed_after_ms: Some(31.0) }];
    // A pause that should lose an update but did not: the measurement disagrees.
    let mut missed = run("redis-single-pause", Expectation::Violation, false);
    missed.matches_expectation = false;
    let lost = run("redis-single-pause", Expectation::Violation, true);
    let mut fenced = run("etcd-pause-fenced", Expectation::Safe, false);
    fenced.properties.fencing.grants_with_token = 6;
    fenced.properties.resource_safety.rejected_writes = 1;
    let baseline = run("redis-single-baseline", Expectation::Safe, false);
    let runs = [
        (&killed, place(LockSystem::PostgresSession, TableColumn::HolderDies)),
        (&missed, place(LockSystem::SingleRedis, TableColumn::Timing)),
        (&lost, place(LockSystem::SingleRedis, TableColumn::Timing)),
        (&fenced, place(LockSystem::EtcdFenced, TableColumn::Timing)),
        (&baseline, None),
    ];
    let t = DecisionTable::from_runs(&matrix_runs(&runs));
    assert_eq!(t.cells.len(), LockSystem::ALL.len() * TableColumn::ALL.len());

    let dies = t.cell(LockSystem::PostgresSession, TableColumn::HolderDies);
    assert_eq!((dies.tally.runs, dies.agrees, dies.freed_after_ms.clone()), (1, Some(true), vec![Some(31.0)]));
    assert!(dies.claim.contains("session end"), "{}", dies.claim);

    let timing = t.cell(LockSystem::SingleRedis, TableColumn::Timing);
    assert_eq!((timing.tally.runs, timing.tally.runs_with_violation, timing.tally.runs_matched, timing.agrees), (2, 1, 1, Some(false)));

    // The Fencing cell counts the tokens of its whole row.
    let fencing = t.cell(LockSystem::EtcdFenced, TableColumn::Fencing);
    assert_eq!((fencing.tally.runs, fencing.grants_with_token, fencing.tally.stale_writes_rejected, fencing.agrees), (1, 6, 1, Some(true)));

    // An unfenced resource takes a write out of token order: that is no disagreement in the
    // unfenced row, whose tokens still increase; in the fenced row it is.
    let mut unfenced = run("etcd-pause-unfenced", Expectation::Violation, true);
    unfenced.properties.fencing.grants_with_token = 6;
    unfenced.properties.fencing.accepted_writes_out_of_order = 1;
    let mut leaky = fenced.clone();
    leaky.properties.fencing.accepted_writes_out_of_order = 1;
    let more = [(&unfenced, place(LockSystem::Etcd, TableColumn::Timing)), (&leaky, place(LockSystem::EtcdFenced, TableColumn::Timing))];
    let t2 = DecisionTable::from_runs(&matrix_runs(&more));
    assert_eq!(t2.cell(LockSystem::Etcd, TableColumn::Fencing).agrees, Some(true));
    assert_eq!(t2.cell(LockSystem::EtcdFenced, TableColumn::Fencing).agrees, Some(false));

    // Redis has no token: its Fencing cell cannot run, and takes none of the row's runs.
    let no_token = t.cell(LockSystem::SingleRedis, TableColumn::Fencing);
    assert_eq!((no_token.tally.runs, no_token.agrees), (0, None));
    assert!(no_token.cannot_run_here.as_deref().is_some_and(|w| w.contains("token")), "{no_token:?}");

    // A baseline has no place: no cell counts it.
    assert!(t.cells.iter().all(|c| !c.tally.scenarios.contains(&"redis-single-baseline".to_string())));

    let html = render_html(&t, "the article's table");
    assert!(html.contains("<table id=\"decision-table\">"), "{html}");
    for class in ["agrees", "disagrees", "cannot-run", "not-measured"] {
        assert!(html.contains(&format!("class=\"{class}\"")), "no {class} cell: {html}");
    }
    assert!(html.contains("freed after 31–31 ms (1 kills)"), "{html}");
    assert!(html.contains("cannot run here: SET NX PX hands out no increasing token"), "{html}");
    assert!(html.contains("<a href=\"postgres-session-holder-killed/report.html\">1</a>"), "{html}");
    assert!(!html.contains("<script"), "self-contained");
    let json = serde_json::to_string(&t).unwrap();
    assert_eq!(serde_json::from_str::<DecisionTable>(&json).unwrap(), t);
}
