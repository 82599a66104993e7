//! Process pause: SIGSTOP, then SIGCONT when the fault ends. On a worker the signal goes to its
//! container's PID 1, the client itself, so the real client freezes as in a GC pause or a VM
//! steal; on a node it goes to the backend's server process.

use super::{FaultAction, FaultContext};
use serde::{Deserialize, Serialize};

/// No parameters: the step's target and duration say it all.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Pause {}

#[async_trait::async_trait]
impl FaultAction for Pause {
    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        if ctx.is_node(target)? {
            ctx.signal_server(target, "STOP").await
        } else {
            ctx.cluster.signal(target, "SIGSTOP").await
        }
    }

    async fn heal(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        let result = if ctx.is_node(target)? { ctx.signal_server(target, "CONT").await } else { ctx.cluster.signal(target, "SIGCONT").await };
        match result {
            // A container that has exited has nothing left to resume.
            Err(e) if format!("{e:#}").contains("is not running") => Ok(()),
            other => other,
        }
    }
}
