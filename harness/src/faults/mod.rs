//! Faults: one module each, behind one small trait. The nemesis records every inject and heal
//! as events of process "nemesis", and heals whatever is still active at the end and on abort.

pub mod clock_jump;
pub mod clock_strobe;
pub mod failover;
pub mod kill;
pub mod kill_session;
pub mod latency;
pub mod partition;
pub mod pause;

use crate::containers::{Cluster, Role};
use crate::lock_backends::BackendSetup;
use crate::scenario::{FaultKind, FaultParams};

/// What a fault may act on: the containers, and the backend (to find or restart its servers).
pub struct FaultContext<'a> {
    pub cluster: &'a Cluster,
    pub backend: &'a dyn BackendSetup,
}

impl FaultContext<'_> {
    /// Whether `target` names a node (its server process is the target) or a worker.
    pub fn is_node(&self, target: &str) -> anyhow::Result<bool> {
        match self.cluster.member(target) {
            Ok(m) => Ok(m.role == Role::Node),
            // Workers may not have started yet (faults laid at 0 ms); nodes always have.
            Err(_) if target.starts_with("client-") => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Sends a signal to the backend's server process inside a node.
    pub async fn signal_server(&self, node: &str, signal: &str) -> anyhow::Result<()> {
        let process = self.backend.server_process();
        self.cluster.exec_ok(node, &["pkill", &format!("-{signal}"), "-x", process]).await.map(|_| ())
    }
}

/// One fault as applied: what, on which member (a node `nK` or a worker `client-K`), and its
/// parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Injection {
    pub fault: FaultKind,
    pub target: String,
    /// partition: the members the target is cut off from.
    pub from: Vec<String>,
    pub params: FaultParams,
}

impl Injection {
    /// The parameters in words, for the history's `detail` and the progress lines.
    pub fn detail(&self) -> Option<String> {
        let p = &self.params;
        match self.fault {
            FaultKind::Partition => match p.shape {
                Some(shape) => Some(shape.name().to_string()),
                None => Some(format!("from {}", self.from.join(", "))),
            },
            FaultKind::ClockJump => p.offset_ms.map(clock_jump::offset_text),
            FaultKind::ClockStrobe => {
                Some(format!("{} every {} ms", clock_jump::offset_text(p.offset_ms.unwrap_or(0)), p.period_ms.unwrap_or(0)))
            }
            FaultKind::Latency => p.delay_ms.map(|d| format!("+{d} ms")),
            _ => None,
        }
    }
}

#[async_trait::async_trait]
pub trait Fault: Send + Sync {
    /// Checks, once the nodes run and before any client starts, that this fault can work here;
    /// an error refuses the run (e.g. latency on a kernel without netem) instead of a run
    /// that only pretends to inject it.
    async fn preflight(&self, _ctx: &FaultContext<'_>) -> anyhow::Result<()> {
        Ok(())
    }
    /// Starts the fault.
    async fn inject(&self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<()>;
    /// Undoes it. Must be safe to call on a target that has already been healed or has exited.
    async fn heal(&self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<()>;
}

pub fn fault_for(kind: FaultKind) -> Box<dyn Fault> {
    match kind {
        FaultKind::Pause => Box::new(pause::Pause),
        FaultKind::Kill => Box::new(kill::Kill),
        FaultKind::Partition => Box::new(partition::Partition),
        FaultKind::ClockJump => Box::new(clock_jump::ClockJump),
        FaultKind::ClockStrobe => Box::new(clock_strobe::ClockStrobe),
        FaultKind::Latency => Box::new(latency::Latency),
        FaultKind::Failover => Box::new(failover::Failover),
        FaultKind::KillSession => Box::new(kill_session::KillSession),
    }
}
