//! Single Redis, exactly the seed algorithm: `SET key random-value NX PX ttl`; release by an
//! atomic Lua compare-and-delete. No fencing token.

use super::{BackendSetup, ClientConfig, Grant, LockClient, LockError};
use crate::containers::Cluster;
use crate::scenario::LockParams;
use anyhow::{bail, Context};
use rand::Rng;
use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
use std::time::{Duration, Instant};

pub const PORT: u16 = 6379;
const NODE: &str = "n1";

/// Deletes the key only if it still holds our value, in one step on the server.
const RELEASE_SCRIPT: &str = r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end"#;

pub struct Setup;

#[async_trait::async_trait]
impl BackendSetup for Setup {
    fn node_count(&self) -> usize {
        1
    }

    async fn start(&self, cluster: &Cluster) -> anyhow::Result<()> {
        let port = PORT.to_string();
        let log = format!("/lockchaos/logs/{NODE}-redis.log");
        // No persistence: a restart forgets every lock, which later scenarios rely on.
        cluster
            .exec_ok(
                NODE,
                &[
                    "redis-server", "--bind", "0.0.0.0", "--port", &port, "--protected-mode", "no",
                    "--save", "", "--appendonly", "no", "--daemonize", "yes", "--logfile", &log,
                ],
            )
            .await
            .context("starting redis-server")?;
        wait_for_ping(cluster, NODE).await
    }

    fn client_config(&self, cluster: &Cluster) -> ClientConfig {
        let ip = cluster.member(NODE).map(|m| m.ip.to_string()).unwrap_or_default();
        ClientConfig::RedisSingle { addr: format!("{ip}:{PORT}") }
    }
}

pub async fn wait_for_ping(cluster: &Cluster, node: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (code, out) = cluster.exec(node, &["redis-cli", "-p", &PORT.to_string(), "ping"]).await?;
        if code == 0 && out.contains("PONG") {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("redis on {node} did not answer PING within 15 s: {}", out.trim());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub struct Client {
    conn: MultiplexedConnection,
    lock: LockParams,
}

impl Client {
    pub async fn connect(addr: &str, lock: LockParams, op_timeout: Duration) -> anyhow::Result<Self> {
        let client = redis::Client::open(format!("redis://{addr}/"))?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(op_timeout))
            .set_response_timeout(Some(op_timeout));
        let conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .with_context(|| format!("cannot connect to redis at {addr}"))?;
        Ok(Client { conn, lock })
    }
}

#[async_trait::async_trait]
impl LockClient for Client {
    async fn acquire(&mut self, key: &str, timeout: Duration) -> Result<Grant, LockError> {
        let secret = format!("{:032x}", rand::rng().random::<u128>());
        let ttl = Duration::from_millis(self.lock.ttl_ms);
        let deadline = Instant::now() + timeout;
        loop {
            let sent = Instant::now();
            let reply: redis::RedisResult<Option<String>> = redis::cmd("SET")
                .arg(key)
                .arg(&secret)
                .arg("NX")
                .arg("PX")
                .arg(self.lock.ttl_ms)
                .query_async(&mut self.conn)
                .await;
            let last_error = match reply {
                Ok(Some(_)) => {
                    // The TTL started no earlier than when we sent the SET.
                    let validity = ttl.saturating_sub(sent.elapsed());
                    return Ok(Grant { token: None, validity, secret });
                }
                Ok(None) => None,
                // The SET may have been applied: if so the key holds our secret until its TTL.
                Err(e) => Some(e.to_string()),
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
        let deleted: redis::RedisResult<i64> =
            redis::Script::new(RELEASE_SCRIPT).key(key).arg(&grant.secret).invoke_async(&mut self.conn).await;
        match deleted {
            Ok(1) => Ok(()),
            Ok(_) => Err(LockError::Refused("lock no longer ours (expired or taken over)".into())),
            Err(e) => Err(LockError::Unknown(e.to_string())),
        }
    }
}
