//! Clock strobe on a node's server: its clock flips between `offset_ms` ahead (or behind) and
//! the true time every `period_ms`, as Jepsen's strobe does, so a lease checked at one instant
//! and compared at the next sees time run wild both ways. A loop in the node rewrites the
//! libfaketime offset file (see libfaketime.rs); the heal stops the loop and writes "+0".

use super::clock_jump::clock_capability;
use super::{node_target, BackendView, FaultAction, FaultContext, StepError};
use crate::libfaketime::{self, OFFSET_FILE};
use crate::target::Target;
use serde::{Deserialize, Serialize};

/// The strobe loop's PID inside the node, so the heal stops exactly that loop.
const PID_FILE: &str = "/tmp/lockchaos-strobe.pid";

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClockStrobe {
    /// The offset the clock flips to (negative: behind).
    pub offset_ms: i64,
    /// How long each half of the flip lasts; at least 10.
    pub period_ms: u64,
}

/// The shell loop that flips the offset file; `mv` makes every switch atomic for the reader.
/// No single quotes inside: the launch wraps it in them.
pub fn strobe_script(offset_ms: i64, period_ms: u64) -> String {
    let secs = format!("{}.{:03}", period_ms / 1000, period_ms % 1000);
    let set = |text: &str| format!("echo {text} > {OFFSET_FILE}.strobe && mv {OFFSET_FILE}.strobe {OFFSET_FILE}");
    format!(
        "echo $$ > {PID_FILE}; while :; do {}; sleep {secs}; {}; sleep {secs}; done",
        set(&libfaketime::offset_text(offset_ms)),
        set("+0")
    )
}

#[async_trait::async_trait]
impl FaultAction for ClockStrobe {
    fn detail(&self) -> Option<String> {
        Some(format!("{} every {} ms", libfaketime::offset_text(self.offset_ms), self.period_ms))
    }

    fn check(&self, target: &Target) -> Result<(), StepError> {
        node_target("clock-strobe", target)?;
        if self.period_ms < 10 {
            return Err(("period_ms", "a clock-strobe needs `period_ms` of at least 10".into()));
        }
        Ok(())
    }

    fn check_backend(&self, _target: &Target, backend: &BackendView<'_>) -> Result<(), StepError> {
        clock_capability(backend)
    }

    fn moves_clocks(&self) -> bool {
        true
    }

    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        // Detached from the exec: its output goes nowhere, so docker exec returns at once.
        let launch = format!("nohup sh -c '{}' >/dev/null 2>&1 &", strobe_script(self.offset_ms, self.period_ms));
        ctx.cluster.exec_ok(target, &["sh", "-c", &launch]).await.map(|_| ())
    }

    async fn heal(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        let stop = format!("[ -f {PID_FILE} ] && kill $(cat {PID_FILE}) 2>/dev/null; rm -f {PID_FILE}; true");
        ctx.cluster.exec_ok(target, &["sh", "-c", &stop]).await?;
        libfaketime::write_offset(ctx.cluster, target, "+0").await
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_loop_flips_between_offset_and_true_time() {
        let script = super::strobe_script(5000, 250);
        assert!(script.contains("echo +5s > /tmp/lockchaos-faketime.strobe"), "{script}");
        assert!(script.contains("echo +0 > /tmp/lockchaos-faketime.strobe"), "{script}");
        assert_eq!(script.matches("sleep 0.250").count(), 2, "{script}");
        assert!(!script.contains('\''), "the launch quotes it in single quotes: {script}");
        // sh -n: it parses.
        let out = std::process::Command::new("sh").args(["-n", "-c", &script]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
