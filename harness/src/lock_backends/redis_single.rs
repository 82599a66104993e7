//! Single Redis, exactly the seed algorithm: `SET key random-value NX PX ttl`; release by an
//! atomic Lua compare-and-delete. No fencing token. (Setup: `redis_server::IndependentServers`
//! with one node.)

use super::redis_server::{self, RedisNode};
use super::{Grant, LockClient, LockError};
use crate::lock_backends::LockParams;
use std::time::Duration;

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
        redis_server::acquire_on(&mut self.node, &self.lock, key, timeout).await
    }

    async fn release(&mut self, key: &str, grant: &Grant) -> Result<(), LockError> {
        redis_server::release_on(&mut self.node, key, grant).await
    }

    async fn renew(&mut self, key: &str, grant: &Grant) -> Result<Duration, LockError> {
        redis_server::renew_on(&mut self.node, &self.lock, key, grant).await
    }
}
