//! A 3-member etcd cluster, one member per node (n1..n3), started with `etcd` in the background
//! under the node's docker-init. A member restarted after a kill keeps its data directory and
//! rejoins with its Raft log: nothing is forgotten.

use super::members::PORT;
use crate::containers::Cluster;
use crate::lock_backends::{BackendSetup, ClientConfig, Leader, Unsupported, WarmReset};
use crate::wait;
use anyhow::Context;
use std::time::Duration;

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

    fn one_member_each(&self) -> Result<(), Unsupported> {
        Ok(())
    }

    fn skip_key_check(&self) -> Result<(), Unsupported> {
        Ok(())
    }

    fn server_process(&self) -> &'static str {
        PROCESS
    }

    fn remote_hosts(&self) -> Result<&'static [&'static str], Unsupported> {
        Ok(&["etcd-server", "etcd-client"])
    }

    fn renew(&self) -> Result<(), Unsupported> {
        Err("the etcd client keeps its lease alive by itself, every TTL/3")
    }

    fn clock_faults(&self) -> Result<(), Unsupported> {
        Err("etcd is a Go program that reads the clock without libc, so libfaketime cannot move it")
    }

    fn leader(&self) -> Result<&dyn Leader, Unsupported> {
        Ok(self)
    }

    fn warm_reset(&self) -> Result<&dyn WarmReset, Unsupported> {
        Ok(self)
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
        let endpoints = (1..=NODES).map(|i| format!("{}:{PORT}", ip(cluster, &format!("n{i}")).unwrap_or_default())).collect();
        ClientConfig::Etcd { endpoints }
    }
}

#[async_trait::async_trait]
impl Leader for Setup {
    /// Asks every member for its status (`etcdctl endpoint status`, from a running member) and
    /// returns the node whose member id is the leader id they report.
    async fn leader(&self, cluster: &Cluster) -> anyhow::Result<Option<String>> {
        let endpoints: Vec<String> = (1..=NODES)
            .map(|i| cluster.planned_ip(&format!("n{i}")).map(|ip| format!("http://{ip}:{PORT}")))
            .collect::<anyhow::Result<_>>()?;
        for i in 1..=NODES {
            let node = format!("n{i}");
            let (code, out) = cluster
                .exec(
                    &node,
                    &[
                        "env",
                        "ETCDCTL_API=3",
                        "etcdctl",
                        "--endpoints",
                        &endpoints.join(","),
                        "--command-timeout=2s",
                        "endpoint",
                        "status",
                        "-w",
                        "json",
                    ],
                )
                .await?;
            // With a member down etcdctl exits non-zero but still prints the others' status.
            let json = out.lines().find(|l| l.trim_start().starts_with('[')).unwrap_or("");
            if let Some(ip) = leader_endpoint(json) {
                let name = (1..=NODES).map(|k| format!("n{k}")).find(|n| cluster.planned_ip(n).is_ok_and(|a| a.to_string() == ip));
                return Ok(name);
            }
            if code == 0 {
                break;
            }
        }
        Ok(None)
    }
}

/// Every member's data directory goes between runs: all are killed first, so the members that
/// start next form a new cluster (no member of the old one is left to rejoin it).
#[async_trait::async_trait]
impl WarmReset for Setup {
    fn state_paths(&self) -> Vec<String> {
        (1..=NODES).map(|i| data_dir(&format!("n{i}"))).collect()
    }

    /// A new cluster's revision (1: nothing was ever written) on every member, and no lease.
    async fn verify_empty(&self, cluster: &Cluster) -> anyhow::Result<()> {
        for i in 1..=NODES {
            let node = format!("n{i}");
            let endpoint = format!("http://{}:{PORT}", ip(cluster, &node)?);
            let etcdctl = |args: &'static [&'static str]| {
                let mut cmd = vec!["env", "ETCDCTL_API=3", "etcdctl", "--endpoints", &endpoint, "--command-timeout=2s"];
                cmd.extend(args);
                cmd.into_iter().map(String::from).collect::<Vec<_>>()
            };
            let status = etcdctl(&["endpoint", "status", "-w", "json"]);
            let status = cluster.exec_ok(&node, &status.iter().map(String::as_str).collect::<Vec<_>>()).await?;
            let revision = serde_json::from_str::<serde_json::Value>(&status)
                .ok()
                .and_then(|s| s[0]["Status"]["header"]["revision"].as_u64())
                .with_context(|| format!("etcd on {node} gave no revision: {}", status.trim()))?;
            anyhow::ensure!(revision == 1, "etcd on {node} is at revision {revision}, not a new cluster's 1");
            let leases = etcdctl(&["lease", "list"]);
            let leases = cluster.exec_ok(&node, &leases.iter().map(String::as_str).collect::<Vec<_>>()).await?;
            anyhow::ensure!(leases.trim().starts_with("found 0 leases"), "etcd on {node} holds leases: {}", leases.trim());
        }
        Ok(())
    }
}

/// `etcdctl endpoint health` on the member itself: it succeeds once the member can commit a
/// proposal, i.e. the cluster has a leader and the member has joined it.
async fn wait_healthy(cluster: &Cluster, node: &str, ip: &str) -> anyhow::Result<()> {
    let endpoint = format!("http://{ip}:{PORT}");
    let what = format!("etcd on {node} healthy (see logs/{node}-etcd.log)");
    wait::until(&what, START_LIMIT, Duration::from_millis(200), || async {
        let health = ["env", "ETCDCTL_API=3", "etcdctl", "--endpoints", &endpoint, "--command-timeout=2s", "endpoint", "health"];
        let (code, out) = cluster.exec(node, &health).await?;
        Ok(wait::ready_if(code == 0 && out.contains("is healthy"), out))
    })
    .await
}

/// The IP of the endpoint that reports itself as leader, from `etcdctl endpoint status -w json`.
fn leader_endpoint(json: &str) -> Option<String> {
    let statuses: Vec<serde_json::Value> = serde_json::from_str(json).ok()?;
    statuses.iter().find_map(|s| {
        let status = &s["Status"];
        let me = status["header"]["member_id"].as_u64()?;
        (status["leader"].as_u64()? == me).then(|| {
            let endpoint = s["Endpoint"].as_str().unwrap_or_default();
            endpoint.trim_start_matches("http://").split(':').next().unwrap_or_default().to_string()
        })
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_leader_is_the_endpoint_whose_member_id_is_the_leader_id() {
        let json = r#"[{"Endpoint":"http://10.0.0.11:2379","Status":{"header":{"member_id":7},"leader":9}},
                       {"Endpoint":"http://10.0.0.12:2379","Status":{"header":{"member_id":9},"leader":9}}]"#;
        assert_eq!(super::leader_endpoint(json).as_deref(), Some("10.0.0.12"));
        assert_eq!(super::leader_endpoint("[]"), None);
        assert_eq!(super::leader_endpoint("not json"), None);
    }
}
