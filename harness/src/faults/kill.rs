//! Crash: SIGKILL the backend's server in a node, and start it again when the fault ends, so
//! whatever it kept only in memory (a lock without persistence) is gone. On a client, the whole
//! client dies (its container's PID 1 is the client) and comes back when the fault ends as a
//! new process, as Jepsen's processes do: the history shows the old process's last operations
//! without completions and a new process number from then on.

use super::{FaultAction, FaultContext};
use crate::wait::{self, Probe};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// No parameters: the step's target and duration (until the restart) say it all.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Kill {}

#[async_trait::async_trait]
impl FaultAction for Kill {
    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        if !ctx.is_node(target)? {
            return ctx.cluster.signal(target, "SIGKILL").await;
        }
        ctx.signal_server(target, "KILL").await?;
        // The process must be gone before a restart binds its port again.
        let process = ctx.backend.server_process();
        let what = format!("{process} in {target} gone after SIGKILL");
        wait::until(&what, Duration::from_secs(2), Duration::from_millis(20), || async {
            let (code, _) = ctx.cluster.exec(target, &["pgrep", "-x", process]).await?;
            Ok(if code != 0 { Probe::Ready(()) } else { Probe::NotYet("still running".into()) })
        })
        .await
    }

    async fn heal(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        if ctx.is_node(target)? {
            ctx.backend.start_node(ctx.cluster, target).await
        } else {
            let process = ctx.clients.restart(target).await?;
            tracing::info!(client = %target, process, "killed client started again");
            Ok(())
        }
    }
}
