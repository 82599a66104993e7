//! Provisioning and the live workload: nodes, resource, backend, workers, nemesis, stop.

use super::{RunContext, WorkloadRecord};
use crate::containers::{Cluster, ContainerSpec, Role};
use crate::event_log::EventLog;
use crate::events::FaultChange;
use crate::events::{Event, EventSink, Stage};
use crate::faults::FaultContext;
use crate::live_history::LiveHistory;
use crate::nemesis::Nemesis;
use crate::node_image::IMAGE;
use crate::resource::postgres_table;
use crate::resource::ResourceKind;
use crate::schedule;
use crate::wait::{self, Probe};
use crate::worker::WorkerConfig;
use anyhow::{bail, Context};
use bollard::Docker;
use results::{WorkerFate, WorkerStatus};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const RESOURCE_PORT: u16 = 7000;
const BACKEND_START_LIMIT: Duration = Duration::from_secs(120);
const BIN: &str = "/usr/local/bin/lockchaos";
/// The run folder inside every container.
const RUN_MOUNT: &str = "/lockchaos/run";

pub async fn execute(docker: Docker, ctx: Arc<RunContext>, events: EventSink) -> anyhow::Result<WorkloadRecord> {
    let s = &ctx.loaded.scenario;
    events.emit(Event::Stage(Stage::Provision));
    let mut cluster = Cluster::create(docker, &ctx.dir.run_id, IMAGE, ctx.seed).await?;
    let backend = s.backend_setup();
    let binds = vec![
        (ctx.exe.clone(), BIN.to_string(), true),
        (ctx.dir.path.clone(), RUN_MOUNT.to_string(), false),
        (ctx.dir.path.join("logs"), "/lockchaos/logs".to_string(), false),
    ];
    let spec = |name: String, role: Role, cmd: Vec<String>| ContainerSpec {
        host_octet: Cluster::host_octet(&name).expect("names follow the addressing scheme"),
        name,
        role,
        cmd,
        // LOCKCHAOS_LOG sets the containers' log filter (default: info), e.g. for a client's
        // per-node replies at debug level.
        env: vec![format!("RUST_LOG={}", std::env::var("LOCKCHAOS_LOG").unwrap_or_else(|_| "info".into()))],
        binds: binds.clone(),
        net_admin: role == Role::Node,
    };
    for i in 1..=backend.node_count() {
        let cmd = vec!["sleep".into(), "infinity".into()];
        cluster.start(spec(format!("n{i}"), Role::Node, cmd)).await?;
    }
    check_binary_runs_in_image(&cluster).await?;

    let resource_kind = s.resource.kind;
    let resource_cmd = match resource_kind {
        ResourceKind::Postgres => vec!["sleep".into(), "infinity".into()],
        ResourceKind::Ledger => ledger_cmd(ctx.as_ref()),
    };
    let resource = cluster.start(spec("resource".into(), Role::Resource, resource_cmd)).await?;
    let resource_port = match resource_kind {
        ResourceKind::Postgres => {
            postgres_table::start(&cluster, "resource").await.context("starting the resource's Postgres")?;
            postgres_table::PORT
        }
        ResourceKind::Ledger => RESOURCE_PORT,
    };
    // A server that never answers (a commit waiting for a standby that is not there) must not
    // hang the run: setup has a deadline.
    tokio::time::timeout(BACKEND_START_LIMIT, backend.start(&cluster))
        .await
        .map_err(|_| anyhow::anyhow!("no answer within {BACKEND_START_LIMIT:?}"))
        .and_then(|r| r)
        .with_context(|| format!("starting the {} backend", s.backend.name()))?;
    wait_for_port(&cluster, "resource", resource_port).await?;

    let limit_ms = s.time_limit_secs * 1000;
    let mut record = WorkloadRecord::default();
    let plan = schedule::plan(&s.nemesis, s.clients, backend.node_count() as u32, limit_ms, ctx.seed);
    // One fault of each kind the plan holds, for the preflight.
    let mut kinds: Vec<crate::faults::Fault> = vec![];
    for p in &plan {
        if !kinds.iter().any(|k| k.name() == p.fault.name()) {
            kinds.push(p.fault.clone());
        }
    }
    let mut nemesis = Nemesis::new(plan, EventLog::create(&ctx.dir.nemesis_events())?, ctx.clock);
    let mut live = LiveHistory::new((1..=s.clients as u64).map(|k| (k, ctx.dir.worker_events(k))));
    // Steps at 0 ms (e.g. a partition for the whole run) are in place before any client starts:
    // a client must not win its first grant on the far side of a partition.
    {
        let fault_ctx = FaultContext { cluster: &cluster, backend: backend.as_ref() };
        // A fault this machine cannot inject refuses the run before any client starts.
        for kind in &kinds {
            kind.action().preflight(&fault_ctx).await?;
        }
        for change in nemesis.tick(&fault_ctx, &live, 0).await? {
            report_fault(&events, &mut record, change);
        }
    }
    let workload_start = ctx.clock.now();
    let stop_at = workload_start + limit_ms * 1_000_000;
    nemesis.set_workload_start(workload_start);
    let client_config = backend.client_config(&cluster);
    for k in 1..=s.clients as u64 {
        let config = WorkerConfig {
            process: k,
            t0_ns: ctx.clock.t0_ns,
            stop_at,
            backend: client_config.clone(),
            lock: s.lock.clone(),
            workload: s.workload.clone(),
            resource: std::net::SocketAddr::new(resource.ip.into(), resource_port),
            resource_params: s.resource.clone(),
            events: format!("{RUN_MOUNT}/workers/client-{k}.jsonl").into(),
        };
        let file = ctx.dir.path.join("workers").join(format!("client-{k}.config.json"));
        std::fs::write(&file, serde_json::to_vec_pretty(&config)?)?;
        let cmd = vec![BIN.into(), "worker".into(), "--config".into(), format!("{RUN_MOUNT}/workers/client-{k}.config.json")];
        cluster.start(spec(format!("client-{k}"), Role::Worker, cmd)).await?;
    }

    events.emit(Event::Stage(Stage::Workload));
    let fault_ctx = FaultContext { cluster: &cluster, backend: backend.as_ref() };
    let mut died: BTreeMap<u64, WorkerStatus> = BTreeMap::new();
    let mut last_state_check = Instant::now();
    let result: anyhow::Result<()> = async {
        loop {
            let now = ctx.clock.now();
            if now >= stop_at {
                return Ok(());
            }
            let elapsed_ms = (now - workload_start) / 1_000_000;
            live.poll();
            for change in nemesis.tick(&fault_ctx, &live, elapsed_ms).await? {
                report_fault(&events, &mut record, change);
            }
            if last_state_check.elapsed() > Duration::from_secs(2) {
                last_state_check = Instant::now();
                find_dead_workers(&cluster, &ctx, s.clients as u64, &mut died, &events).await?;
            }
            events.emit(Event::Workload { elapsed_ms, total_ms: limit_ms });
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    .await;

    // Heal before anything else, whatever happened: a stopped worker must not stay stopped.
    events.emit(Event::Stage(Stage::Stop));
    for change in nemesis.heal_all(&fault_ctx).await? {
        report_fault(&events, &mut record, change);
    }
    result?;
    let grace =
        Duration::from_millis(s.lock.acquire_timeout_ms + s.workload.work_ms + 2 * s.workload.op_timeout_ms + s.workload.think_ms + 5000);
    record.workers = wait_for_workers(&cluster, s.clients as u64, died, grace).await?;
    // A backend that keeps the protected resource itself (Postgres xact) hands over its log now,
    // before teardown, as the resource's records.
    // So does a Postgres table resource.
    let records = match resource_kind {
        ResourceKind::Postgres => Some(postgres_table::records(&cluster, "resource").await?),
        ResourceKind::Ledger => backend.resource_records(&cluster).await.context("reading the backend's resource log")?,
    };
    if let Some(events) = records {
        let mut log = EventLog::create(&ctx.dir.resource_events())?;
        for event in events {
            log.append(event)?;
        }
    }
    Ok(record)
}

/// `lockchaos resource` in the resource container, logging into the run folder.
fn ledger_cmd(ctx: &RunContext) -> Vec<String> {
    let s = &ctx.loaded.scenario;
    vec![
        BIN.into(),
        "resource".into(),
        "--listen".into(),
        format!("0.0.0.0:{RESOURCE_PORT}"),
        "--mode".into(),
        format!("{:?}", s.resource.mode).to_lowercase(),
        "--log".into(),
        format!("{RUN_MOUNT}/resource.jsonl"),
        "--t0-ns".into(),
        ctx.clock.t0_ns.to_string(),
    ]
}

fn report_fault(events: &EventSink, record: &mut WorkloadRecord, change: FaultChange) {
    if change.error.is_some() {
        record.warnings.push(change.to_string());
    }
    events.emit(Event::Fault(change));
}

/// A worker that is gone before the workload ends has died; its events so far are kept.
async fn find_dead_workers(
    cluster: &Cluster,
    ctx: &RunContext,
    clients: u64,
    died: &mut BTreeMap<u64, WorkerStatus>,
    events: &EventSink,
) -> anyhow::Result<()> {
    for k in 1..=clients {
        if died.contains_key(&k) {
            continue;
        }
        let (running, exit_code) = cluster.state(&format!("client-{k}")).await?;
        if !running {
            let at = ctx.clock.now() / 1_000_000;
            events.emit(Event::WorkerDied { name: format!("client-{k}"), exit_code, at_ms: at });
            died.insert(
                k,
                WorkerStatus { name: format!("client-{k}"), process: k, status: WorkerFate::Died, exit_code, died_at_ms: Some(at) },
            );
        }
    }
    Ok(())
}

/// Lets every worker finish its round; kills those that do not finish within `grace`.
async fn wait_for_workers(
    cluster: &Cluster,
    clients: u64,
    mut died: BTreeMap<u64, WorkerStatus>,
    grace: Duration,
) -> anyhow::Result<Vec<WorkerStatus>> {
    let deadline = Instant::now() + grace;
    let mut statuses = vec![];
    for k in 1..=clients {
        let name = format!("client-{k}");
        if let Some(status) = died.remove(&k) {
            statuses.push(status);
            continue;
        }
        let status = loop {
            let (running, exit_code) = cluster.state(&name).await?;
            if !running {
                let status = if exit_code == Some(0) { WorkerFate::Finished } else { WorkerFate::Died };
                break WorkerStatus { name: name.clone(), process: k, status, exit_code, died_at_ms: None };
            }
            if Instant::now() > deadline {
                cluster.signal(&name, "SIGKILL").await?;
                break WorkerStatus { name: name.clone(), process: k, status: WorkerFate::Killed, exit_code: None, died_at_ms: None };
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        statuses.push(status);
    }
    Ok(statuses)
}

/// The worker binary is built on the host and mounted into bookworm containers; that needs a host
/// glibc no newer than bookworm's. Say so plainly instead of letting workers die with a loader error.
async fn check_binary_runs_in_image(cluster: &Cluster) -> anyhow::Result<()> {
    let (code, out) = cluster.exec("n1", &[BIN, "--version"]).await?;
    if code != 0 {
        bail!(
            "the host-built lockchaos binary does not run inside {IMAGE} (is the host's glibc newer than Debian bookworm's 2.36? then build lockchaos inside a bookworm container): {}",
            out.trim().lines().next().unwrap_or("")
        );
    }
    Ok(())
}

async fn wait_for_port(cluster: &Cluster, name: &str, port: u16) -> anyhow::Result<()> {
    let probe = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
    let what = format!("{name} listening on port {port}");
    wait::until(&what, Duration::from_secs(15), Duration::from_millis(100), || async {
        let (code, _) = cluster.exec(name, &["bash", "-c", &probe]).await?;
        if code == 0 {
            return Ok(Probe::Ready(()));
        }
        let (running, exit_code) = cluster.state(name).await?;
        if !running {
            let logs = cluster.logs(name).await.unwrap_or_default();
            bail!("{name} exited with code {exit_code:?} before listening on {port}: {}", logs.trim());
        }
        Ok(Probe::NotYet(String::new()))
    })
    .await
}
