//! The run store: `store/<scenario>/<UTC start time>/`, one folder per run, and `store/latest`.
//!
//! A run folder holds: scenario.toml (as run) and run.json (effective parameters), the raw event
//! files (workers/*.jsonl, resource.jsonl, nemesis.jsonl), history.jsonl (all merged by time),
//! results.json, report.html, and logs/ with every container's output.
//!
//! Over 400 lines only with its tests: the store's code itself is some 260.

use crate::scenario_name::ScenarioName;
use anyhow::Context;
use checker::bounded_read::{self, SizeLimit};
use checker::Event;
use results::{ResultsFileError, RunResults};
use serde::Deserialize;
use std::path::{Path, PathBuf};

pub struct RunDir {
    pub store: PathBuf,
    pub path: PathBuf,
    pub started: chrono::DateTime<chrono::Utc>,
    /// Value of the `lockchaos.run` label on everything this run creates.
    pub run_id: String,
}

impl RunDir {
    /// A new run folder of `scenario` (a [`ScenarioName`]: a single safe folder name, so the
    /// folder is inside `store`).
    pub fn create(store: &Path, scenario: &ScenarioName) -> anyhow::Result<RunDir> {
        let started = chrono::Utc::now();
        let stamp = started.format("%Y%m%dT%H%M%SZ").to_string();
        let parent = store.join(scenario.as_str());
        std::fs::create_dir_all(&parent).with_context(|| format!("cannot create {}", parent.display()))?;
        // Two runs in one second get -2, -3, ...
        let mut made = None;
        for n in 1..=1000 {
            let folder = if n == 1 { stamp.clone() } else { format!("{stamp}-{n}") };
            match std::fs::create_dir(parent.join(&folder)) {
                Ok(()) => {
                    made = Some(folder);
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot create a run folder in {}", parent.display())),
            }
        }
        let folder = made.with_context(|| format!("1000 runs of {scenario} started in one second in {}", parent.display()))?;
        let path = parent.join(&folder).canonicalize().with_context(|| format!("cannot resolve {}", parent.join(&folder).display()))?;
        for sub in ["workers", "logs"] {
            std::fs::create_dir_all(path.join(sub)).with_context(|| format!("cannot create {}", path.join(sub).display()))?;
        }
        let suffix: u16 = rand::random();
        let run_id = format!("{scenario}-{}-{suffix:04x}", folder.to_lowercase());
        let store = store.canonicalize().with_context(|| format!("cannot resolve the store {}", store.display()))?;
        Ok(RunDir { store, path, started, run_id })
    }

    /// An existing run folder (`store/<scenario>/<start time>/`), from its run.json.
    pub fn open(path: &Path) -> anyhow::Result<RunDir> {
        let path = path.canonicalize().with_context(|| format!("no run folder at {}", path.display()))?;
        let inputs = read_inputs(&path)?;
        let started = chrono::DateTime::parse_from_rfc3339(&inputs.started_at)
            .with_context(|| format!("{}: started_at {:?}", path.join("run.json").display(), inputs.started_at))?
            .with_timezone(&chrono::Utc);
        let store = path.parent().and_then(Path::parent).with_context(|| format!("{} is not inside a store", path.display()))?;
        Ok(RunDir { store: store.to_path_buf(), path: path.clone(), started, run_id: inputs.run_id })
    }

    pub fn worker_events(&self, process: u64) -> PathBuf {
        self.path.join("workers").join(format!("client-{process}.jsonl"))
    }
    pub fn resource_events(&self) -> PathBuf {
        self.path.join("resource.jsonl")
    }
    pub fn nemesis_events(&self) -> PathBuf {
        self.path.join("nemesis.jsonl")
    }
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Points `store/latest` at this run (a relative symlink, replaced atomically).
    pub fn point_latest(&self) -> anyhow::Result<()> {
        let target = self.path.strip_prefix(&self.store).unwrap_or(&self.path).to_path_buf();
        // Of this run: runs side by side (`matrix --jobs`) each make their own.
        let tmp = self.store.join(format!(".latest-{}", self.run_id));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&target, &tmp)?;
        std::fs::rename(&tmp, self.store.join("latest"))?;
        Ok(())
    }

    /// Merges every party's events by time into history.jsonl and returns them.
    /// A truncated last line (a party killed mid-write) is dropped with a warning.
    pub fn merge_history(&self) -> anyhow::Result<(Vec<Event>, Vec<String>)> {
        let (events, warnings) = read_party_files(&self.path)?;
        let mut out = String::new();
        for e in &events {
            out.push_str(&serde_json::to_string(e)?);
            out.push('\n');
        }
        std::fs::write(self.file("history.jsonl"), out)?;
        Ok((events, warnings))
    }
}

/// The parties' own event files in a run folder: resource.jsonl, nemesis.jsonl and
/// workers/*.jsonl, those that exist. Empty for a folder that holds none (a bare history).
pub fn party_files(folder: &Path) -> Vec<PathBuf> {
    let mut workers: Vec<PathBuf> = std::fs::read_dir(folder.join("workers"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|e| e == "jsonl")).collect())
        .unwrap_or_default();
    workers.sort();
    let mut files = vec![folder.join("resource.jsonl"), folder.join("nemesis.jsonl")];
    files.extend(workers);
    // Kept when anything is there, link or not: the reader refuses what is not a regular file
    // (a resource.jsonl that is a link to /dev/zero), rather than the history silently lacking it.
    files.retain(|p| p.symlink_metadata().is_ok());
    files
}

/// Every party's events merged by time and indexed, without writing anything: what
/// history.jsonl holds, or would hold, for a run killed before it was written. A truncated last
/// line (a party killed mid-write) is dropped with a warning.
pub fn read_party_files(folder: &Path) -> anyhow::Result<(Vec<Event>, Vec<String>)> {
    let mut events = vec![];
    let mut warnings = vec![];
    for path in party_files(folder) {
        // The error's text names the file and the cause; its source chain would say the cause twice.
        let parsed = checker::parse::read_history_file(&path).map_err(|e| anyhow::anyhow!("{e}"))?;
        warnings.extend(parsed.warnings.into_iter().map(|w| format!("{}: {w}", path.display())));
        events.extend(parsed.events);
    }
    // Stable: events of one party with equal times keep their order.
    events.sort_by_key(|e| e.time);
    for (i, e) in events.iter_mut().enumerate() {
        e.index = i as u64;
    }
    Ok((events, warnings))
}

/// What run.json says about the run, as far as its results need it (other fields are ignored,
/// so older and newer run.json files read).
#[derive(Deserialize, Debug)]
pub struct RunInputs {
    pub run_id: String,
    pub scenario: String,
    pub started_at: String,
    pub seed: u64,
    pub effective: EffectiveScenario,
}

/// The scenario as run, after command-line overrides: the fields results.json repeats.
#[derive(Deserialize, Debug)]
pub struct EffectiveScenario {
    pub description: String,
    pub expect: results::Expectation,
    /// The backend's name (`BackendKind::name`).
    pub backend: String,
    pub clients: u32,
    pub time_limit_secs: u64,
    #[serde(default)]
    pub claims: results::Claims,
    /// The scenario's stuck bound, when it gave one (`run_verdict::stuck_bound`).
    #[serde(default)]
    pub stuck_after_ms: Option<u64>,
    /// What the stuck bound is derived from otherwise.
    #[serde(default)]
    pub lock: Option<EffectiveLock>,
}

/// The `[lock]` of a run's effective scenario, as far as its results need it.
#[derive(Deserialize, Debug)]
pub struct EffectiveLock {
    pub ttl_ms: u64,
}

/// The largest run.json read. Ours are a few KiB: the effective scenario (itself from a file of
/// at most 1 MiB) and the stages' times.
pub const RUN_JSON_LIMIT: SizeLimit = SizeLimit::new(4 << 20, "a run.json");

pub fn read_inputs(folder: &Path) -> anyhow::Result<RunInputs> {
    let file = folder.join("run.json");
    let bytes = bounded_read::read(&file, RUN_JSON_LIMIT)?;
    serde_json::from_slice(&bytes).with_context(|| format!("{}: not a run.json", file.display()))
}

/// Why a run folder's history cannot vouch for safety: its run was cut short. None when the run
/// finished, or when the folder is no run's (no run.json nor results.json: a bare history).
pub fn cut_short(folder: &Path) -> Option<String> {
    let results = folder.join("results.json");
    match bounded_read::read(&results, results::RESULTS_JSON_LIMIT) {
        Ok(bytes) => match serde_json::from_slice::<serde_json::Value>(&bytes).map(|v| v["interrupted"].as_bool()) {
            Ok(Some(false)) => None,
            Ok(Some(true)) => Some("the run was interrupted (results.json says so)".into()),
            Ok(None) => Some("results.json does not say whether the run was interrupted".into()),
            Err(e) => Some(format!("results.json is unreadable ({e}): whether the run finished is not known")),
        },
        Err(e) if !is_missing(&e) => Some(format!("{e}: whether the run finished is not known")),
        Err(_) if folder.join("run.json").exists() => {
            Some("the run never finished: no results.json (its lockchaos was killed, or it is still going)".into())
        }
        Err(_) => None,
    }
}

fn is_missing(e: &bounded_read::ReadError) -> bool {
    matches!(&e.problem, bounded_read::Problem::Io(io) if io.kind() == std::io::ErrorKind::NotFound)
}

/// Every run folder of a store (`store/<scenario>/<run>`), in name order.
pub fn run_folders(store: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut folders = vec![];
    let read = |dir: &Path| std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()));
    for scenario in read(store)?.filter_map(|e| e.ok()).filter(|e| e.path().is_dir() && !e.path().is_symlink()) {
        folders.extend(read(&scenario.path())?.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()));
    }
    folders.sort();
    Ok(folders)
}

/// Every run folder of `stores`, each once however often the stores reach it (the same store
/// given twice, a link, `a/../a`), told apart by its canonical path: (the folder as found, its
/// canonical path).
pub fn run_folders_once(stores: &[PathBuf]) -> anyhow::Result<Vec<(PathBuf, PathBuf)>> {
    let mut seen = std::collections::HashSet::new();
    let mut folders = vec![];
    for store in stores {
        for folder in run_folders(store)? {
            let canonical = folder.canonicalize().unwrap_or_else(|_| folder.clone());
            if seen.insert(canonical.clone()) {
                folders.push((folder, canonical));
            }
        }
    }
    Ok(folders)
}

/// Rewrites `store/index.html` from every run folder's results.json. A folder without one is
/// left out (its run did not finish checking); one whose results.json cannot be used (not a
/// regular file, past its limit, malformed) is left out too, and returned, to be named.
pub fn write_index(store: &Path) -> anyhow::Result<Vec<ResultsFileError>> {
    let mut entries = vec![];
    let mut left_out = vec![];
    for run in run_folders(store)? {
        let results = match RunResults::read(&run.join("results.json")) {
            Ok(r) => r,
            Err(e) if e.is_missing() => continue,
            Err(e) => {
                left_out.push(e);
                continue;
            }
        };
        let Ok(relative) = run.strip_prefix(store) else { continue };
        let Some(report) = reports::href::Href::to_path(&relative.join("report.html")) else { continue };
        entries.push(reports::run_index::IndexEntry { results, report });
    }
    let tmp = store.join(format!(".index-{}.html", std::process::id()));
    std::fs::write(&tmp, reports::run_index::render(&mut entries))?;
    std::fs::rename(&tmp, store.join("index.html"))?;
    Ok(left_out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn demo() -> ScenarioName {
        ScenarioName::new("demo").unwrap()
    }

    #[test]
    fn merge_orders_every_party_by_time_reindexes_and_keeps_a_truncated_files_complete_lines() {
        let store = tempfile::tempdir().unwrap();
        let run = RunDir::create(store.path(), &demo()).unwrap();
        let line = |t: u64, p: &str, f: &str| format!("{{\"time\":{t},\"process\":{p},\"type\":\"ok\",\"f\":\"{f}\"}}\n");
        std::fs::write(run.worker_events(1), line(10, "1", "acquire") + &line(40, "1", "release")).unwrap();
        // client-2 was killed mid-write: its last line is cut off.
        std::fs::write(run.worker_events(2), line(20, "2", "acquire") + "{\"time\":50,\"proc").unwrap();
        std::fs::write(run.resource_events(), line(30, "\"resource\"", "write")).unwrap();
        std::fs::write(run.nemesis_events(), line(20, "\"nemesis\"", "pause")).unwrap();
        let (events, warnings) = run.merge_history().unwrap();
        let order: Vec<(u64, u64, String)> = events.iter().map(|e| (e.index, e.time, e.process.to_string())).collect();
        assert_eq!(
            order,
            [(0, 10, "1".into()), (1, 20, "nemesis".into()), (2, 20, "2".into()), (3, 30, "resource".into()), (4, 40, "1".into())]
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("client-2.jsonl"), "{warnings:?}");
        let written = checker::read_history_file(&run.file("history.jsonl")).unwrap().events;
        assert_eq!(written, events);
    }

    /// A safe run's results, as the scenario `scenario` and the run `run_id` (the reporters'
    /// tests start from it too).
    pub(crate) fn results_named(scenario: &str, run_id: &str) -> results::RunResults {
        results::RunResults {
            scenario: scenario.into(),
            description: "d".into(),
            expect: results::Expectation::Safe,
            outcome: results::Outcome::Safe,
            matches_expectation: true,
            run_id: run_id.into(),
            backend: "redis-single".into(),
            seed: 1,
            clients: 2,
            time_limit_secs: 10,
            started_at: "2026-01-01T00:00:00Z".into(),
            duration_secs: 10.0,
            interrupted: false,
            workers: vec![],
            warnings: vec![],
            not_applied: vec![],
            refused_requests: Default::default(),
            unknown_cause: None,
            properties: checker::check(&[], &checker::CheckOptions::default()),
            claims: vec![],
        }
    }

    /// A run folder of `store` with a results.json.
    fn finished_run(store: &Path) -> RunDir {
        let run = RunDir::create(store, &demo()).unwrap();
        let results = results_named("demo", &run.run_id);
        std::fs::write(run.file("results.json"), serde_json::to_vec(&results).unwrap()).unwrap();
        run
    }

    #[test]
    fn the_index_leaves_out_a_run_whose_results_json_is_a_link_to_dev_zero_and_keeps_the_rest() {
        let store = tempfile::tempdir().unwrap();
        let good = finished_run(store.path());
        let bad = finished_run(store.path());
        std::fs::remove_file(bad.file("results.json")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", bad.file("results.json")).unwrap();
        let left_out: Vec<String> = write_index(store.path()).unwrap().iter().map(ToString::to_string).collect();
        let bad_file = bad.file("results.json");
        assert_eq!(left_out, [format!("{}: a character device, not a regular file: refused as a results.json", bad_file.display())]);
        let index = std::fs::read_to_string(store.path().join("index.html")).unwrap();
        let link = |run: &RunDir| format!("{}/report.html", run.path.strip_prefix(&run.store).unwrap().display());
        assert!(index.contains(&link(&good)) && !index.contains(&link(&bad)), "{index}");
    }

    #[test]
    fn a_results_json_that_is_no_file_or_too_large_says_the_run_cannot_vouch() {
        let store = tempfile::tempdir().unwrap();
        let run = finished_run(store.path());
        assert_eq!(cut_short(&run.path), None);
        std::fs::remove_file(run.file("results.json")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", run.file("results.json")).unwrap();
        let why = cut_short(&run.path).unwrap();
        assert!(why.contains("a character device, not a regular file"), "{why}");
        std::fs::remove_file(run.file("results.json")).unwrap();
        std::fs::File::create(run.file("results.json")).unwrap().set_len(1 << 30).unwrap();
        let why = cut_short(&run.path).unwrap();
        assert!(why.contains("larger than 16 MiB, the limit for a results.json"), "{why}");
    }

    #[test]
    fn a_party_file_that_is_a_link_to_dev_zero_is_refused_not_left_out_unseen() {
        let store = tempfile::tempdir().unwrap();
        let run = RunDir::create(store.path(), &demo()).unwrap();
        std::fs::write(run.worker_events(1), "{\"time\":10,\"process\":1,\"type\":\"invoke\",\"f\":\"acquire\"}\n").unwrap();
        std::os::unix::fs::symlink("/dev/zero", run.resource_events()).unwrap();
        let err = read_party_files(&run.path).unwrap_err().to_string();
        assert_eq!(err, format!("{}: a character device, not a regular file: refused as a history", run.resource_events().display()));
    }

    #[test]
    fn runs_get_their_own_folders_and_latest_follows_the_newest() {
        let store = tempfile::tempdir().unwrap();
        let a = RunDir::create(store.path(), &demo()).unwrap();
        let b = RunDir::create(store.path(), &demo()).unwrap();
        assert_ne!(a.path, b.path);
        assert_ne!(a.run_id, b.run_id);
        assert!(a.run_id.starts_with("demo-"), "{}", a.run_id);
        a.point_latest().unwrap();
        b.point_latest().unwrap();
        assert_eq!(store.path().join("latest").canonicalize().unwrap(), b.path);
        assert!(std::fs::read_link(store.path().join("latest")).unwrap().is_relative());
    }

    /// Issue 23: a scenario file `...toml` (stem `..`) made its run folder beside the store.
    #[test]
    fn a_scenario_named_dot_dot_cannot_write_outside_the_store() {
        let outer = tempfile::tempdir().unwrap();
        let store = outer.path().join("store");
        std::fs::create_dir(&store).unwrap();
        for stem in ["..", ".", "../escape", "a/../..", "/tmp/abs"] {
            let made = stem.parse::<ScenarioName>().map(|name| RunDir::create(&store, &name));
            assert!(made.is_err(), "{stem}");
        }
        let outside: Vec<_> = std::fs::read_dir(outer.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(outside, ["store"]);
        assert_eq!(std::fs::read_dir(&store).unwrap().count(), 0);
    }

    /// A folder named before names were checked (issue 23) is linked from the index encoded,
    /// never as a script link.
    #[test]
    fn the_index_links_a_hostile_run_folder_encoded() {
        let store = tempfile::tempdir().unwrap();
        let name = "javascript:alert(1)<!--";
        let results = results_named(name, "r");
        let run = store.path().join(name).join("20260101T000000Z");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("results.json"), serde_json::to_vec(&results).unwrap()).unwrap();
        write_index(store.path()).unwrap();
        let index = std::fs::read_to_string(store.path().join("index.html")).unwrap();
        assert!(index.contains("<a href=\"javascript%3Aalert%281%29%3C%21--/20260101T000000Z/report.html\">"), "{index}");
        assert!(!index.contains("href=\"javascript:"), "{index}");
    }
}
