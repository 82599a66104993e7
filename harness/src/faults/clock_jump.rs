//! Clock jump on a node's server, through libfaketime: the server runs with LD_PRELOAD and
//! FAKETIME_NO_CACHE=1, reading its offset from a file on every clock read, so writing "+20s"
//! there moves its clock at once (measured: a PX key expired within ~20 ms). The fault ends by
//! writing "+0". Only the server process is affected, never the machine's clock.
//!
//! Go programs (etcd) read the clock without libc; backends say so through
//! `BackendSetup::clock_faults_unsupported`, and such scenarios are refused when loaded.

use super::{Fault, FaultContext, Injection};
use crate::containers::Cluster;

/// The offset file inside each node (container-local: nothing on the host changes).
pub const OFFSET_FILE: &str = "/tmp/lockchaos-faketime";

/// `env` arguments that start a program under libfaketime, reading [`OFFSET_FILE`] on every
/// clock read. The jemalloc stand-in comes first on the library path: Debian's redis-server
/// hangs at start under libfaketime with the real jemalloc.
pub fn env_args() -> Vec<String> {
    vec![
        format!("LD_PRELOAD={}", crate::node_image::LIBFAKETIME),
        format!("FAKETIME_TIMESTAMP_FILE={OFFSET_FILE}"),
        "FAKETIME_NO_CACHE=1".into(),
        format!("LD_LIBRARY_PATH={}", crate::node_image::JEMALLOC_STUB_DIR),
    ]
}

/// Writes offset 0 before a server first starts under libfaketime (a restart keeps the offset).
pub async fn prepare(cluster: &Cluster, node: &str) -> anyhow::Result<()> {
    let script = format!("[ -f {OFFSET_FILE} ] || echo +0 > {OFFSET_FILE}");
    cluster.exec_ok(node, &["sh", "-c", &script]).await.map(|_| ())
}

/// libfaketime's relative format: "+20s", "-1.5s".
pub fn offset_text(offset_ms: i64) -> String {
    if offset_ms % 1000 == 0 {
        format!("{:+}s", offset_ms / 1000)
    } else {
        format!("{:+.3}s", offset_ms as f64 / 1000.0)
    }
}

pub(super) async fn write_offset(ctx: &FaultContext<'_>, node: &str, text: &str) -> anyhow::Result<()> {
    let script = format!("echo '{text}' > {OFFSET_FILE}.new && mv {OFFSET_FILE}.new {OFFSET_FILE}");
    ctx.cluster.exec_ok(node, &["sh", "-c", &script]).await.map(|_| ())
}

pub struct ClockJump;

#[async_trait::async_trait]
impl Fault for ClockJump {
    async fn inject(&self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<()> {
        if !ctx.is_node(&inj.target)? {
            anyhow::bail!("a clock jump needs a node target, not {}", inj.target);
        }
        write_offset(ctx, &inj.target, &offset_text(inj.params.offset_ms.unwrap_or(0))).await
    }

    async fn heal(&self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<()> {
        write_offset(ctx, &inj.target, "+0").await
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn offsets_in_libfaketime_format() {
        for (ms, text) in [(20_000, "+20s"), (-3_000, "-3s"), (1_500, "+1.500s"), (0, "+0s")] {
            assert_eq!(super::offset_text(ms), text);
        }
    }
}
