//! Crash: SIGKILL the backend's server in a node, and start it again when the fault ends, so
//! whatever it kept only in memory (a lock without persistence) is gone. On `nodes`, every
//! node's server at once and all started again together (a whole-cluster crash and restart:
//! etcd's members then come back from their data directories). On a client, the whole client
//! dies (its container's PID 1 is the client) and comes back when the fault ends as a new
//! process, as Jepsen's processes do: the history shows the old process's last operations
//! without completions and a new process number from then on.

use super::{FaultAction, FaultContext, StepError};
use crate::target::Target;
use crate::wait::{self, Probe};
use futures_util::future::try_join_all;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// No parameters: the step's target and duration (until the restart) say it all.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Kill {}

/// The target `nodes` as the node names it stands for.
fn all_nodes(ctx: &FaultContext<'_>) -> Vec<String> {
    (1..=ctx.backend.node_count()).map(|k| format!("n{k}")).collect()
}

/// SIGKILLs the server in `node` and waits until it is gone.
async fn kill_server(ctx: &FaultContext<'_>, node: &str) -> anyhow::Result<()> {
    ctx.signal_server(node, "KILL").await?;
    // The process must be gone before a restart binds its port again.
    let process = ctx.backend.server_process();
    let what = format!("{process} in {node} gone after SIGKILL");
    wait::until(&what, Duration::from_secs(2), Duration::from_millis(20), || async {
        let (code, _) = ctx.cluster.exec(node, &["pgrep", "-x", process]).await?;
        Ok(if code != 0 { Probe::Ready(()) } else { Probe::NotYet("still running".into()) })
    })
    .await
}

#[async_trait::async_trait]
impl FaultAction for Kill {
    /// Any single client or node, or `nodes`.
    fn check(&self, _target: &Target) -> Result<(), StepError> {
        Ok(())
    }

    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        if target == "nodes" {
            let nodes = all_nodes(ctx);
            try_join_all(nodes.iter().map(|n| kill_server(ctx, n))).await?;
            return Ok(());
        }
        if !ctx.is_node(target)? {
            return ctx.cluster.signal(target, "SIGKILL").await;
        }
        kill_server(ctx, target).await
    }

    async fn heal(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        if target == "nodes" {
            // Together: a member waits for a quorum to call itself healthy.
            let nodes = all_nodes(ctx);
            try_join_all(nodes.iter().map(|n| ctx.backend.start_node(ctx.cluster, n))).await?;
            Ok(())
        } else if ctx.is_node(target)? {
            ctx.backend.start_node(ctx.cluster, target).await
        } else {
            let process = ctx.clients.restart(target).await?;
            tracing::info!(client = %target, process, "killed client started again");
            Ok(())
        }
    }
}
