//! `lockchaos clean --nodes-file FILE`: the hosts' half of finishing a run whose lockchaos is
//! gone. Each host a run claimed names its run, its lockchaos process and its machine in
//! /lockchaos/owner; when that process is gone (or with `--all`), the host is healed as the
//! run's own teardown would have (hosts/heal.rs): stopped processes woken and killed, tagged
//! rules deleted, the offset file and state removed. A run of another machine is left alone:
//! this machine cannot tell whether its lockchaos still runs.

use crate::containers::controller_alive;
use crate::hosts::{heal, Healed, Host, NodesFile};

/// What `clean` did on one host.
#[derive(Debug)]
pub enum HostCleaned {
    /// No run held it.
    Free,
    Healed {
        run_id: String,
        healed: Healed,
    },
    /// Its run's lockchaos is still running (without `all`).
    LeftLive {
        run_id: String,
    },
    /// Held by a run of another machine.
    OtherMachine {
        run_id: String,
        machine: String,
    },
}

/// Heals every host of `file` that a gone run left claimed. One result per host, in the file's
/// order: what was done, or the one line saying why it could not be.
pub async fn clean_hosts(file: &NodesFile, all: bool) -> Vec<(String, Result<HostCleaned, String>)> {
    let cleans = file.hosts.iter().map(|entry| async move {
        let result = async {
            let host = Host::connect(entry, &file.ssh, &crate::containers::controller_id()).await?;
            let result = clean_host(&host, all).await.map_err(|e| format!("{}: {e:#}", host.label()));
            host.close().await;
            result
        };
        (entry.label(), result.await)
    });
    futures_util::future::join_all(cleans).await
}

async fn clean_host(host: &Host, all: bool) -> anyhow::Result<HostCleaned> {
    let Some(owner) = heal::owner(host).await? else { return Ok(HostCleaned::Free) };
    if owner.machine != heal::this_machine() && !all {
        return Ok(HostCleaned::OtherMachine { run_id: owner.run_id, machine: owner.machine });
    }
    if controller_alive(&owner.controller) && !all {
        return Ok(HostCleaned::LeftLive { run_id: owner.run_id });
    }
    let healed = heal::heal(host, &owner).await?;
    Ok(HostCleaned::Healed { run_id: owner.run_id, healed })
}
