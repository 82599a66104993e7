//! Crash: SIGKILL the backend's server in a node, and start it again when the fault ends, so
//! whatever it kept only in memory (a lock without persistence) is gone. On a worker, the
//! container is killed for good: the run then reports that worker as died.

use super::{Fault, FaultContext, Injection};

pub struct Kill;

#[async_trait::async_trait]
impl Fault for Kill {
    async fn inject(&self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<()> {
        let target = inj.target.as_str();
        if ctx.is_node(target)? {
            ctx.signal_server(target, "KILL").await?;
            // The process must be gone before a restart binds its port again.
            wait_gone(ctx, target).await
        } else {
            ctx.cluster.signal(target, "SIGKILL").await
        }
    }

    async fn heal(&self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<()> {
        let target = inj.target.as_str();
        if ctx.is_node(target)? {
            ctx.backend.start_node(ctx.cluster, target).await
        } else {
            Ok(())
        }
    }
}

async fn wait_gone(ctx: &FaultContext<'_>, node: &str) -> anyhow::Result<()> {
    let process = ctx.backend.server_process();
    for _ in 0..100 {
        let (code, _) = ctx.cluster.exec(node, &["pgrep", "-x", process]).await?;
        if code != 0 {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    anyhow::bail!("{process} in {node} still running 2 s after SIGKILL")
}
