//! Clock jump on a node's server, through libfaketime (see libfaketime.rs): its clock moves by
//! `offset_ms` at once, and back to the true time when the fault ends. Only the server process
//! is affected, never the machine's clock. Needs the backend's `clock_faults` capability.

use super::{node_target, BackendView, FaultAction, FaultContext, StepError};
use crate::libfaketime;
use crate::target::Target;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClockJump {
    /// How far the target node's server clock jumps (negative: backwards).
    pub offset_ms: i64,
}

/// The backend rule of both clock faults.
pub(super) fn clock_capability(backend: &BackendView<'_>) -> Result<(), StepError> {
    backend.setup.clock_faults().map_err(|why| ("fault", format!("clock faults are not possible on {}: {why}", backend.name)))
}

#[async_trait::async_trait]
impl FaultAction for ClockJump {
    fn detail(&self) -> Option<String> {
        Some(libfaketime::offset_text(self.offset_ms))
    }

    fn check(&self, target: &Target) -> Result<(), StepError> {
        node_target("clock-jump", target)
    }

    fn check_backend(&self, _target: &Target, backend: &BackendView<'_>) -> Result<(), StepError> {
        clock_capability(backend)
    }

    fn moves_clocks(&self) -> bool {
        true
    }

    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        libfaketime::write_offset(ctx.cluster, target, &libfaketime::offset_text(self.offset_ms)).await
    }

    async fn heal(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        libfaketime::write_offset(ctx.cluster, target, "+0").await
    }
}
