//! Failover: the backend's own promotion of a replica, away from the target node (Sentinel's
//! SENTINEL FAILOVER; Postgres: the primary's server dies and the standby is promoted). An
//! optional backend capability (`BackendSetup::failover`); scenarios on backends without it
//! are refused when loaded.
//!
//! Nothing to heal: after a failover the promoted node is the primary, as in production. A
//! Postgres primary failed away from stays down (bringing it back as a standby needs
//! pg_rewind or a new base backup), and teardown removes it with the rest.

use super::{Fault, FaultContext, Injection};

pub struct Failover;

#[async_trait::async_trait]
impl Fault for Failover {
    async fn inject(&self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<()> {
        if !ctx.is_node(&inj.target)? {
            anyhow::bail!("a failover moves the primary role away from a node, not from {}", inj.target);
        }
        let done = ctx.backend.failover(ctx.cluster, &inj.target).await?;
        tracing::info!(node = %inj.target, "failover: {done}");
        Ok(())
    }

    async fn heal(&self, _ctx: &FaultContext<'_>, _inj: &Injection) -> anyhow::Result<()> {
        Ok(())
    }
}
