//! Kill a client's sessions on the server side (Postgres: pg_terminate_backend on every session
//! from the client's address), as an administrator, a connection proxy or a server timeout
//! does. The client process keeps running and learns of it only at its next request; a
//! session-level lock is gone at once. Nothing to heal: the client reconnects by itself.

use super::{Fault, FaultContext, Injection};

pub struct KillSession;

#[async_trait::async_trait]
impl Fault for KillSession {
    async fn inject(&self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<()> {
        if ctx.is_node(&inj.target)? {
            anyhow::bail!("kill-session ends a client's sessions; {} is a node", inj.target);
        }
        let ip = ctx.cluster.planned_ip(&inj.target)?;
        let ended = ctx.backend.kill_sessions(ctx.cluster, ip).await?;
        tracing::info!(client = %inj.target, ended, "server sessions ended");
        Ok(())
    }

    async fn heal(&self, _ctx: &FaultContext<'_>, _inj: &Injection) -> anyhow::Result<()> {
        Ok(())
    }
}
