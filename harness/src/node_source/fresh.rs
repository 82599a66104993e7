//! Fresh containers: the run's own network and node containers, made for it and removed with
//! it. The default, and what a warm pool builds its first run on.

use super::{NodeSource, Nodes, NodesRecord, RunSite};
use crate::containers::{teardown, Cluster, ContainerSpec};
use crate::node_image::IMAGE;
use bollard::Docker;

pub struct FreshContainers;

#[async_trait::async_trait]
impl NodeSource for FreshContainers {
    async fn provision(&self, docker: Docker, site: &RunSite<'_>) -> anyhow::Result<Nodes> {
        let cluster = Cluster::create(docker, &site.dir.run_id, &site.dir.path, IMAGE, site.seed).await?;
        let logs = site.dir.path.join("logs");
        let nodes = site.loaded.scenario.backend_setup().node_count();
        let to_start = (1..=nodes).map(|i| ContainerSpec::node(&format!("n{i}"), site.exe, &logs)).collect();
        Ok(Nodes { cluster, to_start })
    }

    async fn release(&self, docker: &Docker, site: &RunSite<'_>, _vouched: bool) -> anyhow::Result<()> {
        teardown::remove_labelled(docker, Some(&site.dir.run_id), Some(&site.dir.path.join("logs"))).await.map(|_| ())
    }

    fn record(&self) -> NodesRecord {
        NodesRecord { source: "fresh-containers", ..Default::default() }
    }
}
