//! Node control through the Docker API: the run's private network, its containers, commands
//! and signals inside them, and teardown by label.
//!
//! testcontainers 0.28 pins Docker API 1.53 and this machine's engine (20.10) answers only up to
//! 1.41, so we drive bollard (testcontainers' own client) directly with version negotiation.

pub mod cluster;
pub mod docker_api;
pub mod teardown;

pub use cluster::{Cluster, ContainerSpec, Role};

/// Label on every container and network a run creates; its value is the run id.
pub const RUN_LABEL: &str = "lockchaos.run";

/// Label naming the lockchaos process that owns a run: `PID:START` (START = the process's start
/// time from /proc, so a reused PID is not mistaken for it). `lockchaos clean` leaves runs whose
/// owner is still alive.
pub const CONTROLLER_LABEL: &str = "lockchaos.controller";

/// This process's controller label value.
pub fn controller_id() -> String {
    let pid = std::process::id();
    format!("{pid}:{}", process_start(pid).unwrap_or(0))
}

/// Whether the process a controller label names is still running.
pub fn controller_alive(label: &str) -> bool {
    let Some((pid, start)) = label.split_once(':') else { return false };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else { return false };
    process_start(pid) == Some(start)
}

/// Field 22 of /proc/PID/stat: start time after boot, in clock ticks.
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_is_alive_and_a_gone_or_reused_pid_is_not() {
        let me = super::controller_id();
        assert!(super::controller_alive(&me), "{me}");
        let (pid, start) = me.split_once(':').unwrap();
        assert!(!super::controller_alive(&format!("{pid}:{}", start.parse::<u64>().unwrap() + 1)), "same PID, other start");
        assert!(!super::controller_alive("4194999:1") && !super::controller_alive("garbage"));
    }
}
