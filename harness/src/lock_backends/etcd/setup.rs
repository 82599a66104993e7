//! A 3-member etcd cluster, one member per node (n1..n3), started with `etcd` in the background
//! under the node's docker-init. A member restarted after a kill keeps its data directory and
//! rejoins with its Raft log: nothing is forgotten.

use super::gateway::PORT;
use crate::containers::Cluster;
use crate::lock_backends::{BackendSetup, ClientConfig};
use anyhow::{bail, Context};
use std::time::{Duration, Instant};

pub const NODES: usize = 3;
pub const PROCESS: &str = "etcd";
const PEER_PORT: u16 = 2380;
/// How long a start or restart may take until the member reports healthy (a quorum answers).
const START_LIMIT: Duration = Duration::from_secs(30);

pub struct Setup;

fn data_dir(node: &str) -> String {
    format!("/var/lib/etcd-{node}")
}

fn ip(cluster: &Cluster, node: &str) -> anyhow::Result<String> {
    Ok(cluster.member(node)?.ip.to_string())
}

#[async_trait::async_trait]
impl BackendSetup for Setup {
    fn node_count(&self) -> usize {
        NODES
    }

    fn server_process(&self) -> &'static str {
        PROCESS
    }

    fn clock_faults_unsupported(&self) -> Option<&'static str> {
        Some("etcd is a Go program that reads the clock without libc, so libfaketime cannot move it")
    }

    async fn start_node(&self, cluster: &Cluster, node: &str) -> anyhow::Result<()> {
        let me = ip(cluster, node)?;
        let mut initial = vec![];
        for i in 1..=NODES {
            let n = format!("n{i}");
            initial.push(format!("{n}=http://{}:{PEER_PORT}", ip(cluster, &n)?));
        }
        let dir = data_dir(node);
        // A restarted member has its data directory; etcd then ignores the initial-cluster flags,
        // but say `existing` anyway so the log reads right.
        let (has_data, _) = cluster.exec(node, &["test", "-d", &format!("{dir}/member")]).await?;
        let state = if has_data == 0 { "existing" } else { "new" };
        let command = format!(
            "nohup etcd --name {node} --data-dir {dir} \
             --listen-peer-urls http://0.0.0.0:{PEER_PORT} --initial-advertise-peer-urls http://{me}:{PEER_PORT} \
             --listen-client-urls http://0.0.0.0:{PORT} --advertise-client-urls http://{me}:{PORT} \
             --initial-cluster {} --initial-cluster-state {state} --initial-cluster-token lockchaos \
             >> /lockchaos/logs/{node}-etcd.log 2>&1 &",
            initial.join(",")
        );
        cluster.exec_ok(node, &["sh", "-c", &command]).await.with_context(|| format!("starting etcd in {node}"))?;
        wait_healthy(cluster, node, &me).await
    }

    fn client_config(&self, cluster: &Cluster) -> ClientConfig {
        let endpoints = (1..=NODES)
            .map(|i| format!("{}:{PORT}", ip(cluster, &format!("n{i}")).unwrap_or_default()))
            .collect();
        ClientConfig::Etcd { endpoints }
    }
}

/// `etcdctl endpoint health` on the member itself: it succeeds once the member can commit a
/// proposal, i.e. the cluster has a leader and the member has joined it.
async fn wait_healthy(cluster: &Cluster, node: &str, ip: &str) -> anyhow::Result<()> {
    let endpoint = format!("http://{ip}:{PORT}");
    let deadline = Instant::now() + START_LIMIT;
    loop {
        let (code, out) = cluster
            .exec(node, &["env", "ETCDCTL_API=3", "etcdctl", "--endpoints", &endpoint, "--command-timeout=2s", "endpoint", "health"])
            .await?;
        if code == 0 && out.contains("is healthy") {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("etcd on {node} not healthy within {START_LIMIT:?} (see logs/{node}-etcd.log): {}", out.trim());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
