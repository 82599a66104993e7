//! `lockchaos clean`: finishing the runs whose lockchaos process is gone (`kill -9`, a crash),
//! as their own ending would have: wake what a pause stopped, stop and remove their containers
//! and networks, merge every party's events into history.jsonl, check them, and write
//! results.json (interrupted, so never `safe`) and report.html into the run folder.
//!
//! Only a SIGSTOP outlives its run's lockchaos here: every other fault lives inside the run's
//! containers (iptables rules and netem in the nodes' network namespaces, libfaketime's offset
//! file and a strobe's loop in the node) and ends when they are removed. A stopped process would
//! die with its container too, but it is woken first, as a run's own heal does. Nodes on hosts
//! are healed by orphans_on_hosts.rs (`clean --nodes-file`).
//!
//! A run is found by its `lockchaos.run` label; its folder by its `lockchaos.run_dir` label, or
//! for runs made before that label, by the bind mount of the folder (the one holding run.json)
//! in any of its containers. A run found only by a network of that age has no known folder: its
//! network is removed and nothing is written.

use crate::containers::{teardown, Role, CONTROLLER_LABEL, NAME_LABEL, POOL_LABEL, ROLE_LABEL, RUN_DIR_LABEL, RUN_LABEL};
use crate::run_store::{self, RunDir};
use crate::run_verdict;
use bollard::exec::{StartExecOptions, StartExecResults};
use bollard::models::{ContainerSummary, ContainerSummaryStateEnum, ExecConfig};
use bollard::query_parameters::{KillContainerOptions, ListContainersOptions, ListNetworksOptions, TopOptions};
use bollard::Docker;
use futures_util::StreamExt;
use results::{Outcome, RunResults, WorkerFate, WorkerStatus};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// One run that `clean` found: its containers and networks share its run id.
#[derive(Debug, Default)]
struct FoundRun {
    containers: Vec<ContainerSummary>,
    /// Labels of each of its networks.
    networks: Vec<HashMap<String, String>>,
}

impl FoundRun {
    fn labels(&self) -> impl Iterator<Item = &HashMap<String, String>> {
        self.containers.iter().filter_map(|c| c.labels.as_ref()).chain(&self.networks)
    }

    /// Whether the lockchaos process that runs it is alive. Items without a controller label
    /// (made before it existed) count as left behind.
    fn live(&self) -> bool {
        self.labels().any(|l| l.get(CONTROLLER_LABEL).is_some_and(|c| crate::containers::controller_alive(c)))
    }

    /// A warm pool's nodes and network, not a run.
    fn is_pool(&self) -> bool {
        self.labels().any(|l| l.contains_key(POOL_LABEL))
    }

    /// The run folder: the label, else the bind mount that holds run.json.
    fn folder(&self) -> Option<PathBuf> {
        if let Some(dir) = self.labels().find_map(|l| l.get(RUN_DIR_LABEL)) {
            return Some(PathBuf::from(dir));
        }
        let mounts = self.containers.iter().flat_map(|c| c.mounts.iter().flatten());
        mounts.filter_map(|m| m.source.as_deref()).map(PathBuf::from).find(|p| p.join("run.json").is_file())
    }
}

/// What became of one run.
#[derive(Debug)]
pub struct CleanedRun {
    pub run_id: String,
    /// Its lockchaos process is still running (only with `all`): that process writes its results.
    pub live: bool,
    /// Members whose processes were stopped (SIGSTOP) and were woken.
    pub woken: Vec<String>,
    pub removed: teardown::Removed,
    pub folder: Option<PathBuf>,
    pub finish: Finish,
}

#[derive(Debug)]
pub enum Finish {
    /// results.json and report.html written; history.jsonl merged.
    Finished { outcome: Outcome },
    /// The folder had results.json already (its run got as far as checking).
    HadResults,
    /// Nothing written: why.
    NotWritten(String),
    /// Its lockchaos process is alive (`clean --all`): it sees its containers go and writes
    /// its own results.
    LeftToItsProcess,
    /// A warm pool of nodes, no run: nothing to write (its runs' folders are their own).
    Pool,
}

#[derive(Debug, Default)]
pub struct CleanReport {
    pub runs: Vec<CleanedRun>,
    /// Runs left alone because their lockchaos process is still running.
    pub live_left: Vec<String>,
    /// What could not be done (a container that would not go, results that could not be written).
    pub errors: Vec<String>,
}

/// Finishes every run whose lockchaos process is gone, or with `all` stops every run.
pub async fn clean(docker: &Docker, all: bool) -> anyhow::Result<CleanReport> {
    let mut report = CleanReport::default();
    for (run_id, found) in find_runs(docker).await? {
        let live = found.live();
        if live && !all {
            report.live_left.push(run_id);
            continue;
        }
        let cleaned = finish_run(docker, &run_id, &found, live, &mut report.errors).await;
        report.runs.push(cleaned);
    }
    Ok(report)
}

async fn find_runs(docker: &Docker) -> anyhow::Result<BTreeMap<String, FoundRun>> {
    let filters = HashMap::from([("label".to_string(), vec![RUN_LABEL.to_string()])]);
    let mut runs: BTreeMap<String, FoundRun> = BTreeMap::new();
    let opts = ListContainersOptions { all: true, filters: Some(filters.clone()), ..Default::default() };
    for c in docker.list_containers(Some(opts)).await? {
        let Some(run_id) = c.labels.as_ref().and_then(|l| l.get(RUN_LABEL)).cloned() else { continue };
        runs.entry(run_id).or_default().containers.push(c);
    }
    for n in docker.list_networks(Some(ListNetworksOptions { filters: Some(filters) })).await? {
        let labels = n.labels.unwrap_or_default();
        let Some(run_id) = labels.get(RUN_LABEL).cloned() else { continue };
        runs.entry(run_id).or_default().networks.push(labels);
    }
    Ok(runs)
}

async fn finish_run(docker: &Docker, run_id: &str, found: &FoundRun, live: bool, errors: &mut Vec<String>) -> CleanedRun {
    let woken = wake_stopped(docker, &found.containers).await;
    let workers = worker_fates(docker, &found.containers).await;
    if found.is_pool() {
        let removed = teardown::remove_labelled(docker, Some(run_id), None).await.unwrap_or_else(|e| {
            errors.push(format!("{run_id}: {e:#}"));
            teardown::Removed::default()
        });
        let pool_dir = found.folder();
        if let Some(dir) = pool_dir.as_ref().filter(|_| !live) {
            let _ = std::fs::remove_dir_all(dir);
        }
        let finish = if live { Finish::LeftToItsProcess } else { Finish::Pool };
        return CleanedRun { run_id: run_id.to_string(), live, woken, removed, folder: None, finish };
    }
    let folder = found.folder();
    let usable = folder.as_ref().filter(|f| f.join("run.json").is_file());
    let logs = usable.map(|folder| folder.join("logs"));
    let removed = match teardown::remove_labelled(docker, Some(run_id), logs.as_deref()).await {
        Ok(removed) => removed,
        Err(e) => {
            errors.push(format!("{run_id}: {e:#}"));
            teardown::Removed::default()
        }
    };
    let finish = match (live, usable, &folder) {
        (true, _, _) => Finish::LeftToItsProcess,
        (false, Some(folder), _) if folder.join("results.json").exists() => Finish::HadResults,
        (false, Some(folder), _) => match write_results(folder, workers, &woken) {
            Ok(outcome) => Finish::Finished { outcome },
            Err(e) => {
                errors.push(format!("{run_id}: {}: {e:#}", folder.display()));
                Finish::NotWritten(format!("{e:#}"))
            }
        },
        (false, None, Some(folder)) => Finish::NotWritten(format!("its run folder {} is gone (or has no run.json)", folder.display())),
        (false, None, None) => {
            Finish::NotWritten(format!("no run folder known (no {RUN_DIR_LABEL} label and no container left to find it by)"))
        }
    };
    CleanedRun { run_id: run_id.to_string(), live, woken, removed, folder, finish }
}

/// Wakes every stopped process of the run's running containers (SIGCONT to PID 1, which is a
/// worker's client, and to every other process: a node's server) and unpauses paused ones.
/// Returns the members that had a stopped process. Best effort: the containers are removed next.
async fn wake_stopped(docker: &Docker, containers: &[ContainerSummary]) -> Vec<String> {
    let mut woken = vec![];
    for c in containers {
        let (Some(id), Some(state)) = (c.id.as_deref(), c.state) else { continue };
        let name = c.labels.as_ref().and_then(|l| l.get(NAME_LABEL)).cloned().unwrap_or_else(|| id.chars().take(12).collect());
        if state == ContainerSummaryStateEnum::PAUSED {
            let _ = docker.unpause_container(id).await;
            woken.push(name.clone());
        }
        if !matches!(state, ContainerSummaryStateEnum::RUNNING | ContainerSummaryStateEnum::PAUSED) {
            continue;
        }
        // `ps` state T = stopped. When ps cannot say, wake the container anyway (SIGCONT to a
        // running process does nothing), without claiming it was stopped.
        let stopped = docker.top_processes(id, Some(TopOptions { ps_args: "-o pid,stat".into() })).await.ok().map(|top| {
            let column = top.titles.unwrap_or_default().iter().position(|t| t == "STAT");
            top.processes.unwrap_or_default().iter().any(|p| column.and_then(|c| p.get(c)).is_some_and(|stat| stat.starts_with('T')))
        });
        if stopped == Some(false) {
            continue;
        }
        let _ = docker.kill_container(id, Some(KillContainerOptions { signal: "SIGCONT".into() })).await;
        exec_quietly(docker, id, &["/bin/kill", "-CONT", "-1"]).await;
        if stopped == Some(true) && !woken.contains(&name) {
            woken.push(name);
        }
    }
    woken
}

/// Runs a command in a container and waits for it to end, ignoring its outcome.
async fn exec_quietly(docker: &Docker, id: &str, cmd: &[&str]) {
    let config = ExecConfig {
        cmd: Some(cmd.iter().map(|s| s.to_string()).collect()),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        ..Default::default()
    };
    let Ok(exec) = docker.create_exec(id, config).await else { return };
    if let Ok(StartExecResults::Attached { mut output, .. }) =
        docker.start_exec(&exec.id, Some(StartExecOptions { detach: false, ..Default::default() })).await
    {
        while let Some(Ok(_)) = output.next().await {}
    }
}

/// Each worker container's fate: exited 0 = finished, exited otherwise = died, still running =
/// killed (clean stops it).
async fn worker_fates(docker: &Docker, containers: &[ContainerSummary]) -> Vec<WorkerStatus> {
    let mut workers = vec![];
    for c in containers {
        let labels = c.labels.clone().unwrap_or_default();
        if labels.get(ROLE_LABEL).map(String::as_str) != Some(Role::Worker.label()) {
            continue;
        }
        let name = labels.get(NAME_LABEL).cloned().unwrap_or_default();
        let process = name.strip_prefix("client-").and_then(|k| k.parse().ok()).unwrap_or(0);
        let state = match c.id.as_deref() {
            Some(id) => docker.inspect_container(id, None).await.ok().and_then(|i| i.state),
            None => None,
        };
        let running = state.as_ref().and_then(|s| s.running).unwrap_or(false);
        let exit_code = state.and_then(|s| s.exit_code).filter(|_| !running);
        let status = match exit_code {
            _ if running => WorkerFate::Killed,
            Some(0) => WorkerFate::Finished,
            _ => WorkerFate::Died,
        };
        workers.push(WorkerStatus { name, process, status, exit_code, died_at_ms: None });
    }
    workers.sort_by_key(|w| w.process);
    workers
}

/// Merges, checks and writes results.json (interrupted) and report.html for a run whose
/// lockchaos is gone, and rewrites its store's index.
fn write_results(folder: &Path, workers: Vec<WorkerStatus>, woken: &[String]) -> anyhow::Result<Outcome> {
    let dir = RunDir::open(folder)?;
    let inputs = run_store::read_inputs(&dir.path)?;
    let (events, mut warnings) = dir.merge_history()?;
    let check = checker::check(&events, &run_verdict::check_options(&events, run_verdict::stuck_bound(&inputs.effective)));
    let (not_applied, refused_requests) = (skipped_faults(&events), run_verdict::refused(&dir.path));
    // Interrupted: what it did not record might have broken the lock.
    let ending = run_verdict::RunEnding {
        cut_short: Some(run_verdict::CutShort::Interrupted),
        refused_requests: !refused_requests.is_empty(),
        faults_not_applied: !not_applied.is_empty(),
    };
    let woke = if woken.is_empty() { String::new() } else { format!(", woke {} (stopped)", woken.join(", ")) };
    warnings.push(format!(
        "its lockchaos process was gone before the run ended (killed?); `lockchaos clean` finished it at {}{woke} and stopped its containers",
        chrono::Utc::now().to_rfc3339()
    ));
    let e = inputs.effective;
    let claims = e.claims.implied_by(e.expect).check(&check);
    let verdict = ending.verdict(&check, e.expect, &claims);
    let results = RunResults {
        scenario: inputs.scenario,
        description: e.description,
        matches_expectation: verdict.matches_expectation,
        expect: e.expect,
        outcome: verdict.outcome,
        run_id: inputs.run_id,
        backend: e.backend,
        seed: inputs.seed,
        clients: e.clients,
        time_limit_secs: e.time_limit_secs,
        started_at: inputs.started_at,
        // As far as its record goes: the last event any party wrote.
        duration_secs: events.last().map(|e| e.time as f64 / 1e9).unwrap_or(0.0),
        interrupted: true,
        workers,
        warnings,
        not_applied,
        refused_requests,
        unknown_cause: verdict.unknown_cause,
        properties: check,
        claims,
    };
    run_verdict::write(&dir, &results, &events)?;
    for e in run_store::write_index(&dir.store)? {
        eprint_line!("warning: {}/index.html leaves out a run: {e}", dir.store.display());
    }
    Ok(verdict.outcome)
}

/// The steps the nemesis recorded as skipped before the run was cut short (the rest of what it
/// knew went with its process).
fn skipped_faults(events: &[checker::Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| results::FaultPhase::of_event(e) == Some(results::FaultPhase::Skipped))
        .map(|e| {
            format!("{} on {} did not take effect: {}", e.f, e.node.as_deref().unwrap_or("?"), e.error.as_deref().unwrap_or("skipped"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::MountPoint;

    fn container(labels: &[(&str, &str)], mounts: &[&Path]) -> ContainerSummary {
        ContainerSummary {
            labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            mounts: Some(mounts.iter().map(|m| MountPoint { source: Some(m.display().to_string()), ..Default::default() }).collect()),
            ..Default::default()
        }
    }

    #[test]
    fn a_run_is_live_only_while_a_controller_it_names_runs() {
        let me = crate::containers::controller_id();
        let dead = FoundRun { containers: vec![container(&[(CONTROLLER_LABEL, "4194999:1")], &[])], networks: vec![] };
        let unlabelled = FoundRun { containers: vec![container(&[], &[])], networks: vec![] };
        let live = FoundRun { containers: vec![], networks: vec![HashMap::from([(CONTROLLER_LABEL.to_string(), me)])] };
        assert!(!dead.live() && !unlabelled.live() && live.live());
    }

    #[test]
    fn the_folder_is_the_label_else_the_mount_holding_run_json() {
        let tmp = tempfile::tempdir().unwrap();
        let (run, bin) = (tmp.path().join("store/demo/20260101T000000Z"), tmp.path().join("bin"));
        std::fs::create_dir_all(&run).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(run.join("run.json"), "{}").unwrap();
        let labelled = FoundRun {
            containers: vec![container(&[], &[&bin, &run])],
            networks: vec![HashMap::from([(RUN_DIR_LABEL.to_string(), "/elsewhere/run".to_string())])],
        };
        assert_eq!(labelled.folder(), Some(PathBuf::from("/elsewhere/run")));
        let older = FoundRun { containers: vec![container(&[], &[&bin, &run.join("logs"), &run])], networks: vec![] };
        assert_eq!(older.folder(), Some(run));
        let network_only = FoundRun { containers: vec![], networks: vec![HashMap::new()] };
        assert_eq!(network_only.folder(), None);
    }
}
