//! The run store: `store/<scenario>/<UTC start time>/`, one folder per run, and `store/latest`.
//!
//! A run folder holds: scenario.toml (as run) and run.json (effective parameters), the raw event
//! files (workers/*.jsonl, resource.jsonl, nemesis.jsonl), history.jsonl (all merged by time),
//! results.json, report.html, and logs/ with every container's output.

use anyhow::Context;
use checker::Event;
use std::path::{Path, PathBuf};

pub struct RunDir {
    pub store: PathBuf,
    pub path: PathBuf,
    pub scenario: String,
    pub started: chrono::DateTime<chrono::Utc>,
    /// Value of the `lockchaos.run` label on everything this run creates.
    pub run_id: String,
}

impl RunDir {
    pub fn create(store: &Path, scenario: &str) -> anyhow::Result<RunDir> {
        let started = chrono::Utc::now();
        let stamp = started.format("%Y%m%dT%H%M%SZ").to_string();
        let parent = store.join(scenario);
        std::fs::create_dir_all(&parent).with_context(|| format!("cannot create {}", parent.display()))?;
        // Two runs in one second get -2, -3, ...
        let (path, folder) = (1..)
            .map(|n| if n == 1 { stamp.clone() } else { format!("{stamp}-{n}") })
            .map(|f| (parent.join(&f), f))
            .find(|(p, _)| std::fs::create_dir(p).is_ok())
            .expect("some suffix is free");
        let path = path.canonicalize()?;
        for sub in ["workers", "logs"] {
            std::fs::create_dir_all(path.join(sub))?;
        }
        let suffix: u16 = rand::random();
        let run_id = format!("{scenario}-{}-{suffix:04x}", folder.to_lowercase());
        Ok(RunDir { store: store.canonicalize()?, path, scenario: scenario.into(), started, run_id })
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
        let tmp = self.store.join(format!(".latest-{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&target, &tmp)?;
        std::fs::rename(&tmp, self.store.join("latest"))?;
        Ok(())
    }

    /// Merges every party's events by time into history.jsonl and returns them.
    /// A truncated last line (a party killed mid-write) is dropped with a warning.
    pub fn merge_history(&self) -> anyhow::Result<(Vec<Event>, Vec<String>)> {
        let mut sources = vec![self.resource_events(), self.nemesis_events()];
        let mut workers: Vec<PathBuf> =
            std::fs::read_dir(self.path.join("workers"))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
        workers.sort();
        sources.extend(workers.into_iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")));
        let mut events = vec![];
        let mut warnings = vec![];
        for path in sources.iter().filter(|p| p.exists()) {
            let parsed = checker::parse::read_history_file(path)?;
            warnings.extend(parsed.warnings.into_iter().map(|w| format!("{}: {w}", path.display())));
            events.extend(parsed.events);
        }
        // Stable: events of one party with equal times keep their order.
        events.sort_by_key(|e| e.time);
        for (i, e) in events.iter_mut().enumerate() {
            e.index = i as u64;
        }
        let mut out = String::new();
        for e in &events {
            out.push_str(&serde_json::to_string(e)?);
            out.push('\n');
        }
        std::fs::write(self.file("history.jsonl"), out)?;
        Ok((events, warnings))
    }
}
