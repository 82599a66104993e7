//! Provisioning: the run's network and node containers, the protected resource, and the
//! backend's servers, each waited for until it answers.

use super::RunContext;
use crate::containers::{Cluster, ContainerSpec, Role};
use crate::lock_backends::BackendSetup;
use crate::node_image::IMAGE;
use crate::resource::postgres_table;
use crate::resource::proof;
use crate::resource::ResourceKind;
use crate::wait::{self, Probe};
use anyhow::{bail, Context};
use bollard::Docker;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

pub use crate::containers::BIN;
/// The run folder inside the node and resource containers.
pub const RUN_MOUNT: &str = "/lockchaos/run";
/// In a worker's container, all it gets besides the binary: its configuration (read-only), its
/// own event file (written by the worker, as root; a client program runs as nobody), and the
/// project's `clients/` (read-only) under the project folder the program runs in.
pub const WORKER_CONFIG: &str = "/lockchaos/worker.json";
pub const WORKER_EVENTS: &str = "/lockchaos/events.jsonl";
pub use crate::client_env::PROJECT_MOUNT;
const RESOURCE_PORT: u16 = 7000;
const BACKEND_START_LIMIT: Duration = Duration::from_secs(120);

/// A run's containers with its backend's servers and the resource answering.
pub struct Provisioned {
    pub cluster: Cluster,
    pub backend: Box<dyn BackendSetup>,
    /// Where clients reach the protected resource.
    pub resource: SocketAddr,
}

/// A container of this run: the binary and the logs folder mounted (the resource, which keeps
/// the record, also the run folder), the log filter set.
pub fn container_spec(ctx: &RunContext, name: &str, role: Role, cmd: Vec<String>) -> ContainerSpec {
    let mut spec = ContainerSpec::with_binary(name, role, cmd, &ctx.exe, &ctx.dir.path.join("logs"));
    if role == Role::Resource {
        spec.binds.push((ctx.dir.path.clone(), RUN_MOUNT.to_string(), false));
    }
    spec
}

/// A worker's container: the binary, its configuration and its event file, and the project's
/// `clients/` (when there is one); nothing else of the run (docs/client-protocol.md).
pub fn worker_spec(ctx: &RunContext, name: &str, config: &Path, events: &Path) -> ContainerSpec {
    let cmd = vec![BIN.into(), "worker".into(), "--config".into(), WORKER_CONFIG.into()];
    let mut spec = container_spec(ctx, name, Role::Worker, cmd);
    spec.image = Some(ctx.client_env.image().to_string());
    spec.binds = vec![
        (ctx.exe.clone(), BIN.to_string(), true),
        (config.to_path_buf(), WORKER_CONFIG.to_string(), true),
        (events.to_path_buf(), WORKER_EVENTS.to_string(), false),
    ];
    let clients = ctx.loaded.project_root().join("clients");
    if clients.is_dir() {
        spec.binds.push((clients, format!("{PROJECT_MOUNT}/clients"), true));
    }
    spec
}

pub async fn provision(docker: Docker, ctx: &RunContext, events: &crate::events::EventSink) -> anyhow::Result<Provisioned> {
    // A warm pool that fails its check is replaced once by fresh nodes (node_source/).
    match provision_once(docker.clone(), ctx, events).await? {
        Some(provisioned) => Ok(provisioned),
        None => {
            crate::containers::teardown::remove_labelled(&docker, Some(&ctx.dir.run_id), None).await?;
            provision_once(docker, ctx, events).await?.context("fresh nodes could not be vouched for")
        }
    }
}

/// None: the source could not vouch for its nodes (the run's containers so far are to go).
async fn provision_once(docker: Docker, ctx: &RunContext, events: &crate::events::EventSink) -> anyhow::Result<Option<Provisioned>> {
    let s = &ctx.loaded.scenario;
    // The nodes from wherever they come (node_source/): fresh containers still to start, a warm
    // pool's, or hosts.
    let nodes = ctx.nodes.provision(docker, &ctx.site()).await?;
    let cluster = nodes.cluster;
    let backend = s.backend_setup();
    let resource_cmd = match s.resource.kind {
        ResourceKind::Postgres => vec!["sleep".into(), "infinity".into()],
        ResourceKind::Ledger => ledger_cmd(ctx),
    };
    // The containers start together (each is a create and a start of its own, fixed name and
    // address, and Docker does them side by side), and beside them the source makes its nodes
    // clean (a warm pool's reset and check).
    let started = futures_util::future::try_join_all(nodes.to_start.into_iter().map(|spec| cluster.start(spec)));
    let (started, resource, prepared) =
        futures_util::future::join3(started, cluster.start(resource_spec(ctx, resource_cmd)), ctx.nodes.prepare()).await;
    let Ok(servers_started) = prepared else { return Ok(None) };
    let started = started?;
    let resource = resource?;
    // Before any server starts: from here on they reach the run's containers and nothing else.
    let confined = started.iter().chain([&resource]).map(|m| cluster.confine(&m.name));
    futures_util::future::try_join_all(confined).await?;

    ctx.stages.enter(events, crate::events::Stage::Backend);
    // The resource's Postgres (if any) and the backend's servers start side by side too.
    let resource_ready = async {
        match s.resource.kind {
            ResourceKind::Postgres => {
                postgres_table::start(&cluster, "resource", &ctx.resource_key.workers_password())
                    .await
                    .context("starting the resource's Postgres")?;
                Ok::<_, anyhow::Error>(postgres_table::PORT)
            }
            ResourceKind::Ledger => Ok(RESOURCE_PORT),
        }
    };
    // A server that never answers (a commit waiting for a standby that is not there) must not
    // hang the run: setup has a deadline.
    let backend_ready = async {
        if servers_started {
            return Ok(());
        }
        tokio::time::timeout(BACKEND_START_LIMIT, backend.start(&cluster))
            .await
            .map_err(|_| anyhow::anyhow!("no answer within {BACKEND_START_LIMIT:?}"))
            .and_then(|r| r)
            .with_context(|| format!("starting the {} backend", s.backend.name()))
    };
    // The binary's check beside them: it answers long before either, so its plain message wins
    // over a resource that died of the same cause.
    let (resource_port, (), ()) = tokio::try_join!(resource_ready, backend_ready, check_binary_runs_in_image(&cluster))?;
    wait_for_port(&cluster, "resource", resource_port).await?;
    Ok(Some(Provisioned { cluster, backend, resource: SocketAddr::new(resource.ip.into(), resource_port) }))
}

/// The resource's container: the one that holds the run's key (in its environment), to check
/// that each request comes from a worker.
fn resource_spec(ctx: &RunContext, cmd: Vec<String>) -> ContainerSpec {
    let mut spec = container_spec(ctx, "resource", Role::Resource, cmd);
    spec.env.push(format!("{}={}", proof::KEY_ENV, ctx.resource_key.to_hex()));
    spec
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
        "--refused-log".into(),
        format!("{RUN_MOUNT}/{}", crate::resource::refusals::FILE),
        "--t0-ns".into(),
        ctx.clock.t0_ns.to_string(),
    ]
}

/// The worker binary is built on the host and mounted into bookworm containers; that needs a host
/// glibc no newer than bookworm's. Say so plainly instead of letting workers die with a loader error.
async fn check_binary_runs_in_image(cluster: &Cluster) -> anyhow::Result<()> {
    let (code, out) = cluster.exec("resource", &[BIN, "--version"]).await?;
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
