//! libfaketime in the nodes: how a backend starts a server whose clock a fault can move, and
//! how a clock fault moves it. The server runs with LD_PRELOAD and FAKETIME_NO_CACHE=1, reading
//! its offset from a file in its node on every clock read, so writing "+20s" there moves its
//! clock at once (measured: a PX key expired within ~20 ms); "+0" puts it back. Only that
//! server's clock moves, never the machine's.
//!
//! Go programs (etcd) read the clock without libc: libfaketime cannot move them, and backends
//! built on them say so through `BackendSetup::clock_faults`.

use crate::containers::Cluster;
use crate::node_image;

/// The offset file inside each node (container-local: nothing on the host changes).
pub const OFFSET_FILE: &str = "/tmp/lockchaos-faketime";

/// `env` arguments that start a program under libfaketime, reading [`OFFSET_FILE`] on every
/// clock read. The jemalloc stand-in comes first on the library path: Debian's redis-server
/// hangs at start under libfaketime with the real jemalloc.
pub fn env_args() -> Vec<String> {
    vec![
        format!("LD_PRELOAD={}", node_image::LIBFAKETIME),
        format!("FAKETIME_TIMESTAMP_FILE={OFFSET_FILE}"),
        "FAKETIME_NO_CACHE=1".into(),
        format!("LD_LIBRARY_PATH={}", node_image::JEMALLOC_STUB_DIR),
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

/// Sets the node's offset (atomically: the reader never sees a half-written file).
pub async fn write_offset(cluster: &Cluster, node: &str, text: &str) -> anyhow::Result<()> {
    let script = format!("echo '{text}' > {OFFSET_FILE}.new && mv {OFFSET_FILE}.new {OFFSET_FILE}");
    cluster.exec_ok(node, &["sh", "-c", &script]).await.map(|_| ())
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
