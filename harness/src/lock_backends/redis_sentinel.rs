//! Redis with asynchronous replication and Sentinel: n1 starts as master, n2 as its replica,
//! and a Sentinel runs in each of n1..n3 (quorum 2). Clients find the master through the
//! Sentinels and lock it with the seed algorithm (SET NX PX, Lua compare-and-delete). A key set
//! on the master and not yet replicated is gone after a failover: the lock can be granted twice.

use super::redis_server::{self, RedisNode, PORT};
use super::{BackendSetup, ClientConfig, Grant, LockClient, LockError, Unsupported};
use crate::containers::Cluster;
use crate::lock_backends::LockParams;
use crate::wait;
use anyhow::Context;
use std::time::Duration;

pub const SENTINEL_PORT: u16 = 26379;
pub const MASTER_NAME: &str = "lockchaos";
const NODES: usize = 3;
/// Redis servers (master and replica); n3 runs only a Sentinel.
const REDIS_NODES: [&str; 2] = ["n1", "n2"];

pub struct Setup {
    pub options: redis_server::ServerOptions,
}

#[async_trait::async_trait]
impl BackendSetup for Setup {
    fn node_count(&self) -> usize {
        NODES
    }

    fn server_process(&self) -> &'static str {
        redis_server::PROCESS
    }

    fn renew(&self) -> Result<(), Unsupported> {
        Ok(())
    }

    fn persistence(&self) -> Result<(), Unsupported> {
        Ok(())
    }

    fn clock_faults(&self) -> Result<(), Unsupported> {
        Ok(())
    }

    fn server_clock(&self) -> Result<&'static [&'static str], Unsupported> {
        Ok(redis_server::TIME_COMMAND)
    }

    /// n1 comes up as master, n2 as replica of n1. A restarted server comes back empty (no
    /// persistence) as a replica of n1; Sentinel reconfigures it to follow the current master.
    async fn start_node(&self, cluster: &Cluster, node: &str) -> anyhow::Result<()> {
        if REDIS_NODES.contains(&node) {
            redis_server::start(cluster, node, self.options).await?;
            if node != "n1" {
                let master = cluster.planned_ip("n1")?.to_string();
                cluster.exec_ok(node, &["redis-cli", "replicaof", &master, &PORT.to_string()]).await?;
            }
        }
        Ok(())
    }

    async fn start(&self, cluster: &Cluster) -> anyhow::Result<()> {
        for node in REDIS_NODES {
            self.start_node(cluster, node).await?;
        }
        wait_replicated(cluster).await?;
        let master = cluster.planned_ip("n1")?.to_string();
        for i in 1..=NODES {
            start_sentinel(cluster, &format!("n{i}"), &master).await?;
        }
        wait_sentinels(cluster).await
    }

    fn client_config(&self, cluster: &Cluster) -> ClientConfig {
        let sentinels = (1..=NODES)
            .map(|i| format!("{}:{SENTINEL_PORT}", cluster.planned_ip(&format!("n{i}")).map(|ip| ip.to_string()).unwrap_or_default()))
            .collect();
        ClientConfig::RedisSentinel { sentinels }
    }
}

async fn start_sentinel(cluster: &Cluster, node: &str, master: &str) -> anyhow::Result<()> {
    // Sentinel rewrites its config file, so it gets a fresh writable one in the node. A Sentinel
    // retries a failover that did not get its votes after twice failover-timeout: 2 s keeps a split
    // vote (two Sentinels starting their elections together) from delaying the failover by 10 s.
    let conf = format!(
        "port {SENTINEL_PORT}\nprotected-mode no\ndaemonize yes\nlogfile /lockchaos/logs/{node}-sentinel.log\n\
         sentinel monitor {MASTER_NAME} {master} {PORT} 2\n\
         sentinel down-after-milliseconds {MASTER_NAME} 1000\n\
         sentinel failover-timeout {MASTER_NAME} 2000\n\
         sentinel parallel-syncs {MASTER_NAME} 1\n"
    );
    let script = format!("printf '%s' '{conf}' > /tmp/sentinel.conf && redis-sentinel /tmp/sentinel.conf");
    cluster.exec_ok(node, &["sh", "-c", &script]).await.with_context(|| format!("starting redis-sentinel in {node}"))?;
    Ok(())
}

async fn wait_replicated(cluster: &Cluster) -> anyhow::Result<()> {
    wait::until("n2 replicating from n1", Duration::from_secs(15), Duration::from_millis(100), || async {
        let (_, out) = cluster.exec("n2", &["redis-cli", "info", "replication"]).await?;
        Ok(wait::ready_if(out.contains("master_link_status:up"), out))
    })
    .await
}

/// Every Sentinel knows the master, the replica and the other Sentinels.
async fn wait_sentinels(cluster: &Cluster) -> anyhow::Result<()> {
    let port = SENTINEL_PORT.to_string();
    let what = "every Sentinel seeing the master, its replica and the other Sentinels";
    wait::until(what, Duration::from_secs(20), Duration::from_millis(200), || async {
        let mut ready = 0;
        for i in 1..=NODES {
            let (_, out) = cluster.exec(&format!("n{i}"), &["redis-cli", "-p", &port, "sentinel", "master", MASTER_NAME]).await?;
            let field = |name: &str| out.lines().skip_while(|l| l.trim() != name).nth(1).map(|v| v.trim().to_string());
            if field("num-slaves").as_deref() == Some("1") && field("num-other-sentinels").as_deref() == Some("2") {
                ready += 1;
            }
        }
        Ok(wait::ready_if(ready == NODES, format!("{ready}/{NODES} ready")))
    })
    .await
}

pub struct Client {
    sentinels: Vec<String>,
    lock: LockParams,
    op_timeout: Duration,
    /// The master as last discovered; dropped after any error so it is looked up again.
    master: Option<RedisNode>,
}

impl Client {
    pub fn new(sentinels: &[String], lock: LockParams, op_timeout: Duration) -> Self {
        Client { sentinels: sentinels.to_vec(), lock, op_timeout, master: None }
    }

    /// Asks the Sentinels in turn for the master and takes the first answer whose server says
    /// it is a master (a Sentinel cut off from a failover may still name the old one).
    async fn master(&mut self) -> Result<&mut RedisNode, String> {
        if self.master.is_none() {
            let mut seen = vec![];
            for sentinel in &self.sentinels {
                match ask_master(sentinel, self.op_timeout).await {
                    Ok(addr) if is_master(&addr, self.op_timeout).await => {
                        self.master = Some(RedisNode::new(&addr, self.op_timeout));
                        break;
                    }
                    Ok(addr) => seen.push(format!("{sentinel} names {addr}, which is not a master")),
                    Err(e) => seen.push(e),
                }
            }
            if self.master.is_none() {
                return Err(format!("no master found: {}", seen.join("; ")));
            }
        }
        Ok(self.master.as_mut().expect("found above"))
    }
}

async fn ask_master(sentinel: &str, timeout: Duration) -> Result<String, String> {
    let work = async {
        let mut conn = redis_server::connect(sentinel, timeout).await.map_err(|e| format!("{e:#}"))?;
        let reply: Option<(String, String)> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(MASTER_NAME)
            .query_async(&mut conn)
            .await
            .map_err(|e| format!("{sentinel}: {e}"))?;
        reply.map(|(ip, port)| format!("{ip}:{port}")).ok_or_else(|| format!("{sentinel}: no master known"))
    };
    tokio::time::timeout(timeout, work).await.unwrap_or_else(|_| Err(format!("{sentinel}: no answer within {timeout:?}")))
}

async fn is_master(addr: &str, timeout: Duration) -> bool {
    let work = async {
        let mut conn = redis_server::connect(addr, timeout).await.ok()?;
        let role: Vec<redis::Value> = redis::cmd("ROLE").query_async(&mut conn).await.ok()?;
        match role.first() {
            Some(redis::Value::BulkString(b)) => Some(b.as_slice() == b"master"),
            Some(redis::Value::SimpleString(s)) => Some(s == "master"),
            _ => None,
        }
    };
    tokio::time::timeout(timeout, work).await.ok().flatten().unwrap_or(false)
}

/// The master as a lock server: looked up through the Sentinels, forgotten after any error.
#[async_trait::async_trait]
impl redis_server::LockServer for Client {
    async fn set_nx_px(&mut self, key: &str, secret: &str, ttl_ms: u64) -> Result<bool, String> {
        let (key, secret) = (key.to_string(), secret.to_string());
        self.on_master(move |m| Box::pin(async move { m.set_nx_px(&key, &secret, ttl_ms).await })).await
    }

    async fn release_if_ours(&mut self, key: &str, secret: &str) -> Result<bool, String> {
        let (key, secret) = (key.to_string(), secret.to_string());
        self.on_master(move |m| Box::pin(async move { m.release_if_ours(&key, &secret).await })).await
    }

    async fn extend_if_ours(&mut self, key: &str, secret: &str, ttl_ms: u64) -> Result<bool, String> {
        let (key, secret) = (key.to_string(), secret.to_string());
        self.on_master(move |m| Box::pin(async move { m.extend_if_ours(&key, &secret, ttl_ms).await })).await
    }
}

impl Client {
    /// Runs one command on the master the Sentinels name; after any error the master is looked
    /// up again next time (it may have failed over).
    async fn on_master<T, F>(&mut self, op: F) -> Result<T, String>
    where
        F: for<'m> FnOnce(&'m mut RedisNode) -> futures_util::future::BoxFuture<'m, Result<T, String>> + Send,
    {
        let reply = match self.master().await {
            Ok(master) => op(master).await,
            Err(e) => Err(e),
        };
        if reply.is_err() {
            self.master = None;
        }
        reply
    }
}

#[async_trait::async_trait]
impl LockClient for Client {
    async fn acquire(&mut self, key: &str, timeout: Duration) -> Result<Grant, LockError> {
        let lock = self.lock.clone();
        redis_server::acquire_on(self, &lock, key, timeout).await
    }

    async fn release(&mut self, key: &str, grant: &Grant) -> Result<(), LockError> {
        redis_server::release_on(self, key, grant).await
    }

    async fn renew(&mut self, key: &str, grant: &Grant) -> Result<Duration, LockError> {
        let lock = self.lock.clone();
        redis_server::renew_on(self, &lock, key, grant).await
    }
}
