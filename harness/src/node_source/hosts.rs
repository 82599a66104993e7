//! A run on the hosts of a nodes-file: the scenario checked against what hosts can do, the
//! hosts connected and checked for what this scenario needs (before the run folder, so a host
//! that cannot serve costs one line and nothing else), then claimed for the run; at its end,
//! healed of everything the run did there.

use super::{NodeSource, Nodes, NodesRecord, RunSite};
use crate::containers::{self, teardown, Cluster, CONTROLLER_LABEL, RUN_LABEL};
use crate::hosts::{self, HostNeeds, NodesFile, Owner, RemoteNodes, WorkerNetwork};
use crate::node_image;
use crate::node_image::IMAGE;
use crate::run_store::RunDir;
use crate::scenario::LoadedScenario;
use bollard::Docker;
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// Every fault needs pgrep/pkill; a partition needs iptables.
const FAULT_PACKAGES: &[&str] = &["procps", "iptables"];

/// The hosts of a nodes-file as a run's nodes.
pub struct HostNodes {
    pub remote: RemoteNodes,
}

#[async_trait::async_trait]
impl NodeSource for HostNodes {
    /// A host claimed meanwhile by another run: this run's own claims are undone.
    async fn claim(&self, dir: &RunDir, loaded: &LoadedScenario) -> anyhow::Result<()> {
        claim(&self.remote, dir, loaded).await
    }

    /// The run's network holds the resource and the workers; the nodes are the hosts.
    async fn provision(&self, docker: Docker, site: &RunSite<'_>) -> anyhow::Result<Nodes> {
        let mut cluster = Cluster::create(docker, &site.dir.run_id, &site.dir.path, IMAGE, site.seed).await?;
        cluster.attach_hosts(&self.remote.hosts, self.remote.file.workers.clone());
        Ok(Nodes { cluster, to_start: vec![] })
    }

    /// The run's containers removed and the hosts healed side by side; both errors count.
    async fn release(&self, docker: &Docker, site: &RunSite<'_>, _vouched: bool) -> anyhow::Result<()> {
        let logs = site.dir.path.join("logs");
        let (removed, healed) =
            tokio::join!(teardown::remove_labelled(docker, Some(&site.dir.run_id), Some(&logs)), self.remote.teardown(&logs));
        removed?;
        healed.map(|_| ())
    }

    fn record(&self) -> NodesRecord {
        NodesRecord { source: "ssh-hosts", ..Default::default() }
    }
}

pub async fn connect(docker: &Docker, loaded: &LoadedScenario, file: &NodesFile) -> anyhow::Result<RemoteNodes> {
    crate::preflight::check_hosts(loaded, file)?;
    if let Some(net) = &file.workers {
        check_workers_network(docker, file, net, loaded.scenario.clients).await?;
    }
    let setup = loaded.scenario.backend_setup();
    let mut packages: Vec<&'static str> = setup.remote_hosts().map_err(anyhow::Error::msg)?.to_vec();
    packages.extend(FAULT_PACKAGES);
    let clock_faults = loaded.scenario.nemesis.moves_clocks();
    let mut jemalloc_stub = None;
    if clock_faults {
        packages.push("libfaketime");
        // Labelled as a run of this process, so `lockchaos clean` removes the reading container
        // if this process dies meanwhile.
        let labels = HashMap::from([
            (RUN_LABEL.to_string(), format!("image-read-{}", std::process::id())),
            (CONTROLLER_LABEL.to_string(), containers::controller_id()),
        ]);
        let stub = format!("{}/libjemalloc.so.2", node_image::JEMALLOC_STUB_DIR);
        jemalloc_stub = Some(node_image::read_file(docker, &stub, labels).await?);
    }
    let needs = HostNeeds { packages, servers: vec![setup.server_process()], clock_faults, jemalloc_stub };
    RemoteNodes::connect(file.clone(), setup.node_count(), &needs, &containers::controller_id()).await
}

pub async fn claim(remote: &RemoteNodes, dir: &RunDir, loaded: &LoadedScenario) -> anyhow::Result<()> {
    let owner = Owner {
        run_id: dir.run_id.clone(),
        controller: containers::controller_id(),
        machine: hosts::heal::this_machine(),
        servers: vec![loaded.scenario.backend_setup().server_process().to_string()],
    };
    remote.claim(owner).await
}

/// The workers' network exists and holds every client's address.
async fn check_workers_network(docker: &Docker, file: &NodesFile, net: &WorkerNetwork, clients: u32) -> anyhow::Result<()> {
    let at = |message: String| file.error(Some("workers.docker_network"), message);
    let found = docker
        .inspect_network(&net.docker_network, None::<bollard::query_parameters::InspectNetworkOptions>)
        .await
        .map_err(|e| at(format!("no Docker network {} here: {e}", net.docker_network)))?;
    let subnets: Vec<String> = found.ipam.and_then(|i| i.config).unwrap_or_default().into_iter().filter_map(|c| c.subnet).collect();
    let within = |ip: Ipv4Addr| subnets.iter().any(|s| subnet_holds(s, ip));
    let last = net.client_ip(clients.max(1));
    if !within(net.first_address) || !within(last) {
        return Err(at(format!(
            "clients at {} to {last} are not all in the network {} ({})",
            net.first_address,
            net.docker_network,
            if subnets.is_empty() { "it has no subnet of its own".to_string() } else { subnets.join(", ") }
        ))
        .into());
    }
    Ok(())
}

/// Whether `a.b.c.d/n` holds `ip`.
fn subnet_holds(subnet: &str, ip: Ipv4Addr) -> bool {
    let Some((base, bits)) = subnet.split_once('/') else { return false };
    let (Ok(base), Ok(bits)) = (base.parse::<Ipv4Addr>(), bits.parse::<u32>()) else { return false };
    let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits.min(32)) };
    u32::from(base) & mask == u32::from(ip) & mask
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_subnet_holds_its_addresses_only() {
        let ip = |s: &str| s.parse().unwrap();
        assert!(super::subnet_holds("10.215.7.0/24", ip("10.215.7.101")));
        assert!(!super::subnet_holds("10.215.7.0/24", ip("10.215.8.1")));
        assert!(!super::subnet_holds("fd00::/64", ip("10.215.7.1")));
    }
}
