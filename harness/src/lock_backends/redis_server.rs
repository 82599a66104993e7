//! Redis pieces shared by the Redis backends: starting a server in a node, and the two commands
//! of the seed algorithm (SET NX PX to take, Lua compare-and-delete to give back).

use super::{BackendSetup, ClientConfig, Grant, LockError, Unsupported, WarmReset};
use crate::containers::Cluster;
use crate::lock_backends::LockParams;
use crate::wait;
use anyhow::Context;
use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
use std::time::{Duration, Instant};

pub const PORT: u16 = 6379;
pub const PROCESS: &str = "redis-server";
/// The server's clock, run in its node: TIME prints seconds and microseconds on two lines.
pub const TIME_COMMAND: &[&str] = &["redis-cli", "-p", "6379", "TIME"];

/// Deletes the key only if it still holds our value, in one step on the server.
const RELEASE_SCRIPT: &str = r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end"#;

/// Moves the key's expiry to a full TTL from now only if it still holds our value.
const EXTEND_SCRIPT: &str = r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("pexpire", KEYS[1], ARGV[2])
else
    return 0
end"#;

/// How a Redis server runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServerOptions {
    /// Under libfaketime, reading its clock offset from the node's offset file.
    pub faketime: bool,
    /// With an AOF fsynced on every write (`server.persistence = "appendonly"`).
    pub appendonly: bool,
}

/// Where an appendonly server keeps its AOF inside the node (kept across a kill and restart).
const AOF_DIR: &str = "/var/lib/lockchaos-redis";

/// Starts redis-server in `node`, by default without persistence (a restart forgets every lock,
/// which the restart scenarios rely on), and waits until it answers PING. With `faketime`, it runs under
/// libfaketime reading its clock offset from the node's offset file (see libfaketime.rs);
/// Debian's redis-server then needs the jemalloc stand-in, or it hangs at start.
pub async fn start(cluster: &Cluster, node: &str, options: ServerOptions) -> anyhow::Result<()> {
    let port = PORT.to_string();
    let log = format!("/lockchaos/logs/{node}-redis.log");
    let mut cmd: Vec<String> = vec![];
    if options.faketime {
        crate::libfaketime::prepare(cluster, node).await?;
        cmd.push("env".into());
        cmd.extend(crate::libfaketime::env_args());
    }
    cmd.extend(
        [
            "redis-server",
            "--bind",
            "0.0.0.0",
            "--port",
            &port,
            "--protected-mode",
            "no",
            "--save",
            "",
            "--daemonize",
            "yes",
            "--logfile",
            &log,
        ]
        .map(String::from),
    );
    if options.appendonly {
        // Every write fsynced to the AOF before the reply; a restart replays it.
        cluster.exec_ok(node, &["mkdir", "-p", AOF_DIR]).await?;
        cmd.extend(["--appendonly", "yes", "--appendfsync", "always", "--dir", AOF_DIR].map(String::from));
    } else {
        cmd.extend(["--appendonly", "no"].map(String::from));
    }
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    cluster.exec_ok(node, &cmd).await.with_context(|| format!("starting redis-server in {node}"))?;
    let what = format!("redis on {node} answering PING");
    // A daemonized server listens within milliseconds: ask often.
    wait::until(&what, Duration::from_secs(15), Duration::from_millis(20), || async {
        let (code, out) = cluster.exec(node, &["redis-cli", "-p", &port, "ping"]).await?;
        Ok(wait::ready_if(code == 0 && out.contains("PONG"), out))
    })
    .await
}

pub async fn connect(addr: &str, timeout: Duration) -> anyhow::Result<MultiplexedConnection> {
    let client = redis::Client::open(format!("redis://{addr}/"))?;
    let config = AsyncConnectionConfig::new().set_connection_timeout(Some(timeout)).set_response_timeout(Some(timeout));
    client.get_multiplexed_async_connection_with_config(&config).await.with_context(|| format!("cannot connect to redis at {addr}"))
}

/// `SET key secret NX PX ttl`: Ok(true) when set, Ok(false) when the key exists.
pub async fn set_nx_px(conn: &mut MultiplexedConnection, key: &str, secret: &str, ttl_ms: u64) -> redis::RedisResult<bool> {
    let reply: Option<String> = redis::cmd("SET").arg(key).arg(secret).arg("NX").arg("PX").arg(ttl_ms).query_async(conn).await?;
    Ok(reply.is_some())
}

/// Deletes the key if it still holds `secret`: Ok(true) when deleted.
pub async fn release_if_ours(conn: &mut MultiplexedConnection, key: &str, secret: &str) -> redis::RedisResult<bool> {
    let deleted: i64 = redis::Script::new(RELEASE_SCRIPT).key(key).arg(secret).invoke_async(conn).await?;
    Ok(deleted == 1)
}

/// Gives the key a fresh TTL if it still holds `secret`: Ok(true) when extended.
pub async fn extend_if_ours(conn: &mut MultiplexedConnection, key: &str, secret: &str, ttl_ms: u64) -> redis::RedisResult<bool> {
    let extended: i64 = redis::Script::new(EXTEND_SCRIPT).key(key).arg(secret).arg(ttl_ms).invoke_async(conn).await?;
    Ok(extended == 1)
}

/// One Redis server as a client sees it: connected lazily, and the connection dropped after any
/// error or timeout, so a restarted or healed server is reached again (and a late reply on a
/// timed-out connection is never mistaken for the next one).
pub struct RedisNode {
    pub addr: String,
    timeout: Duration,
    conn: Option<MultiplexedConnection>,
}

impl RedisNode {
    pub fn new(addr: &str, timeout: Duration) -> Self {
        RedisNode { addr: addr.to_string(), timeout, conn: None }
    }

    async fn call<T, F>(&mut self, op: F) -> Result<T, String>
    where
        F: for<'c> FnOnce(&'c mut MultiplexedConnection) -> futures_util::future::BoxFuture<'c, redis::RedisResult<T>>,
    {
        let timeout = self.timeout;
        let result = tokio::time::timeout(timeout, async {
            if self.conn.is_none() {
                self.conn = Some(connect(&self.addr, timeout).await.map_err(|e| format!("{e:#}"))?);
            }
            op(self.conn.as_mut().expect("connected above")).await.map_err(|e| e.to_string())
        })
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")));
        if result.is_err() {
            self.conn = None;
        }
        result.map_err(|e| format!("{}: {e}", self.addr))
    }

    /// `SET key secret NX PX ttl`: Ok(true) when set, Ok(false) when the key exists.
    pub async fn set_nx_px(&mut self, key: &str, secret: &str, ttl_ms: u64) -> Result<bool, String> {
        let (key, secret) = (key.to_string(), secret.to_string());
        self.call(move |c| Box::pin(async move { set_nx_px(c, &key, &secret, ttl_ms).await })).await
    }

    /// Deletes the key if it still holds `secret`: Ok(true) when deleted.
    pub async fn release_if_ours(&mut self, key: &str, secret: &str) -> Result<bool, String> {
        let (key, secret) = (key.to_string(), secret.to_string());
        self.call(move |c| Box::pin(async move { release_if_ours(c, &key, &secret).await })).await
    }

    /// Gives the key a fresh TTL if it still holds `secret`: Ok(true) when extended.
    pub async fn extend_if_ours(&mut self, key: &str, secret: &str, ttl_ms: u64) -> Result<bool, String> {
        let (key, secret) = (key.to_string(), secret.to_string());
        self.call(move |c| Box::pin(async move { extend_if_ours(c, &key, &secret, ttl_ms).await })).await
    }
}

/// A random value that identifies one grant.
pub fn new_secret() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// N independent Redis servers, one per node (n1..nN): the single-Redis backend (N = 1) and
/// Redlock (N = 5) differ only in how their clients use them.
pub struct IndependentServers {
    pub nodes: usize,
    pub options: ServerOptions,
}

#[async_trait::async_trait]
impl BackendSetup for IndependentServers {
    fn node_count(&self) -> usize {
        self.nodes
    }

    fn server_process(&self) -> &'static str {
        PROCESS
    }

    fn remote_hosts(&self) -> Result<&'static [&'static str], Unsupported> {
        Ok(&["redis-server", "redis-tools"])
    }

    fn clock_faults(&self) -> Result<(), Unsupported> {
        Ok(())
    }

    fn server_clock(&self) -> Result<&'static [&'static str], Unsupported> {
        Ok(TIME_COMMAND)
    }

    fn renew(&self) -> Result<(), Unsupported> {
        Ok(())
    }

    fn persistence(&self) -> Result<(), Unsupported> {
        Ok(())
    }

    fn warm_reset(&self) -> Result<&dyn WarmReset, Unsupported> {
        Ok(self)
    }

    async fn start_node(&self, cluster: &Cluster, node: &str) -> anyhow::Result<()> {
        start(cluster, node, self.options).await
    }

    fn client_config(&self, cluster: &Cluster) -> ClientConfig {
        let addr = |i: usize| format!("{}:{PORT}", cluster.planned_ip(&format!("n{i}")).map(|ip| ip.to_string()).unwrap_or_default());
        match self.nodes {
            1 => ClientConfig::RedisSingle { addr: addr(1) },
            n => ClientConfig::Redlock { addrs: (1..=n).map(addr).collect() },
        }
    }
}

/// Where a one-server client sends its SET NX PX and its release: a fixed server, or the
/// master a Sentinel names.
#[async_trait::async_trait]
pub trait LockServer: Send {
    /// Ok(true) set, Ok(false) the key exists, Err the outcome is unknown.
    async fn set_nx_px(&mut self, key: &str, secret: &str, ttl_ms: u64) -> Result<bool, String>;
    /// Ok(true) deleted, Ok(false) not ours, Err unknown.
    async fn release_if_ours(&mut self, key: &str, secret: &str) -> Result<bool, String>;
    /// Ok(true) given a fresh TTL, Ok(false) not ours, Err unknown.
    async fn extend_if_ours(&mut self, key: &str, secret: &str, ttl_ms: u64) -> Result<bool, String>;
}

#[async_trait::async_trait]
impl LockServer for RedisNode {
    async fn set_nx_px(&mut self, key: &str, secret: &str, ttl_ms: u64) -> Result<bool, String> {
        RedisNode::set_nx_px(self, key, secret, ttl_ms).await
    }
    async fn release_if_ours(&mut self, key: &str, secret: &str) -> Result<bool, String> {
        RedisNode::release_if_ours(self, key, secret).await
    }
    async fn extend_if_ours(&mut self, key: &str, secret: &str, ttl_ms: u64) -> Result<bool, String> {
        RedisNode::extend_if_ours(self, key, secret, ttl_ms).await
    }
}

/// The seed algorithm on one server: SET NX PX until granted or `timeout`, retrying every
/// `retry_ms`. The validity counts from when the granting SET was sent.
pub async fn acquire_on(server: &mut dyn LockServer, lock: &LockParams, key: &str, timeout: Duration) -> Result<Grant, LockError> {
    let secret = new_secret();
    let ttl = Duration::from_millis(lock.ttl_ms);
    let deadline = Instant::now() + timeout;
    loop {
        let sent = Instant::now();
        let last_error = match server.set_nx_px(key, &secret, lock.ttl_ms).await {
            Ok(true) => return Ok(Grant { token: None, validity: ttl.saturating_sub(sent.elapsed()), secret }),
            Ok(false) => None,
            // The SET may have been applied: if so the key holds our secret until its TTL.
            Err(e) => Some(e),
        };
        if Instant::now() + Duration::from_millis(lock.retry_ms) > deadline {
            return Err(match last_error {
                Some(e) => LockError::Unknown(format!("acquire timed out; last error: {e}")),
                None => LockError::Refused(format!("lock held by another client for {timeout:?}")),
            });
        }
        tokio::time::sleep(Duration::from_millis(lock.retry_ms)).await;
    }
}

/// Renew by compare-and-pexpire: the new validity counts from when the command was sent.
pub async fn renew_on(server: &mut dyn LockServer, lock: &LockParams, key: &str, grant: &Grant) -> Result<Duration, LockError> {
    let sent = Instant::now();
    match server.extend_if_ours(key, &grant.secret, lock.ttl_ms).await {
        Ok(true) => Ok(Duration::from_millis(lock.ttl_ms).saturating_sub(sent.elapsed())),
        Ok(false) => Err(LockError::Refused("lock no longer ours (expired or taken over): not renewed".into())),
        Err(e) => Err(LockError::Unknown(e)),
    }
}

/// Release by compare-and-delete; Refused when the key is no longer ours.
pub async fn release_on(server: &mut dyn LockServer, key: &str, grant: &Grant) -> Result<(), LockError> {
    match server.release_if_ours(key, &grant.secret).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(LockError::Refused("lock no longer ours (expired, taken over, or lost in a failover)".into())),
        Err(e) => Err(LockError::Unknown(e)),
    }
}

#[async_trait::async_trait]
impl WarmReset for IndependentServers {
    /// The AOF, and the snapshot a server started in / would load (none is ever saved with
    /// `--save ""`, but a replica of some master writes the master's data there).
    fn state_paths(&self) -> Vec<String> {
        vec![AOF_DIR.to_string(), "/dump.rdb".to_string()]
    }

    /// No key in any server (asked side by side).
    async fn verify_empty(&self, cluster: &Cluster) -> anyhow::Result<()> {
        let port = PORT.to_string();
        let nodes: Vec<String> = (1..=self.nodes).map(|k| format!("n{k}")).collect();
        let dbsize = ["redis-cli", "-p", port.as_str(), "DBSIZE"];
        let answers = futures_util::future::try_join_all(nodes.iter().map(|n| cluster.exec_ok(n, &dbsize))).await?;
        for (node, keys) in nodes.iter().zip(answers) {
            anyhow::ensure!(keys.trim() == "0", "redis on {node} holds {} key(s) of an earlier run", keys.trim());
        }
        Ok(())
    }
}
