//! Connecting to the Docker engine, with a one-line error when it is not there.

use anyhow::anyhow;
use bollard::{ClientVersion, Docker};

/// The oldest API we need (Docker 20.10); negotiation raises it when the engine is newer.
const MIN_API: ClientVersion = ClientVersion { major_version: 1, minor_version: 41 };

pub async fn connect() -> anyhow::Result<Docker> {
    // Empty is unset, as the docker CLI reads it.
    let host = std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty()).unwrap_or_else(|| "unix:///var/run/docker.sock".into());
    let no_daemon = |e: &dyn std::fmt::Display| {
        anyhow!("no Docker daemon answers at {host} ({e}); start it (e.g. `dockerd &` or `systemctl start docker`) and try again")
    };
    let docker = if let Some(path) = host.strip_prefix("unix://") {
        Docker::connect_with_unix(path, 120, &MIN_API).map_err(|e| no_daemon(&e))?
    } else {
        Docker::connect_with_http(&host, 120, &MIN_API).map_err(|e| no_daemon(&e))?
    };
    docker.ping().await.map_err(|e| no_daemon(&e))?;
    docker.negotiate_version().await.map_err(|e| no_daemon(&e))
}
