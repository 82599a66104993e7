//! What the container tests that drive runs through the library share: running a scenario (a
//! shipped one by name, or a file written by the test) and reading what its run left.

#![allow(dead_code)] // each test binary uses its own part of it

pub mod made_up_run;
pub mod made_up_store;

use harness::events::{Event, EventSink, FaultChange, Reporter};
use harness::run::RunOptions;
use harness::{scenario_catalog, series};
use results::RunResults;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Collects the faults a run reports as events.
struct Faults(Arc<Mutex<Vec<FaultChange>>>);

impl Reporter for Faults {
    fn report(&mut self, event: &Event) {
        if let Event::Fault(change) = event {
            self.0.lock().unwrap().push(change.clone());
        }
    }
}

/// A finished run: its results, the faults it reported, its history and its folder.
pub struct Run {
    pub results: RunResults,
    pub faults: Vec<FaultChange>,
    pub history: Vec<checker::Event>,
    pub dir: PathBuf,
    /// Keeps the store until the test is done with the run.
    _store: tempfile::TempDir,
}

/// Runs `scenario` (a shipped name, or a path to a .toml file) once for `secs` seconds.
pub async fn run(scenario: &str, secs: u64) -> Run {
    let store = tempfile::tempdir().unwrap();
    let loaded = scenario_catalog::resolve(scenario).unwrap();
    let opts = RunOptions {
        store: store.path().to_path_buf(),
        time_limit_secs: Some(secs),
        exe: Some(env!("CARGO_BIN_EXE_lockchaos").into()),
        ..Default::default()
    };
    let faults = Arc::new(Mutex::new(vec![]));
    let events = EventSink::new(vec![Box::new(Faults(faults.clone()))]);
    let series = series::run_series(Arc::new(loaded), &opts, 1, &events).await;
    assert!(series.error.is_none(), "{scenario}: {:?}", series.error);
    let dir = store.path().join(std::fs::read_link(store.path().join("latest")).unwrap());
    let history = checker::read_history_file(&dir.join("history.jsonl")).unwrap().events;
    let faults = faults.lock().unwrap().clone();
    Run { results: series.runs.into_iter().next().unwrap(), faults, history, dir, _store: store }
}

/// Runs the binary on a scenario file, quietly, into `store`: its exit code and all it printed.
pub fn run_cli(file: &Path, store: &Path) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .args(["scenario", file.to_str().unwrap(), "--quiet", "--store", store.to_str().unwrap()])
        .env("CI", "true")
        .output()
        .unwrap();
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// Writes a scenario file into `dir` and returns its path.
pub fn scenario_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}
