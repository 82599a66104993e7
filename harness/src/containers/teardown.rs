//! Removing what runs leave: by label, so it works after a crash as well as at a normal end.

use super::{NAME_LABEL, RUN_LABEL};
use bollard::query_parameters::{ListContainersOptions, ListNetworksOptions, LogsOptions, RemoveContainerOptions};
use bollard::Docker;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::path::Path;

#[derive(Debug, Default)]
pub struct Removed {
    pub containers: usize,
    pub networks: usize,
    /// Items left in place because the lockchaos process that owns them is still running.
    pub skipped_live: usize,
}

/// Saves `<name>.log` in `logs_dir` for every container of the run (found by label, so it also
/// works after an abort or for a run whose lockchaos is gone). Best effort: a missing log must
/// not stop the teardown.
pub async fn save_logs(docker: &Docker, run_id: &str, logs_dir: &Path) {
    let filters = HashMap::from([("label".to_string(), vec![format!("{RUN_LABEL}={run_id}")])]);
    let Ok(containers) =
        docker.list_containers(Some(ListContainersOptions { all: true, filters: Some(filters), ..Default::default() })).await
    else {
        return;
    };
    for c in containers {
        let name = c.labels.as_ref().and_then(|l| l.get(NAME_LABEL)).cloned().unwrap_or_else(|| "unknown".into());
        let opts = LogsOptions { stdout: true, stderr: true, ..Default::default() };
        let mut stream = docker.logs(c.id.as_deref().unwrap_or_default(), Some(opts));
        let mut out = String::new();
        while let Some(Ok(chunk)) = stream.next().await {
            out.push_str(&chunk.to_string());
        }
        let _ = std::fs::write(logs_dir.join(format!("{name}.log")), out);
    }
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
