//! Removing what runs leave: by label, so it works after a crash as well as at a normal end.

use super::{NAME_LABEL, RUN_LABEL};
use bollard::models::{ContainerSummary, NetworkDisconnectRequest};
use bollard::query_parameters::{ListContainersOptions, ListNetworksOptions, LogsOptions, RemoveContainerOptions};
use bollard::Docker;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::path::Path;

#[derive(Debug, Default)]
pub struct Removed {
    pub containers: usize,
    pub networks: usize,
}

/// Saves `<name>.log` in `logs_dir` for one container (found by label, so it also works after
/// an abort or for a run whose lockchaos is gone). Best effort: a missing log must not stop the
/// teardown.
async fn save_log(docker: &Docker, c: &ContainerSummary, logs_dir: &Path) {
    let name = c.labels.as_ref().and_then(|l| l.get(NAME_LABEL)).cloned().unwrap_or_else(|| "unknown".into());
    let opts = LogsOptions { stdout: true, stderr: true, ..Default::default() };
    let mut stream = docker.logs(c.id.as_deref().unwrap_or_default(), Some(opts));
    let mut out = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        out.push_str(&chunk.to_string());
    }
    let _ = std::fs::write(logs_dir.join(format!("{name}.log")), out);
}

/// How long a network may still hold endpoints of containers already removed (the daemon
/// releases them after the removal returns) before its removal counts as failed.
const ENDPOINTS_RELEASED_WITHIN: std::time::Duration = std::time::Duration::from_secs(15);

/// Removes a network; while it still has endpoints (seen in a matrix: "has active endpoints"
/// right after its containers' removal returned, or a container another task was creating),
/// removes the containers still attached, by force, and tries again. An endpoint whose
/// container is gone already (inspect lists no container, yet the daemon refuses: a stale
/// endpoint, seen once in 237 runs) is force-disconnected by the names of the run's containers,
/// Docker's own way out short of a daemon restart.
async fn remove_network(docker: &Docker, id: &str, container_names: &[String]) -> Result<(), bollard::errors::Error> {
    let deadline = tokio::time::Instant::now() + ENDPOINTS_RELEASED_WITHIN;
    loop {
        match docker.remove_network(id).await {
            Err(e) if e.to_string().contains("active endpoints") && tokio::time::Instant::now() < deadline => {
                let attached = docker.inspect_network(id, None).await.ok().and_then(|n| n.containers).unwrap_or_default();
                for container in attached.keys() {
                    let opts = RemoveContainerOptions { force: true, v: true, ..Default::default() };
                    let _ = docker.remove_container(container, Some(opts)).await;
                }
                if attached.is_empty() {
                    for name in container_names {
                        let request = NetworkDisconnectRequest { container: name.clone(), force: Some(true) };
                        let _ = docker.disconnect_network(id, request).await;
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            Err(e) if e.to_string().contains("active endpoints") => {
                return Err(bollard::errors::Error::IOError {
                    err: std::io::Error::other(format!(
                        "{e} (no container of it is left: the Docker daemon holds a stale endpoint, which a restart of the daemon releases)"
                    )),
                })
            }
            other => return other,
        }
    }
}

/// Removes every container and network labelled with `run_id`, or with any run id when `None`,
/// each container's log saved first into `logs_dir` when given, every container side by side.
/// Containers go first (force: a stopped or SIGSTOPped process dies with its container).
/// A run's own teardown calls this, and so does `lockchaos clean` for the runs whose lockchaos
/// is gone (orphans.rs).
pub async fn remove_labelled(docker: &Docker, run_id: Option<&str>, logs_dir: Option<&Path>) -> anyhow::Result<Removed> {
    let filter = match run_id {
        Some(id) => format!("{RUN_LABEL}={id}"),
        None => RUN_LABEL.to_string(),
    };
    let filters = HashMap::from([("label".to_string(), vec![filter])]);
    let mut removed = Removed::default();
    let mut errors = vec![];
    let containers =
        docker.list_containers(Some(ListContainersOptions { all: true, filters: Some(filters.clone()), ..Default::default() })).await?;
    let container_names: Vec<String> =
        containers.iter().flat_map(|c| c.names.iter().flatten()).map(|n| n.trim_start_matches('/').to_string()).collect();
    // Side by side: each removal is a kill and a delete of its own.
    let removals = containers.into_iter().map(|c| async move {
        if let Some(dir) = logs_dir {
            save_log(docker, &c, dir).await;
        }
        let id = c.id.unwrap_or_default();
        let opts = RemoveContainerOptions { force: true, v: true, ..Default::default() };
        (docker.remove_container(&id, Some(opts)).await, id)
    });
    for (result, id) in futures_util::future::join_all(removals).await {
        match result {
            Ok(()) => removed.containers += 1,
            // Gone already, or being removed by a concurrent teardown of the same run.
            Err(e) if e.to_string().contains("No such container") || e.to_string().contains("already in progress") => {}
            Err(e) => errors.push(format!("container {id}: {e}")),
        }
    }
    let networks = docker.list_networks(Some(ListNetworksOptions { filters: Some(filters) })).await?;
    for n in networks {
        let id = n.id.unwrap_or_default();
        match remove_network(docker, &id, &container_names).await {
            Ok(()) => removed.networks += 1,
            // Removed meanwhile by a concurrent teardown or clean.
            Err(e) if e.to_string().contains("not found") || e.to_string().contains("No such network") => {}
            Err(e) => errors.push(format!("network {id}: {e}")),
        }
    }
    if !errors.is_empty() {
        anyhow::bail!("teardown left {} item(s): {}", errors.len(), errors.join("; "));
    }
    Ok(removed)
}
