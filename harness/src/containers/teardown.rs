//! Removing what runs leave: by label, so it works after a crash as well as at a normal end.

use super::RUN_LABEL;
use bollard::query_parameters::{ListContainersOptions, ListNetworksOptions, RemoveContainerOptions};
use bollard::Docker;
use std::collections::HashMap;

#[derive(Debug, Default)]
pub struct Removed {
    pub containers: usize,
    pub networks: usize,
}

/// Removes every container and network labelled with `run_id`, or with any run id when `None`.
/// Containers go first (force: a stopped or SIGSTOPped process dies with its container).
pub async fn remove_labelled(docker: &Docker, run_id: Option<&str>) -> anyhow::Result<Removed> {
    let filter = match run_id {
        Some(id) => format!("{RUN_LABEL}={id}"),
        None => RUN_LABEL.to_string(),
    };
    let filters = HashMap::from([("label".to_string(), vec![filter])]);
    let mut removed = Removed::default();
    let mut errors = vec![];
    let containers = docker
        .list_containers(Some(ListContainersOptions { all: true, filters: Some(filters.clone()), ..Default::default() }))
        .await?;
    for c in containers {
        let id = c.id.unwrap_or_default();
        let opts = RemoveContainerOptions { force: true, v: true, ..Default::default() };
        match docker.remove_container(&id, Some(opts)).await {
            Ok(()) => removed.containers += 1,
            Err(e) if e.to_string().contains("No such container") => {}
            Err(e) => errors.push(format!("container {id}: {e}")),
        }
    }
    let networks = docker.list_networks(Some(ListNetworksOptions { filters: Some(filters) })).await?;
    for n in networks {
        let id = n.id.unwrap_or_default();
        match docker.remove_network(&id).await {
            Ok(()) => removed.networks += 1,
            Err(e) => errors.push(format!("network {id}: {e}")),
        }
    }
    if !errors.is_empty() {
        anyhow::bail!("teardown left {} item(s): {}", errors.len(), errors.join("; "));
    }
    Ok(removed)
}
