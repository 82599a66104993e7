//! One run of one scenario, end to end: provision → workload with faults → stop → teardown →
//! check → report. Teardown happens on every path: normal end, error, panic, Ctrl-C, SIGTERM.

mod finalize;
mod provision;
pub mod stages;
mod workers;
mod workload;

use crate::client_env;
use crate::clock::RunClock;
use crate::containers::docker_api;
use crate::events::{Event, EventSink, Stage};
use crate::hosts::NodesFile;
use crate::node_image;
use crate::node_source::{fresh::FreshContainers, hosts::HostNodes, warm_pool::WarmNodes, warm_pool::WarmPools, NodeSource};
use crate::run_store::RunDir;
use crate::run_verdict::CutShort;
use crate::scenario::LoadedScenario;
use anyhow::Context;
use results::{RunResults, WorkerStatus};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub store: PathBuf,
    pub time_limit_secs: Option<u64>,
    pub seed: Option<u64>,
    pub clients: Option<u32>,
    /// The lockchaos binary mounted into the containers (workers and the ledger run it);
    /// default: this process's own executable.
    pub exe: Option<PathBuf>,
    /// Hosts to run the nodes on, over SSH, in place of node containers (`--nodes-file`).
    pub nodes: Option<Arc<NodesFile>>,
    /// Warm pools the run takes its nodes from, and hands them back to (node_source/), when
    /// its backend can be reset in place; None: fresh containers.
    pub pools: Option<Arc<WarmPools>>,
}

/// Everything fixed before the first container starts.
pub struct RunContext {
    pub loaded: LoadedScenario,
    pub seed: u64,
    pub dir: RunDir,
    pub clock: RunClock,
    /// The host-built binary, mounted read-only into every container.
    pub exe: PathBuf,
    /// When each stage began (run.json `stages`).
    pub stages: stages::StageTimes,
    /// Where the run's nodes come from: fresh containers, a warm pool, or the hosts of a
    /// nodes-file (connected, checked and claimed).
    pub nodes: Arc<dyn NodeSource>,
    /// The key the resource checks workers' requests by (resource/proof.rs).
    pub resource_key: crate::resource::proof::RunKey,
    /// The image the workers run in (the client program's environment, or the node image), and
    /// whether this run built it.
    pub client_env: client_env::Ensured,
}

impl RunContext {
    /// The run as its node source sees it.
    pub fn site(&self) -> crate::node_source::RunSite<'_> {
        crate::node_source::RunSite { dir: &self.dir, exe: &self.exe, seed: self.seed, loaded: &self.loaded }
    }
}

/// What the workload phase observed, for results.json.
#[derive(Default)]
pub struct WorkloadRecord {
    pub workers: Vec<WorkerStatus>,
    pub warnings: Vec<String>,
    /// Planned faults that did not take effect, each naming its step: the outcome is unknown.
    pub not_applied: Vec<String>,
    /// What ended the workload early, after its faults were healed.
    pub error: Option<RunError>,
}

/// What ended a run before its planned end: its words, and whose doing it was (which decides
/// results.json's `unknown_cause`, `run_verdict::RunEnding`).
#[derive(Clone, Debug)]
pub struct RunError {
    pub message: String,
    pub cut_short: CutShort,
}

impl RunError {
    /// A workload's error: a client's when a [`workers::ClientFailed`] is anywhere in its chain,
    /// else the machine's (Docker, a container, a backend that would not come up).
    fn of(e: &anyhow::Error) -> RunError {
        let client = e.chain().any(|cause| cause.is::<workers::ClientFailed>());
        RunError { message: format!("{e:#}"), cut_short: if client { CutShort::ClientFailed } else { CutShort::Infrastructure } }
    }
}

/// A run that got as far as its results. `error`: why it ended early (refused, interrupted,
/// a backend that would not start); its outcome is then never `safe`.
pub struct RunOutcome {
    pub results: RunResults,
    pub dir: PathBuf,
    pub error: Option<String>,
    /// Ctrl-C or SIGTERM ended the run: whoever runs more (a series, a matrix) stops too.
    pub interrupted_by_signal: bool,
}

/// Runs one scenario end to end. Err only when the run could not get as far as a run folder
/// with results (bad overrides, no Docker, no image); every later failure is in the outcome.
pub async fn run(mut loaded: LoadedScenario, opts: RunOptions, events: &EventSink) -> anyhow::Result<RunOutcome> {
    apply_overrides(&mut loaded, &opts);
    crate::scenario::validate_overrides(&loaded)?;
    crate::preflight::check(&loaded)?;
    // The daemon and the image first: no run folder for a run that cannot start.
    let docker = docker_api::connect().await?;
    let image_started = std::time::Instant::now();
    events.emit(Event::Stage(Stage::Image));
    let build_line = |line: &str| events.emit(Event::ImageBuildLine(line.to_string()));
    node_image::ensure_image(&docker, node_image::BuildMethod::Auto, false, &build_line).await?;
    // The client's environment derives from the node image; a failed build starts no run.
    let spec = client_env::EnvSpec::resolve(&loaded.scenario.client, loaded.project_root())
        .map_err(|(field, message)| loaded.error_at(&field, message))?;
    let client_env = client_env::ensure(&docker, spec, loaded.name.as_ref(), &build_line).await?;
    // The hosts next, still before the run folder: a host that cannot serve is one line.
    let exe = match &opts.exe {
        Some(exe) => exe.clone(),
        None => std::env::current_exe()?,
    };
    let nodes: Arc<dyn NodeSource> = match (&opts.nodes, &opts.pools) {
        (Some(file), _) => Arc::new(HostNodes { remote: crate::node_source::hosts::connect(&docker, &loaded, file).await? }),
        (None, Some(pools)) => match WarmNodes::for_run(pools, &loaded, &exe) {
            Some(warm) => Arc::new(warm),
            None => Arc::new(FreshContainers),
        },
        (None, None) => Arc::new(FreshContainers),
    };

    std::fs::create_dir_all(&opts.store).with_context(|| format!("cannot create the store {}", opts.store.display()))?;
    let dir = RunDir::create(&opts.store, &loaded.name)?;
    let seed = loaded.scenario.seed.unwrap_or_else(rand::random);
    let stages = stages::StageTimes::new(Stage::Image, image_started);
    // A host claimed meanwhile by another run: this run's own claims are undone, and its empty
    // folder removed (a run that cannot start leaves no folder).
    if let Err(e) = nodes.claim(&dir, &loaded).await {
        let _ = std::fs::remove_dir_all(&dir.path);
        return Err(e);
    }
    let ctx = Arc::new(RunContext {
        loaded,
        seed,
        dir,
        clock: RunClock::start_now(),
        exe,
        stages,
        nodes,
        resource_key: crate::resource::proof::RunKey::generate(),
        client_env,
    });
    if let Err(e) = finalize::write_inputs(&ctx) {
        let _ = ctx.nodes.release(&docker, &ctx.site(), false).await;
        return Err(e);
    }

    // Ctrl-C or SIGTERM asks the workload to stop: it heals its faults and records the clients
    // before teardown. A second signal does not wait for that.
    let (stop_tx, stop) = tokio::sync::watch::channel(None);
    let mut work = tokio::spawn(workload::execute(docker.clone(), ctx.clone(), events.clone(), stop));
    let mut signal = None;
    let joined = loop {
        tokio::select! {
            joined = &mut work => break Some(joined),
            s = shutdown_signal() => {
                if signal.is_some() {
                    work.abort();
                    let _ = (&mut work).await;
                    break None;
                }
                signal = Some(s);
                let _ = stop_tx.send(Some(s));
            }
        }
    };
    let (record, error) = match joined {
        Some(Ok(Ok(mut record))) => {
            let error = record.error.take();
            (record, error)
        }
        Some(Ok(Err(e))) => (WorkloadRecord::default(), Some(RunError::of(&e))),
        // A bug of lockchaos's own: not the client's doing, so counted with the machine's.
        Some(Err(e)) => {
            (WorkloadRecord::default(), Some(RunError { message: format!("the run panicked: {e}"), cut_short: CutShort::Infrastructure }))
        }
        None => (WorkloadRecord::default(), None),
    };
    // An interruption is the error that matters (whatever failed after it may be its doing); the
    // workload's own, if any, is in its record.
    let error = match signal {
        Some(s) => Some(RunError { message: format!("interrupted by {s}"), cut_short: CutShort::Interrupted }),
        None => error,
    };
    let interrupted = error.is_some();
    // Nodes are handed back for another run only after a run that ended as planned, with every
    // fault healed.
    let vouched = !interrupted && record.warnings.is_empty() && record.not_applied.is_empty();

    ctx.stages.enter(events, Stage::Teardown);
    let released = ctx.nodes.release(&docker, &ctx.site(), vouched).await;
    ctx.stages.enter(events, Stage::Check);
    let results = finalize::check_and_report(&ctx, record, error.as_ref(), events);
    // Where the time went, even when the check could not be written.
    finalize::write_stages(&ctx)?;
    let results = results?;
    released?;
    Ok(RunOutcome { results, dir: ctx.dir.path.clone(), error: error.map(|e| e.message), interrupted_by_signal: signal.is_some() })
}

fn apply_overrides(loaded: &mut LoadedScenario, opts: &RunOptions) {
    let s = &mut loaded.scenario;
    if let Some(t) = opts.time_limit_secs {
        s.time_limit_secs = t;
    }
    if let Some(seed) = opts.seed {
        s.seed = Some(seed);
    }
    if let Some(c) = opts.clients {
        s.clients = c;
    }
}

/// Resolves on the first SIGINT or SIGTERM, naming it.
pub async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT (Ctrl-C)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workers::ClientFailed;

    #[test]
    fn a_workload_error_is_the_clients_by_its_type_wherever_it_is_in_the_chain() {
        let unusable = || ClientFailed::Unusable { client: "client-2".into(), why: "answered outside the protocol".into() };
        let died = ClientFailed::DiedUnfaulted { client: "client-1".into(), exit_code: Some(137), last_words: "it wrote nothing".into() };
        assert_eq!(RunError::of(&unusable().into()).cut_short, CutShort::ClientFailed);
        assert_eq!(RunError::of(&died.into()).cut_short, CutShort::ClientFailed);
        let wrapped = anyhow::Error::from(unusable()).context("the workload");
        let error = RunError::of(&wrapped);
        assert_eq!(error.cut_short, CutShort::ClientFailed);
        assert_eq!(error.message, "the workload: client-2: answered outside the protocol");
        // The same words from anywhere else are the machine's: the type decides, not the text.
        let mimic = anyhow::anyhow!("client-1 died with no fault on it (exit code Some(137)): it wrote nothing");
        assert_eq!(RunError::of(&mimic).cut_short, CutShort::Infrastructure);
        assert_eq!(RunError::of(&anyhow::anyhow!("container n1 did not start")).cut_short, CutShort::Infrastructure);
    }
}
