//! Removing what runs leave: by label, so it works after a crash as well as at a normal end.

use super::RUN_LABEL;
use bollard::query_parameters::{ListContainersOptions, ListNetworksOptions, RemoveContainerOptions};
use bollard::Docker;
use std::collections::HashMap;

#[derive(Debug, Default)]
pub struct Removed {
    pub containers: usize,
    pub networks: usize,
    /// Items left in place because the lockchaos process that owns them is still running.
    pub skipped_live: usize,
}

/// Removes every container and network labelled with `run_id`, or with any run id when `None`.
/// Containers go first (force: a stopped or SIGSTOPped process dies with its container).
pub async fn remove_labelled(docker: &Docker, run_id: Option<&str>) -> anyhow::Result<Removed> {
    remove_matching(docker, run_id, true).await
}

/// `lockchaos clean`: what runs left behind, i.e. items whose owning lockchaos process is gone
/// (or every item with `all`). Items of live runs are counted in `skipped_live`.
pub async fn remove_leftovers(docker: &Docker, all: bool) -> anyhow::Result<Removed> {
    remove_matching(docker, None, all).await
}

async fn remove_matching(docker: &Docker, run_id: Option<&str>, include_live: bool) -> anyhow::Result<Removed> {
    // Without a controller label (made before it existed) an item counts as left behind.
    let live = |labels: Option<&HashMap<String, String>>| {
        !include_live && labels.and_then(|l| l.get(super::CONTROLLER_LABEL)).is_some_and(|c| super::controller_alive(c))
    };
    let filter = match run_id {
        Some(id) => format!("{RUN_LABEL}={id}"),
        None => RUN_LABEL.to_string(),
    };
    let filters = HashMap::from([("label".to_string(), vec![filter])]);
    let mut removed = Removed::default();
    let mut errors = vec![];
    let containers =
        docker.list_containers(Some(ListContainersOptions { all: true, filters: Some(filters.clone()), ..Default::default() })).await?;
    for c in containers {
        if live(c.labels.as_ref()) {
            removed.skipped_live += 1;
            continue;
        }
        let id = c.id.unwrap_or_default();
        let opts = RemoveContainerOptions { force: true, v: true, ..Default::default() };
        match docker.remove_container(&id, Some(opts)).await {
            Ok(()) => removed.containers += 1,
            // Gone already, or being removed by a concurrent teardown of the same run.
            Err(e) if e.to_string().contains("No such container") || e.to_string().contains("already in progress") => {}
            Err(e) => errors.push(format!("container {id}: {e}")),
        }
    }
    let networks = docker.list_networks(Some(ListNetworksOptions { filters: Some(filters) })).await?;
    for n in networks {
        if live(n.labels.as_ref()) {
            removed.skipped_live += 1;
            continue;
        }
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
