//! Kill a client's sessions on the server side (Postgres: pg_terminate_backend on every session
//! from the client's address), as an administrator, a connection proxy or a server timeout
//! does. The client process keeps running and learns of it only at its next request; a
//! session-level lock is gone at once. Nothing to heal: the client reconnects by itself.

use super::{BackendView, FaultAction, FaultContext, StepError};
use crate::target::Target;
use serde::{Deserialize, Serialize};

/// No parameters: the target is the client whose sessions end.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KillSession {}

#[async_trait::async_trait]
impl FaultAction for KillSession {
    fn check(&self, target: &Target) -> Result<(), StepError> {
        if target.is_client() {
            Ok(())
        } else {
            Err(("target", "kill-session ends a client's sessions: the target must be a client or holder".into()))
        }
    }

    fn check_backend(&self, _target: &Target, backend: &BackendView<'_>) -> Result<(), StepError> {
        backend.setup.kill_session().map(|_| ()).map_err(|why| ("fault", format!("kill-session is not possible on {}: {why}", backend.name)))
    }

    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        let sessions = ctx.backend.kill_session().map_err(|why| anyhow::anyhow!("no sessions to end on this backend: {why}"))?;
        let ip = ctx.cluster.planned_ip(target)?;
        let ended = sessions.kill_sessions(ctx.cluster, ip).await?;
        tracing::info!(client = %target, ended, "server sessions ended");
        Ok(())
    }

    async fn heal(&self, _ctx: &FaultContext<'_>, _target: &str) -> anyhow::Result<()> {
        Ok(())
    }
}
