//! Single Redis, exactly the seed algorithm: `SET key random-value NX PX ttl`; release by an
//! atomic Lua compare-and-delete. No fencing token.

use super::redis_server::{self, RedisNode, PORT};
use super::{BackendSetup, ClientConfig, Grant, LockClient, LockError};
use crate::containers::Cluster;
use crate::scenario::LockParams;
use std::time::{Duration, Instant};

const NODE: &str = "n1";

pub struct Setup {
    pub faketime: bool,
}

#[async_trait::async_trait]
impl BackendSetup for Setup {
    fn node_count(&self) -> usize {
        1
    }

    fn server_process(&self) -> &'static str {
        redis_server::PROCESS
    }

    fn clock_faults_unsupported(&self) -> Option<&'static str> {
        None
    }

    async fn start_node(&self, cluster: &Cluster, node: &str) -> anyhow::Result<()> {
        redis_server::start(cluster, node, self.faketime).await
    }

    fn client_config(&self, cluster: &Cluster) -> ClientConfig {
        let ip = cluster.member(NODE).map(|m| m.ip.to_string()).unwrap_or_default();
        ClientConfig::RedisSingle { addr: format!("{ip}:{PORT}") }
    }
}

pub struct Client {
    node: RedisNode,
    lock: LockParams,
}

impl Client {
    /// Fails when the server cannot be reached at the start; reconnects after errors later on.
    pub async fn connect(addr: &str, lock: LockParams, op_timeout: Duration) -> anyhow::Result<Self> {
        redis_server::connect(addr, op_timeout).await?;
        Ok(Client { node: RedisNode::new(addr, op_timeout), lock })
    }
}

#[async_trait::async_trait]
impl LockClient for Client {
    async fn acquire(&mut self, key: &str, timeout: Duration) -> Result<Grant, LockError> {
        let secret = redis_server::new_secret();
        let ttl = Duration::from_millis(self.lock.ttl_ms);
        let deadline = Instant::now() + timeout;
        loop {
            let sent = Instant::now();
            let last_error = match self.node.set_nx_px(key, &secret, self.lock.ttl_ms).await {
                // The TTL started no earlier than when we sent the SET.
                Ok(true) => return Ok(Grant { token: None, validity: ttl.saturating_sub(sent.elapsed()), secret }),
                Ok(false) => None,
                // The SET may have been applied: if so the key holds our secret until its TTL.
                Err(e) => Some(e),
            };
            if Instant::now() + Duration::from_millis(self.lock.retry_ms) > deadline {
                return Err(match last_error {
                    Some(e) => LockError::Unknown(format!("acquire timed out; last error: {e}")),
                    None => LockError::Refused(format!("lock held by another client for {timeout:?}")),
                });
            }
            tokio::time::sleep(Duration::from_millis(self.lock.retry_ms)).await;
        }
    }

    async fn release(&mut self, key: &str, grant: &Grant) -> Result<(), LockError> {
        match self.node.release_if_ours(key, &grant.secret).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(LockError::Refused("lock no longer ours (expired or taken over)".into())),
            Err(e) => Err(LockError::Unknown(e)),
        }
    }
}
