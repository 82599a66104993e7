//! Node control over SSH: hosts that a nodes-file names stand in for the node containers, as
//! Jepsen tests a cluster you already run. The backend's servers are started and stopped by
//! lockchaos itself (so a clock fault can still start them under libfaketime), every fault on a
//! node goes over SSH (`Cluster::exec` on a host member), and the clients stay in containers on
//! this machine, where their events share one clock.
//!
//! What a run changes on a host, all undone by its teardown and by `lockchaos clean
//! --nodes-file`: packages installed with apt-get when missing (left installed); /lockchaos
//! (owner file, server logs); the servers' processes (marked, `ssh.rs`); iptables rules tagged
//! `lockchaos-<run id>`; libfaketime's offset file and the clock faults' state in /tmp; the
//! servers' data directories (/var/lib/etcd-nK, /var/lib/lockchaos-redis); the links in
//! /opt/lockchaos (left, like the packages).

pub mod checks;
pub mod heal;
pub mod nodes_file;
pub mod ssh;
mod ssh_args;

pub use heal::{Healed, Owner};
pub use nodes_file::{HostEntry, NodesFile, NodesFileError, WorkerNetwork};
pub use ssh::{end_masters_of_gone_runs, Host};

use std::path::Path;
use std::sync::Arc;

/// The environment variable that marks a run's processes on a host.
pub const RUN_ENV: &str = "LOCKCHAOS_RUN";
/// A run's folder on a host: the owner file and the servers' logs.
pub const STATE_DIR: &str = "/lockchaos";
pub const OWNER_FILE: &str = "/lockchaos/owner";

/// The comment on every iptables rule a run adds, on a host or in a container: letters,
/// digits, `-` and `_` only, so iptables-save prints it bare (a `.` or a space in a scenario's
/// file name would make it quote the comment, and the heal's match would miss the rule).
pub fn rule_tag(run_id: &str) -> String {
    let bare: String = run_id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    format!("lockchaos-{bare}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_rule_tag_is_bare_whatever_the_scenario_is_called() {
        assert_eq!(super::rule_tag("redis-single-pause-20261205t1z-ab12"), "lockchaos-redis-single-pause-20261205t1z-ab12");
        assert_eq!(super::rule_tag("my.v2 test-1"), "lockchaos-my_v2_test-1");
    }
}

/// What the scenario needs of every host.
#[derive(Clone, Debug, Default)]
pub struct HostNeeds {
    /// Debian packages (with what every fault uses: procps, iptables).
    pub packages: Vec<&'static str>,
    /// Server process names that must not be running already.
    pub servers: Vec<&'static str>,
    /// libfaketime and the jemalloc stand-in (uploaded from these bytes when missing).
    pub clock_faults: bool,
    pub jemalloc_stub: Option<Vec<u8>>,
}

/// The hosts of one run, connected and checked.
pub struct RemoteNodes {
    pub file: NodesFile,
    pub hosts: Vec<Arc<Host>>,
    /// Who holds the hosts, once `claim`ed: what the teardown heals.
    owner: std::sync::OnceLock<Owner>,
}

impl RemoteNodes {
    /// Connects to the first `count` hosts side by side and checks each. Err: one line naming
    /// the first host that failed and what failed; nothing has been changed on any host but
    /// missing packages.
    pub async fn connect(file: NodesFile, count: usize, needs: &HostNeeds, controller: &str) -> anyhow::Result<RemoteNodes> {
        let on_path = std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("ssh").is_file()));
        if !on_path {
            anyhow::bail!(
                "ssh (OpenSSH's client) is not installed, and lockchaos reaches the hosts of {} through it: apt-get install openssh-client",
                file.path.display()
            );
        }
        if file.hosts.len() < count {
            let message = format!("names {} host(s); the backend needs {count}", file.hosts.len());
            return Err(file.error(Some("host"), message).into());
        }
        let connects = file.hosts[..count].iter().map(|entry| async {
            let host = Host::connect(entry, &file.ssh, controller).await?;
            checks::check(&host, needs).await?;
            Ok::<_, String>(Arc::new(host))
        });
        let hosts = futures_util::future::join_all(connects).await;
        let mut connected = vec![];
        let mut first_error = None;
        for host in hosts {
            match host {
                Ok(h) => connected.push(h),
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        // The hosts that did connect are dropped with `connected`: dropping a host ends its
        // master connection.
        if let Some(e) = first_error {
            anyhow::bail!(e);
        }
        Ok(RemoteNodes { file, hosts: connected, owner: std::sync::OnceLock::new() })
    }

    /// Claims every host for the run (its owner file).
    pub async fn claim(&self, owner: Owner) -> anyhow::Result<()> {
        let claims = futures_util::future::join_all(self.hosts.iter().map(|h| heal::claim(h, &owner))).await;
        if let Some(Err(e)) = claims.into_iter().find(Result::is_err) {
            futures_util::future::join_all(self.hosts.iter().map(|h| heal::unclaim(h, &owner.run_id))).await;
            return Err(e);
        }
        let _ = self.owner.set(owner);
        Ok(())
    }

    /// The run's teardown on every host: its logs saved, then everything it did undone. Every
    /// host is healed even when one fails; the error names each that failed.
    pub async fn teardown(&self, logs_dir: &Path) -> anyhow::Result<Vec<Healed>> {
        let Some(owner) = self.owner.get() else { return Ok(vec![]) };
        let heals = self.hosts.iter().map(|h| async move {
            heal::fetch_logs(h, logs_dir).await;
            heal::heal(h, owner).await.map_err(|e| format!("{}: {e:#}", h.label()))
        });
        let mut healed = vec![];
        let mut errors = vec![];
        for result in futures_util::future::join_all(heals).await {
            match result {
                Ok(h) => healed.push(h),
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            anyhow::bail!("teardown on the hosts failed: {}", errors.join("; "));
        }
        Ok(healed)
    }
}
