//! Clock strobe on a node's server: its clock flips between `offset_ms` ahead (or behind) and
//! the true time every `period_ms`, as Jepsen's strobe does, so a lease checked at one instant
//! and compared at the next sees time run wild both ways. A loop in the node rewrites the
//! libfaketime offset file (see clock_jump.rs); the heal stops the loop and writes "+0".

use super::clock_jump::{offset_text, write_offset, OFFSET_FILE};
use super::{Fault, FaultContext, Injection};

/// The strobe loop's PID inside the node, so the heal stops exactly that loop.
const PID_FILE: &str = "/tmp/lockchaos-strobe.pid";

/// The shell loop that flips the offset file; `mv` makes every switch atomic for the reader.
/// No single quotes inside: the launch wraps it in them.
pub fn strobe_script(offset_ms: i64, period_ms: u64) -> String {
    let secs = format!("{}.{:03}", period_ms / 1000, period_ms % 1000);
    let set = |text: &str| format!("echo {text} > {OFFSET_FILE}.strobe && mv {OFFSET_FILE}.strobe {OFFSET_FILE}");
    format!("echo $$ > {PID_FILE}; while :; do {}; sleep {secs}; {}; sleep {secs}; done", set(&offset_text(offset_ms)), set("+0"))
}

pub struct ClockStrobe;

#[async_trait::async_trait]
impl Fault for ClockStrobe {
    async fn inject(&self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<()> {
        if !ctx.is_node(&inj.target)? {
            anyhow::bail!("a clock strobe needs a node target, not {}", inj.target);
        }
        let script = strobe_script(inj.params.offset_ms.unwrap_or(0), inj.params.period_ms.unwrap_or(1000));
        // Detached from the exec: its output goes nowhere, so docker exec returns at once.
        let launch = format!("nohup sh -c '{script}' >/dev/null 2>&1 &");
        ctx.cluster.exec_ok(&inj.target, &["sh", "-c", &launch]).await.map(|_| ())
    }

    async fn heal(&self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<()> {
        let stop = format!("[ -f {PID_FILE} ] && kill $(cat {PID_FILE}) 2>/dev/null; rm -f {PID_FILE}; true");
        ctx.cluster.exec_ok(&inj.target, &["sh", "-c", &stop]).await?;
        write_offset(ctx, &inj.target, "+0").await
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
