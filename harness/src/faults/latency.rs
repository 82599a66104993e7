//! Latency: netem on the target node's interface delays every packet it sends by `delay_ms`.
//! Many kernels (this machine's among them) ship without the netem qdisc; `preflight` tries it
//! once in n1 before any client starts and refuses the run with tc's own words, rather than
//! running a scenario whose fault never happened.

use super::{FaultAction, FaultContext, StepError};
use crate::target::Target;
use serde::{Deserialize, Serialize};

/// The interface of a container on the run's bridge network.
const DEV: &str = "eth0";

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    /// Added to every packet the target node sends; at least 1.
    pub delay_ms: u64,
}

/// Why tc could not install netem, turned into the run's refusal.
pub fn unsupported(output: &str) -> String {
    let why = output.trim();
    let hint = if why.contains("Specified qdisc kind is unknown") || why.contains("qdisc kind") {
        "this kernel has no netem qdisc (sch_netem)"
    } else {
        "tc could not add a netem qdisc"
    };
    format!("latency faults are unsupported here: {hint} (`tc qdisc add dev {DEV} root netem` said: {why}); refusing to run a scenario whose fault could not happen")
}

#[async_trait::async_trait]
impl FaultAction for Latency {
    fn detail(&self) -> Option<String> {
        Some(format!("+{} ms", self.delay_ms))
    }

    fn check(&self, target: &Target) -> Result<(), StepError> {
        if !target.is_node() {
            return Err(("target", "latency is added on a node's interface (workers have no NET_ADMIN): the target must be a node".into()));
        }
        if self.delay_ms < 1 {
            return Err(("delay_ms", "a latency fault needs `delay_ms` of at least 1".into()));
        }
        Ok(())
    }

    fn check_on_hosts(&self, _target: &Target, _shared_client_address: bool) -> Result<(), StepError> {
        Err(("fault", "latency is not done on remote hosts (netem on a host's interface could cut lockchaos's own SSH)".into()))
    }

    async fn preflight(&self, ctx: &FaultContext<'_>) -> anyhow::Result<()> {
        let probe = ["tc", "qdisc", "add", "dev", DEV, "root", "netem", "delay", "1ms"];
        let (code, out) = ctx.cluster.exec("n1", &probe).await?;
        if code != 0 {
            anyhow::bail!(unsupported(&out));
        }
        ctx.cluster.exec_ok("n1", &["tc", "qdisc", "del", "dev", DEV, "root"]).await.map(|_| ())
    }

    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        let delay = format!("{}ms", self.delay_ms);
        ctx.cluster.exec_ok(target, &["tc", "qdisc", "add", "dev", DEV, "root", "netem", "delay", &delay]).await.map(|_| ())
    }

    async fn heal(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        let (code, out) = ctx.cluster.exec(target, &["tc", "qdisc", "del", "dev", DEV, "root"]).await?;
        // Nothing installed (already healed) is healed.
        if code != 0 && !out.contains("No such file or directory") && !out.contains("handle of zero") {
            anyhow::bail!("`tc qdisc del dev {DEV} root` in {target} exited {code}: {}", out.trim());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_missing_netem_is_named_in_the_refusal() {
        let msg = super::unsupported("Error: Specified qdisc kind is unknown.\n");
        assert!(msg.starts_with("latency faults are unsupported here: this kernel has no netem qdisc"), "{msg}");
        assert!(msg.contains("Specified qdisc kind is unknown."), "{msg}");
        let other = super::unsupported("RTNETLINK answers: Operation not permitted");
        assert!(other.contains("tc could not add a netem qdisc") && other.contains("Operation not permitted"), "{other}");
    }
}
