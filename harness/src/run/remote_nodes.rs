//! A run on the hosts of a nodes-file: the scenario checked against what hosts can do, the
//! hosts connected and checked for what this scenario needs (before the run folder, so a host
//! that cannot serve costs one line and nothing else), then claimed for the run.

use crate::containers::{self, CONTROLLER_LABEL, RUN_LABEL};
use crate::hosts::{self, HostNeeds, NodesFile, Owner, RemoteNodes};
use crate::node_image;
use crate::run_store::RunDir;
use crate::scenario::LoadedScenario;
use bollard::Docker;
use std::collections::HashMap;

/// Every fault needs pgrep/pkill; a partition needs iptables.
const FAULT_PACKAGES: &[&str] = &["procps", "iptables"];

pub async fn connect(docker: &Docker, loaded: &LoadedScenario, file: &NodesFile) -> anyhow::Result<RemoteNodes> {
    crate::preflight::check_hosts(loaded, file)?;
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
    RemoteNodes::connect(file.clone(), setup.node_count(), &needs).await
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
