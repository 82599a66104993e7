//! The measured backend × failure table: collects every finished run with its cell, and when
//! the work is done writes `STORE/matrix.json` and `STORE/matrix.html` (linking every run's
//! report) and prints the cells as plain lines; beside it the same runs laid out as the
//! article's decision table (`STORE/table.json`, `STORE/table.html`).

use crate::events::{Event, Reporter};
use crate::lock_backends::Persistence;
use crate::resource::{ResourceKind, ResourceMode};
use crate::scenario::Scenario;
use crate::worker::WorkloadKind;
use anyhow::Context;
use reports::decision_table::{self, DecisionTable, TablePlace};
use reports::matrix::Verdict;
use reports::{matrix, Matrix, MatrixRun};
use results::RunResults;
use std::path::{Path, PathBuf};

pub struct MatrixReport {
    store: PathBuf,
    /// (results, row, column, place in the article's table, run folder) of every finished run.
    runs: Vec<(RunResults, String, String, Option<TablePlace>, PathBuf)>,
}

impl MatrixReport {
    pub fn new(store: PathBuf) -> Self {
        MatrixReport { store, runs: vec![] }
    }

    /// One finished run of `scenario`, with its folder.
    pub fn add(&mut self, results: RunResults, scenario: &Scenario, dir: PathBuf) {
        self.runs.push((results, row(scenario), column(scenario), super::table_place::place(scenario), dir));
    }

    /// How many runs it holds.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Its runs as the matrix lays them out, each report linked from the folder `from`.
    pub fn matrix_runs(&self, from: &Path) -> anyhow::Result<Vec<MatrixRun<'_>>> {
        let from = from.canonicalize().unwrap_or(from.to_path_buf());
        let mut runs = vec![];
        for (results, row, column, place, dir) in &self.runs {
            let report = crate::paths::link(&from, &dir.join("report.html"))?;
            runs.push(MatrixRun { results, row: row.clone(), column: column.clone(), report, place: *place });
        }
        Ok(runs)
    }

    /// Its runs as a matrix, each report linked from the folder `from`.
    pub fn matrix(&self, from: &Path) -> anyhow::Result<Matrix> {
        Ok(Matrix::from_runs(&self.matrix_runs(from)?))
    }

    /// When its first run started (RFC 3339 strings of one format sort as times).
    pub fn first_started(&self) -> Option<String> {
        self.runs.iter().map(|(r, ..)| r.started_at.clone()).min()
    }

    /// The exit status of its runs, as a matrix's: 0 every run matched, 1 some did not, 2 one
    /// ended unknown without matching (an interrupted run among them).
    pub fn exit_code(&self) -> u8 {
        self.runs.iter().map(|(r, ..)| r.exit_code()).max().unwrap_or(0)
    }
}

impl Reporter for MatrixReport {
    fn report(&mut self, event: &Event) {
        match event {
            Event::SeriesStarted { scenario, runs } => {
                let s = &scenario.scenario;
                print_line!("== {} ({} × {}), {runs} run(s)", scenario.name, row(s), column(s));
            }
            Event::RunFinished { scenario, results, dir, .. } => self.add((**results).clone(), &scenario.scenario, dir.clone()),
            _ => {}
        }
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        let store = self.store.canonicalize().unwrap_or(self.store.clone());
        let runs = self.matrix_runs(&store)?;
        let m = Matrix::from_runs(&runs);
        let json = store.join("matrix.json");
        std::fs::write(&json, serde_json::to_vec_pretty(&m)?).with_context(|| format!("writing {}", json.display()))?;
        let html = store.join("matrix.html");
        std::fs::write(&html, matrix::render_html(&m, "lockchaos matrix")).with_context(|| format!("writing {}", html.display()))?;
        let table = DecisionTable::from_runs(&runs);
        let table_json = store.join("table.json");
        std::fs::write(&table_json, serde_json::to_vec_pretty(&table)?).with_context(|| format!("writing {}", table_json.display()))?;
        let table_html = store.join("table.html");
        std::fs::write(&table_html, decision_table::render_html(&table, "lockchaos: the decision table, measured"))
            .with_context(|| format!("writing {}", table_html.display()))?;
        for c in &m.cells {
            print_line!("{}", cell_line(c));
        }
        let verdict = match m.verdict() {
            Verdict::NoRuns => "no run finished: nothing was measured",
            Verdict::Matched => "every cell matched its expectation",
            Verdict::Interrupted => "some runs were interrupted: their cells were not measured to the end",
            Verdict::DidNotMatch => "some cells did not match",
        };
        print_line!("matrix: {} — {verdict}", html.display());
        print_line!("the article's table: {}", table_html.display());
        Ok(())
    }
}

/// A cell as the summary prints it, its verdict last.
fn cell_line(c: &matrix::Cell) -> String {
    // The workloads without a lock: what they applied twice and what they retried.
    let twice = c.tally.applied_twice.map(|n| format!(" applied twice {n}")).unwrap_or_default();
    let retries = if c.tally.retries > 0 { format!(" retries {}", c.tally.retries) } else { String::new() };
    let verdict = match c.tally.verdict() {
        Verdict::Matched => "matches".to_string(),
        Verdict::Interrupted => format!("interrupted ({} of {} runs cut short)", c.tally.runs_interrupted, c.tally.runs),
        Verdict::DidNotMatch | Verdict::NoRuns => "DOES NOT MATCH".to_string(),
    };
    format!(
        "{:<40} {:<22} violation {}/{} (expect {}; {}{}) lost {} rejected {}{twice}{retries} acquired {} {verdict}",
        c.row,
        c.column,
        c.tally.runs_with_violation,
        c.tally.runs,
        c.expect.join("/"),
        c.tally.violation_rate.words(),
        c.tally.unknown_words().map(|u| format!("; {u}")).unwrap_or_default(),
        c.tally.lost_updates,
        c.tally.stale_writes_rejected,
        c.acquire_success_rate.map(|r| format!("{:.0}%", r * 100.0)).unwrap_or_else(|| "-".into()),
    )
}

/// The matrix column: the scenario's `failure`, else the fault kinds it injects (partitions
/// that only set the stage for another fault left out), else "baseline".
pub fn column(s: &Scenario) -> String {
    if let Some(f) = &s.failure {
        return f.clone();
    }
    let kinds = s.nemesis.fault_names();
    let mut names: Vec<&str> = vec![];
    for k in &kinds {
        if !names.contains(k) && (*k != "partition" || kinds.iter().all(|o| *o == "partition")) {
            names.push(k);
        }
    }
    if names.is_empty() {
        "baseline".into()
    } else {
        names.join(" + ")
    }
}

/// The matrix row: the backend, and the resource when it is not the unfenced ledger, the
/// server's persistence, and the client when it is not the built-in one (a client program, or
/// etcd 3.4's Mutex).
pub fn row(s: &Scenario) -> String {
    let resource = match (s.resource.kind, s.resource.mode) {
        (ResourceKind::Ledger, ResourceMode::Unfenced) => None,
        (ResourceKind::Ledger, ResourceMode::Fenced) => Some("fenced ledger"),
        (ResourceKind::Postgres, ResourceMode::Fenced) => Some("fenced Postgres table"),
        (ResourceKind::Postgres, ResourceMode::Unfenced) => Some("Postgres table"),
    };
    let persistence = (s.server.persistence == Persistence::Appendonly).then_some("appendonly");
    // The built-in etcd client's setting; a client program is its own client.
    let mutex = (!s.lock.check_key_after_wait && s.client.command.is_none()).then_some("etcd 3.4 Mutex");
    let program = s.client.command.as_deref().map(|command| program_name(command, &s.client.python));
    let no_lock = match (s.workload.kind, s.workload.broken()) {
        (WorkloadKind::Lock, _) => None,
        (WorkloadKind::ConditionalWrite, false) => Some("conditional write, no lock"),
        (WorkloadKind::ConditionalWrite, true) => Some("write without its version check, no lock"),
        (WorkloadKind::IdempotencyKey, false) => Some("idempotency key, no lock"),
        (WorkloadKind::IdempotencyKey, true) => Some("idempotency key stored apart from the effect, no lock"),
        (WorkloadKind::UniqueClaim, false) => Some("unique claim, no lock"),
        (WorkloadKind::UniqueClaim, true) => Some("check-then-do claim without a constraint, no lock"),
        (WorkloadKind::Partitioned, false) => Some("one owner per key, no lock"),
        (WorkloadKind::Partitioned, true) => Some("one key shared without a lock"),
    };
    let extras: Vec<&str> = [resource, persistence, mutex, program.as_deref(), no_lock].into_iter().flatten().collect();
    if extras.is_empty() {
        s.backend.name().to_string()
    } else {
        format!("{}, {}", s.backend.name(), extras.join(", "))
    }
}

/// A client program as a row names it: its file (`client redis_article.py`, `client
/// etcd-mutex` for `/out/etcd-mutex`; a class path is no file, so Java's main class), else its
/// command; with the pip requirements of its environment, so each version is a row of its own
/// (`client redis_py_lock.py with redis==8.2.0`).
fn program_name(command: &[String], python: &[String]) -> String {
    let file = command.iter().rev().find(|word| word.contains('/') && !word.contains(':')).and_then(|path| path.rsplit('/').next());
    let java_class = (command.first().map(String::as_str) == Some("java")).then(|| command.last()).flatten();
    let name = file.or(java_class.map(String::as_str)).map_or_else(|| command.join(" "), str::to_string);
    match python {
        [] => format!("client {name}"),
        pins => format!("client {name} with {}", pins.join(" ")),
    }
}

#[cfg(test)]
mod tests {
    use super::{column, row};

    #[test]
    fn shipped_scenarios_sit_in_the_matrix_where_a_reader_looks_for_them() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let cases = [
            ("redis-single-baseline", "redis-single", "baseline"),
            ("redlock-clock-jump", "redlock", "clock-jump"),
            ("redis-sentinel-failover", "redis-sentinel", "failover"),
            ("etcd-pause-fenced", "etcd, fenced ledger", "pause"),
            ("etcd-pause-fenced-postgres-table", "etcd, fenced Postgres table", "pause"),
            ("redis-single-restart-persistence", "redis-single, appendonly", "kill"),
            ("postgres-session-external-resource-kill", "postgres-session", "pause + kill-session"),
            ("redis-single-partition", "redis-single", "partition"),
            ("redis-article-pause", "redis-single, client redis_article.py", "pause"),
            ("etcd-pause-unfenced-jepsen-members", "etcd, etcd 3.4 Mutex", "pause"),
            ("cas-pause", "postgres-xact, conditional write, no lock", "pause"),
            ("cas-no-version-pause", "postgres-xact, write without its version check, no lock", "pause"),
            ("go-etcd-mutex-expired-waiter", "etcd, client etcd-mutex", "pause"),
            ("java-pg-advisory-baseline", "postgres-session, client PgAdvisoryLock", "baseline"),
        ];
        for (name, want_row, want_column) in cases {
            let s = crate::scenario::load_file(&dir.join(format!("{name}.toml"))).unwrap().scenario;
            assert_eq!((row(&s).as_str(), column(&s).as_str()), (want_row, want_column), "{name}");
        }
        // Each version of a library is a row of its own.
        let pair = crate::scenario::load_file(&dir.join("redis-py-lock-release-retried.toml")).unwrap();
        let rows: Vec<String> = crate::scenario::versions::expand(pair).unwrap().iter().map(|v| row(&v.scenario)).collect();
        assert_eq!(
            rows,
            ["redis-single, client redis_py_lock.py with redis==4.3.4", "redis-single, client redis_py_lock.py with redis==8.2.0"]
        );
    }
}
