//! Node control through the Docker API: the run's private network, its containers, commands
//! and signals inside them, and teardown by label.
//!
//! testcontainers 0.28 pins Docker API 1.53 and this machine's engine (20.10) answers only up to
//! 1.41, so we drive bollard (testcontainers' own client) directly with version negotiation.

pub mod cluster;
pub mod docker_api;
pub mod egress;
pub mod teardown;

pub use cluster::{Cluster, ContainerSpec, Member, Role, BIN, LOGS_MOUNT};

use std::collections::HashMap;
use std::path::Path;

/// Label on every container and network a run creates; its value is the run id.
pub const RUN_LABEL: &str = "lockchaos.run";

/// Label naming the lockchaos process that owns a run: `PID:START` (START = the process's start
/// time from /proc, so a reused PID is not mistaken for it). `lockchaos clean` leaves runs whose
/// owner is still alive.
pub const CONTROLLER_LABEL: &str = "lockchaos.controller";

/// Label on every container: what it is for (`Role::label`).
pub const ROLE_LABEL: &str = "lockchaos.role";

/// Label on every container: its member name in the run (n1, resource, client-1).
pub const NAME_LABEL: &str = "lockchaos.name";

/// Label naming the run's folder (its absolute path), so that `lockchaos clean` can finish a run
/// whose lockchaos process is gone: merge, check and write its results where they belong.
pub const RUN_DIR_LABEL: &str = "lockchaos.run_dir";

/// Label on a warm pool's network and nodes (node_source/warm_pool.rs): kept from one run to
/// the next of one lockchaos process, never a run's folder; `lockchaos clean` removes a pool
/// whose process is gone and writes no results for it.
pub const POOL_LABEL: &str = "lockchaos.pool";

/// The labels of everything a run creates: its run id, this process as its controller, and
/// its folder.
pub fn run_labels(run_id: &str, run_dir: &Path) -> HashMap<String, String> {
    HashMap::from([
        (RUN_LABEL.to_string(), run_id.to_string()),
        (CONTROLLER_LABEL.to_string(), controller_id()),
        (RUN_DIR_LABEL.to_string(), run_dir.display().to_string()),
    ])
}

/// This process's controller label value.
pub fn controller_id() -> String {
    let pid = std::process::id();
    format!("{pid}:{}", process_start(pid).unwrap_or(0))
}

/// Whether the process a controller label names is still running. A zombie (killed, not yet
/// reaped by its parent) is not: it will never tear its run down.
pub fn controller_alive(label: &str) -> bool {
    let Some((pid, start)) = label.split_once(':') else { return false };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else { return false };
    process_stat(pid).is_some_and(|(state, started)| started == start && !matches!(state, 'Z' | 'X'))
}

/// Field 22 of /proc/PID/stat: start time after boot, in clock ticks.
fn process_start(pid: u32) -> Option<u64> {
    process_stat(pid).map(|(_, start)| start)
}

/// State (field 3) and start time (field 22) from /proc/PID/stat.
fn process_stat(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((state, fields.nth(18)?.parse().ok()?))
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

    #[test]
    fn a_killed_controller_not_yet_reaped_is_gone() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let label = format!("{pid}:{}", super::process_start(pid).unwrap_or(0));
        // Not waited for yet: once it has exited it is a zombie, with /proc/PID/stat still there.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while super::process_stat(pid).is_some_and(|(state, _)| state != 'Z') {
            assert!(std::time::Instant::now() < deadline, "{pid} never became a zombie");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let alive = super::controller_alive(&label);
        child.wait().unwrap();
        assert!(!alive, "{label}");
    }

    #[test]
    fn a_runs_labels_name_its_id_controller_and_folder() {
        let labels = super::run_labels("labels-test", std::path::Path::new("/store/demo/20260101T000000Z"));
        assert_eq!(labels[super::RUN_DIR_LABEL], "/store/demo/20260101T000000Z");
        assert_eq!(labels[super::RUN_LABEL], "labels-test");
        assert_eq!(labels[super::CONTROLLER_LABEL], super::controller_id());
    }
}
