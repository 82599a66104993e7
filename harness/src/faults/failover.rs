//! Failover: the backend's own promotion of a replica, away from the target node (Postgres:
//! the primary's server dies and the standby is promoted). Needs the backend's `failover`
//! capability; scenarios on backends without it are refused when loaded.
//!
//! Nothing to heal: after a failover the promoted node is the primary, as in production. A
//! Postgres primary failed away from stays down (bringing it back as a standby needs
//! pg_rewind or a new base backup), and teardown removes it with the rest.

use super::{node_target, BackendView, FaultAction, FaultContext, StepError};
use crate::target::Target;
use serde::{Deserialize, Serialize};

/// No parameters: the target is the node the primary role moves away from.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Failover {}

#[async_trait::async_trait]
impl FaultAction for Failover {
    fn check(&self, target: &Target) -> Result<(), StepError> {
        node_target("failover", target)
    }

    fn check_backend(&self, _target: &Target, backend: &BackendView<'_>) -> Result<(), StepError> {
        backend.setup.failover().map(|_| ()).map_err(|why| ("fault", format!("{} has no failover: {why}", backend.name)))
    }

    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        let failover = ctx.backend.failover().map_err(|why| anyhow::anyhow!("no failover on this backend: {why}"))?;
        let done = failover.failover(ctx.cluster, target).await?;
        tracing::info!(node = %target, "failover: {done}");
        Ok(())
    }

    async fn heal(&self, _ctx: &FaultContext<'_>, _target: &str) -> anyhow::Result<()> {
        Ok(())
    }
}
