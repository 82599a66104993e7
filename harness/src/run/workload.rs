//! The live part of a run: provisioning, the faults due at 0 ms, the clients, the workload with
//! the nemesis, and its end. Whatever ends the workload (its time limit, an error, Ctrl-C or
//! SIGTERM through `stop`), every active fault is healed before anything else, and the clients'
//! fates are recorded.

use super::provision::{self, PROJECT_MOUNT, RUN_MOUNT};
use super::workers::Workers;
use super::{RunContext, WorkloadRecord};
use crate::client_program::{Capability, ProgramSpec};
use crate::event_log::EventLog;
use crate::events::{Event, EventSink, FaultChange, Stage};
use crate::faults::{Fault, FaultContext};
use crate::live_history::LiveHistory;
use crate::nemesis::{EpisodeTimings, Nemesis};
use crate::resource::{postgres_table, ResourceKind};
use crate::schedule;
use crate::worker::WorkerConfig;
use anyhow::Context;
use bollard::Docker;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Set to the signal's name when the run is to stop now (Ctrl-C, SIGTERM).
pub type Stop = watch::Receiver<Option<&'static str>>;

/// Err only when the run failed before its first fault (provisioning); a later error is the
/// record's `error`, after the faults were healed and the clients' fates recorded.
pub async fn execute(docker: Docker, ctx: Arc<RunContext>, events: EventSink, mut stop: Stop) -> anyhow::Result<WorkloadRecord> {
    let s = &ctx.loaded.scenario;
    ctx.stages.enter(&events, Stage::Provision);
    let provisioned = tokio::select! {
        p = provision::provision(docker, &ctx, &events) => p?,
        signal = stopped(&mut stop) => anyhow::bail!("interrupted by {signal} while provisioning"),
    };
    let (cluster, backend) = (&provisioned.cluster, provisioned.backend.as_ref());

    let limit_ms = s.time_limit_secs * 1000;
    let nodes = backend.node_count() as u32;
    let plan = schedule::plan(&s.nemesis, s.clients, nodes, limit_ms, ctx.seed);
    // One fault of each kind the plan holds, for the preflight.
    let mut kinds: Vec<Fault> = vec![];
    for p in plan.steps.iter().chain(plan.episodes.iter().flatten()) {
        if !kinds.iter().any(|k| k.name() == p.fault.name()) {
            kinds.push(p.fault.clone());
        }
    }
    let mut record = WorkloadRecord::default();
    let round_ms = s.workload.work_ms.max + s.workload.think_ms + 2 * s.workload.op_timeout_ms;
    let timings = EpisodeTimings::from_stuck_bound(s.stuck_bound().as_millis() as u64, round_ms);
    let log = EventLog::create(&ctx.dir.nemesis_events())?;
    let mut nemesis = Nemesis::new(plan, timings, log, ctx.clock, ctx.seed, s.clients, nodes);
    let workload_start = ctx.clock.now();
    let stop_at = workload_start + limit_ms * 1_000_000;
    let template = WorkerConfig {
        process: 0,
        // Set per client by Workers::start.
        client: 0,
        t0_ns: ctx.clock.t0_ns,
        stop_at,
        backend: backend.client_config(cluster),
        lock: s.lock.clone(),
        workload: s.workload.clone(),
        resource: provisioned.resource,
        resource_params: s.resource.clone(),
        // Set per process by Workers::start.
        resource_proof: String::new(),
        egress: None,
        events: RUN_MOUNT.into(),
        seed: ctx.seed,
        program: s.client.command.clone().map(|command| ProgramSpec {
            command,
            dir: PROJECT_MOUNT.into(),
            as_nobody: true,
            // Set per client by Workers::start.
            client: String::new(),
            config: serde_json::Value::Null,
            backend: s.backend.name().into(),
            lock: serde_json::to_value(&s.lock).expect("lock parameters serialise"),
            needs: program_needs(s, backend),
        }),
    };
    let workers = Workers::new(cluster, &ctx, template, s.clients);
    let fault_ctx = FaultContext { cluster, backend, clients: &workers };
    let mut live = LiveHistory::new();

    // From the first fault on, whatever happens, the faults are healed below.
    let asked_to_end = std::sync::atomic::AtomicBool::new(false);
    let result: anyhow::Result<()> = async {
        ctx.stages.enter(&events, Stage::Clients);
        // A fault this machine cannot inject refuses the run before any client starts.
        for kind in &kinds {
            kind.action().preflight(&fault_ctx).await?;
        }
        // Steps at 0 ms (e.g. a partition for the whole run) are in place before any client
        // starts: a client must not win its first grant on the far side of a partition.
        nemesis.set_workload_start(workload_start);
        for change in nemesis.tick(&fault_ctx, &live, 0).await? {
            report_fault(&events, &mut record, change);
        }
        workers.start_all().await?;
        ctx.stages.enter(&events, Stage::Workload);
        let mut last_state_check = Instant::now();
        loop {
            let now = ctx.clock.now();
            if now >= stop_at || stop.borrow().is_some() {
                return Ok(());
            }
            if nemesis.is_done() {
                // The episodes have shown what they could: the clients finish their rounds.
                workers.ask_to_end().await?;
                asked_to_end.store(true, std::sync::atomic::Ordering::Relaxed);
                return Ok(());
            }
            for (process, member, file) in workers.take_started() {
                live.add(process, &member, file);
            }
            let elapsed_ms = (now - workload_start) / 1_000_000;
            live.poll();
            let mut killed_a_client = false;
            for change in nemesis.tick(&fault_ctx, &live, elapsed_ms).await? {
                killed_a_client |= change.fault == "kill" && change.target.starts_with("client-");
                report_fault(&events, &mut record, change);
            }
            // A client killed by a fault is dead at once; others are looked for every 2 s.
            if killed_a_client || last_state_check.elapsed() > Duration::from_secs(2) {
                last_state_check = Instant::now();
                for process in workers.find_dead(&events, |name| nemesis.is_killing(name)).await? {
                    live.forget(process);
                }
            }
            events.emit(Event::Workload { elapsed_ms, total_ms: limit_ms });
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                _ = stop.changed() => {}
            }
        }
    }
    .await;

    // Heal before anything else, whatever happened: a stopped worker must not stay stopped.
    ctx.stages.enter(&events, Stage::Stop);
    // A step due at the time limit or later was past the end of this run (e.g. a shortened
    // --time-limit), not a fault that failed to happen.
    let ended_ms = (ctx.clock.now().saturating_sub(workload_start) / 1_000_000).min(limit_ms);
    for change in nemesis.heal_all(&fault_ctx, ended_ms).await? {
        report_fault(&events, &mut record, change);
    }
    record.not_applied = nemesis.not_applied().to_vec();
    let interrupted = stop.borrow().is_some();
    record.workers = if interrupted || result.is_err() {
        workers.stop_now().await?
    } else {
        let w = &s.workload;
        let grace = Duration::from_millis(s.lock.acquire_timeout_ms + w.work_ms.max + 2 * w.op_timeout_ms + w.think_ms + 5000);
        // A client started again just before the ask (its kill healed) may not have listened
        // yet: ask again while they finish (it is idempotent).
        let asking_again = async {
            loop {
                tokio::time::sleep(Duration::from_secs(2)).await;
                if asked_to_end.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = workers.ask_to_end().await;
                }
            }
        };
        tokio::select! {
            finished = workers.finish(grace) => finished?,
            never = asking_again => never,
        }
    };
    // A client program found unusable, or a client that died with no fault on it, while the
    // clients finished ends the run as one found during the workload does.
    let result = match (result, workers.first_failed().await) {
        (Ok(()), Some(failed)) => Err(failed.into()),
        (result, _) => result,
    };
    // A backend that keeps the protected resource itself (Postgres xact), and the Postgres table
    // resource, hand over their log now, before teardown, as the resource's records.
    let records = match s.resource.kind {
        ResourceKind::Postgres => postgres_table::records(cluster, "resource").await.map(Some),
        ResourceKind::Ledger => backend.resource_records(cluster).await.context("reading the backend's resource log"),
    };
    match records {
        Ok(Some(events)) => {
            let mut log = EventLog::create(&ctx.dir.resource_events())?;
            for event in events {
                log.append(event)?;
            }
        }
        Ok(None) => {}
        // The workload's own error says more than a resource that could not be read after it.
        Err(e) if result.is_err() => record.warnings.push(format!("{e:#}")),
        Err(e) => return Err(e),
    }
    record.error = result.err().map(|e| super::RunError::of(&e));
    Ok(record)
}

/// What the scenario needs of a client program beyond acquire and release.
fn program_needs(s: &crate::scenario::Scenario, backend: &dyn crate::lock_backends::BackendSetup) -> Vec<Capability> {
    let mut needs = vec![];
    if s.lock.renew_ms > 0 {
        needs.push(Capability::Renew);
    }
    if s.workload.honour_session_loss {
        needs.push(Capability::Session);
    }
    if backend.keeps_its_resource() {
        needs.push(Capability::Transactional);
    }
    needs
}

/// Resolves with the signal's name once the run is asked to stop.
async fn stopped(stop: &mut Stop) -> &'static str {
    loop {
        if let Some(signal) = *stop.borrow() {
            return signal;
        }
        if stop.changed().await.is_err() {
            // No one can ask any more: never.
            std::future::pending::<()>().await;
        }
    }
}

fn report_fault(events: &EventSink, record: &mut WorkloadRecord, change: FaultChange) {
    if change.error.is_some() {
        record.warnings.push(change.to_string());
    }
    events.emit(Event::Fault(change));
}
