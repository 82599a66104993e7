//! What a scenario says about the lock: which backend, the lock's parameters, and how the
//! backend's servers run. The `[lock]` and `[server]` tables of a scenario file.

use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum BackendKind {
    /// One Redis server; SET key value NX PX ttl, release by Lua compare-and-delete.
    RedisSingle,
    /// Five independent Redis servers; Redlock's majority rule.
    Redlock,
    /// A master with an asynchronous replica, and three Sentinels that fail over.
    RedisSentinel,
    /// A 3-member etcd cluster: lease + lock key, token = the key's create_revision.
    Etcd,
    /// A 3-server ZooKeeper ensemble: an ephemeral sequential znode per contender, each waiting
    /// on the one ahead; token = the lock znode's czxid; the session timeout is the TTL.
    Zookeeper,
    /// One Postgres server: session-level advisory lock on a direct connection.
    PostgresSession,
    /// The same session-level lock through PgBouncer in transaction pooling mode.
    PostgresSessionPooler,
    /// Transaction-level advisory lock; the counter is a table written in the same transaction.
    PostgresXact,
    /// The same transaction-level lock through PgBouncer in transaction pooling mode.
    PostgresXactPooler,
    /// The same, on a primary (n1) with a synchronous streaming standby (n2) that a
    /// `failover` promotes; clients connect to whichever accepts writes.
    PostgresXactReplicated,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct LockParams {
    #[serde(default = "defaults::ttl_ms")]
    pub ttl_ms: u64,
    #[serde(default = "defaults::acquire_timeout_ms")]
    pub acquire_timeout_ms: u64,
    /// Delay between attempts while the lock is taken (etcd: only after a failed request; a
    /// waiter watches the key ahead of it instead of polling).
    #[serde(default = "defaults::retry_ms")]
    pub retry_ms: u64,
    /// Redlock: how long to wait for one node before counting it as a no.
    #[serde(default = "defaults::node_timeout_ms")]
    pub node_timeout_ms: u64,
    /// Redlock: clock drift allowance as a share of the TTL (plus 2 ms).
    #[serde(default = "defaults::drift_factor")]
    pub drift_factor: f64,
    /// Renew the grant every this many ms while holding it (0: never). A failed renew is
    /// recorded; the client carries on unless `workload.honour_session_loss` (Redis backends).
    #[serde(default)]
    pub renew_ms: u64,
    /// Each client talks to one member only (etcd, ZooKeeper): client-K to member n((K-1) mod N + 1), its
    /// only endpoint, as Jepsen's etcd tests do; no failover to another member. Targets
    /// `holder-member` then name the member the holder talks to.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_member_each: bool,
    /// etcd: after waiting for the keys ahead to go, read our key again and refuse when it is
    /// gone (our session expired while we waited), as Go's `Mutex.Lock` does since etcd 3.5.0.
    /// `false` is the `Mutex` of every etcd 3.4 release, which Jepsen tested at 3.4.3: it
    /// returns the lock once the keys ahead are gone, even when its own lease expired meanwhile.
    #[serde(default = "defaults::yes", skip_serializing_if = "defaults::is_yes")]
    pub check_key_after_wait: bool,
}

impl Default for LockParams {
    fn default() -> Self {
        LockParams {
            ttl_ms: defaults::ttl_ms(),
            acquire_timeout_ms: defaults::acquire_timeout_ms(),
            retry_ms: defaults::retry_ms(),
            node_timeout_ms: defaults::node_timeout_ms(),
            drift_factor: defaults::drift_factor(),
            renew_ms: 0,
            one_member_each: false,
            check_key_after_wait: true,
        }
    }
}

/// How the backend's servers run.
#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct ServerParams {
    #[serde(default)]
    pub persistence: Persistence,
    /// `[server.postgres]`: settings given to the Postgres servers (Postgres backends only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres: Option<PostgresSettings>,
}

/// Settings of a Postgres server, each passed as `-c name=value` when given; those left out
/// keep the server's defaults (the keep-alives then are the kernel's: first probe after 2 hours
/// of silence). They decide how long the server keeps the session, and its locks, of a client
/// that went silent without closing its connection.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PostgresSettings {
    /// Seconds of silence on a client connection before the server's first keep-alive probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_keepalives_idle: Option<u32>,
    /// Seconds between unanswered keep-alive probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_keepalives_interval: Option<u32>,
    /// Unanswered probes after which the server's kernel drops the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_keepalives_count: Option<u32>,
    /// Milliseconds that data sent may stay unacknowledged before the kernel drops the
    /// connection (TCP_USER_TIMEOUT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_user_timeout: Option<u32>,
}

impl PostgresSettings {
    /// The settings given, as (name, value), in a fixed order.
    pub fn given(&self) -> Vec<(&'static str, u32)> {
        [
            ("tcp_keepalives_idle", self.tcp_keepalives_idle),
            ("tcp_keepalives_interval", self.tcp_keepalives_interval),
            ("tcp_keepalives_count", self.tcp_keepalives_count),
            ("tcp_user_timeout", self.tcp_user_timeout),
        ]
        .into_iter()
        .filter_map(|(name, v)| v.map(|v| (name, v)))
        .collect()
    }

    /// The server's command-line options for them: `-c name=value …` (empty when none given).
    pub fn server_options(&self) -> String {
        self.given().iter().map(|(name, v)| format!(" -c {name}={v}")).collect()
    }
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Persistence {
    /// Redis keeps everything in memory only: a restarted server has forgotten every lock.
    #[default]
    None,
    /// Redis appends every write to its AOF and fsyncs it before replying (appendfsync
    /// always): a restarted server replays it, locks (with their expiry times) included.
    Appendonly,
}

/// How the servers of one run are started: with libfaketime when a fault moves their clocks,
/// with the scenario's persistence and server settings.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServerOptions {
    pub faketime: bool,
    pub persistence: Persistence,
    /// `[server.postgres]`, for the Postgres backends.
    pub postgres: PostgresSettings,
}

mod defaults {
    pub fn ttl_ms() -> u64 {
        2000
    }
    pub fn acquire_timeout_ms() -> u64 {
        5000
    }
    pub fn retry_ms() -> u64 {
        50
    }
    pub fn node_timeout_ms() -> u64 {
        100
    }
    pub fn drift_factor() -> f64 {
        0.01
    }
    pub fn yes() -> bool {
        true
    }
    pub fn is_yes(b: &bool) -> bool {
        *b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_settings_become_server_options_in_a_fixed_order() {
        let s: PostgresSettings = toml::from_str("tcp_user_timeout = 4000\ntcp_keepalives_idle = 5\n").unwrap();
        assert_eq!(s.given(), [("tcp_keepalives_idle", 5), ("tcp_user_timeout", 4000)]);
        assert_eq!(s.server_options(), " -c tcp_keepalives_idle=5 -c tcp_user_timeout=4000");
        assert_eq!(PostgresSettings::default().server_options(), "");
        // Written back as given: a run.json holds what the scenario set, nothing more.
        assert_eq!(toml::to_string(&s).unwrap(), "tcp_keepalives_idle = 5\ntcp_user_timeout = 4000\n");
    }
}
