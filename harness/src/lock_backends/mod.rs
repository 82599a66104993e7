//! Lock backends. Each backend is one module with two halves behind small traits:
//! `BackendSetup` (controller side: start the servers inside the node containers) and
//! `LockClient` (worker side: acquire and release against those servers).
//!
//! The controller hands a worker its backend as a serialisable `ClientConfig`, so a new backend
//! adds a module, a `BackendKind` variant (params.rs) and a `ClientConfig` variant.

pub mod etcd;
mod params;
pub mod postgres;
pub mod redis_sentinel;
pub mod redis_server;
pub mod redis_single;
pub mod redlock;
pub mod zookeeper;

use crate::containers::Cluster;
pub use params::{BackendKind, LockParams, Persistence, PostgresSettings, ServerOptions, ServerParams};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What a worker needs to reach the backend.
#[derive(Serialize, Deserialize, Clone, Debug)]
#[serde(tag = "backend", rename_all = "kebab-case")]
pub enum ClientConfig {
    RedisSingle {
        addr: String,
    },
    Redlock {
        addrs: Vec<String>,
    },
    /// The Sentinels, `IP:26379`.
    RedisSentinel {
        sentinels: Vec<String>,
    },
    /// The members' client endpoints, `IP:2379`.
    Etcd {
        endpoints: Vec<String>,
    },
    /// Session-level advisory locks at `IP:PORT` (the server, or PgBouncer in front of it).
    PostgresSession {
        addr: String,
    },
    /// Transaction-level advisory lock, the counter written in the same transaction; `addr`
    /// may list several `IP:PORT`, comma-separated: the client uses the one accepting writes.
    PostgresXact {
        addr: String,
    },
    /// The ensemble's servers, `IP:2181`.
    Zookeeper {
        servers: Vec<String>,
    },
}

impl ClientConfig {
    /// Client `k`'s configuration when each client talks to one member only, as in Jepsen's
    /// etcd tests: the member (k-1) mod N, and its node's index from 1. None for a backend whose
    /// clients need every node (Redlock) or reach the servers through one address anyway.
    pub fn one_member(&self, k: u32) -> Option<(ClientConfig, usize)> {
        match self {
            ClientConfig::Etcd { endpoints } if !endpoints.is_empty() => {
                let i = (k as usize).saturating_sub(1) % endpoints.len();
                Some((ClientConfig::Etcd { endpoints: vec![endpoints[i].clone()] }, i + 1))
            }
            ClientConfig::Zookeeper { servers } if !servers.is_empty() => {
                let i = (k as usize).saturating_sub(1) % servers.len();
                Some((ClientConfig::Zookeeper { servers: vec![servers[i].clone()] }, i + 1))
            }
            _ => None,
        }
    }
}

impl ClientConfig {
    /// How a client program reaches the backend: `init`'s `config` (docs/client-protocol.md).
    pub fn program_config(&self) -> serde_json::Value {
        use serde_json::json;
        let split = |addr: &str| {
            let (host, port) = addr.rsplit_once(':').unwrap_or((addr, "0"));
            (host.to_string(), port.parse::<u16>().unwrap_or(0))
        };
        let host_port = |addr: &str| {
            let (host, port) = split(addr);
            json!({"host": host, "port": port})
        };
        let all = |addrs: &[String]| addrs.iter().map(|a| host_port(a)).collect::<Vec<_>>();
        match self {
            ClientConfig::RedisSingle { addr } => host_port(addr),
            ClientConfig::Redlock { addrs } => json!({"nodes": all(addrs)}),
            ClientConfig::RedisSentinel { sentinels } => {
                json!({"sentinels": all(sentinels), "master_name": redis_sentinel::MASTER_NAME})
            }
            ClientConfig::Etcd { endpoints } => json!({"endpoints": all(endpoints)}),
            // `connect` is the connection string every ZooKeeper client takes (kazoo's hosts,
            // Curator's connectString).
            ClientConfig::Zookeeper { servers } => json!({"hosts": all(servers), "connect": servers.join(",")}),
            ClientConfig::PostgresSession { addr } | ClientConfig::PostgresXact { addr } => {
                let addrs: Vec<String> = addr.split(',').map(str::to_string).collect();
                let (hosts, ports): (Vec<String>, Vec<String>) = addrs.iter().map(|a| split(a)).map(|(h, p)| (h, p.to_string())).unzip();
                let user = postgres::server::CLIENT_ROLE;
                let mut dsn = format!("host={} port={} dbname=postgres user={user}", hosts.join(","), ports.join(","));
                if addrs.len() > 1 {
                    dsn.push_str(" target_session_attrs=read-write");
                }
                json!({"hosts": all(&addrs), "dbname": "postgres", "user": user, "dsn": dsn})
            }
        }
    }
}

/// A lock as the client believes it holds it.
#[derive(Clone, Debug)]
pub struct Grant {
    /// Fencing token; `None` when the backend has none.
    pub token: Option<u64>,
    /// How long the grant is valid from the moment acquire returned, as the client computes it.
    pub validity: Duration,
    /// Backend-private proof of ownership (a random value for Redis).
    pub secret: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Definitely not granted / not released (history type `fail`).
    #[error("{0}")]
    Refused(String),
    /// Outcome unknown, e.g. a timeout after the request was sent (history type `info`).
    #[error("{0}")]
    Unknown(String),
    /// The client cannot go on (a client program that broke the protocol, or exited): the
    /// operation's outcome is unknown (`info`) and the worker stops.
    #[error("{0}")]
    Gone(ClientGone),
}

/// Why a lock client cannot go on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientGone {
    /// It cannot be used: its program could not start, or broke the protocol. The run cannot
    /// go on (it ends unknown).
    #[error("{0}")]
    Unusable(String),
    /// Its program exited or crashed: the client comes back as a new process.
    #[error("{0}")]
    Exited(String),
}

#[async_trait::async_trait]
pub trait LockClient: Send {
    /// Tries until granted or `timeout` passes.
    async fn acquire(&mut self, key: &str, timeout: Duration) -> Result<Grant, LockError>;
    /// Releases only if still ours; `Refused` when the lock had already expired or passed on.
    async fn release(&mut self, key: &str, grant: &Grant) -> Result<(), LockError>;
    /// Gives the grant a fresh lease; Ok(validity from now). Only clients of backends whose
    /// setup has the `renew` capability are asked (scenarios with `lock.renew_ms` on others are
    /// refused when loaded); etcd renews its lease by itself.
    async fn renew(&mut self, _key: &str, _grant: &Grant) -> Result<Duration, LockError> {
        Err(LockError::Refused("this lock client cannot renew".into()))
    }
    /// Whether the backend has told the client its grant is gone (etcd: the lease expired or
    /// could not be renewed in time). Backends without sessions never know: false. Err only
    /// when the client could not answer (a client program's `fail`, `info` or silence).
    async fn session_lost(&mut self) -> Result<bool, LockError> {
        Ok(false)
    }
    /// Optional capability: a protected resource that commits or aborts together with the lock
    /// (Postgres xact: a table written in the lock's transaction). When present, the worker
    /// reads and writes through it instead of the ledger service, and the write's commit ends
    /// the lock. None for every lock whose resource lives elsewhere.
    fn transactional_resource(&mut self) -> Option<&mut dyn TxResource> {
        None
    }
}

/// A resource inside the lock's transaction. `time_ns` is the worker's run time, logged with
/// the record so the resource's log shares the history's time axis.
#[async_trait::async_trait]
pub trait TxResource: Send {
    /// Reads the counter inside the transaction (`Refused`: not read, nothing to commit).
    async fn read(&mut self, key: &str, client: u64, time_ns: u64) -> Result<i64, LockError>;
    /// Writes the counter and commits: `Refused` when it definitely did not commit, `Unknown`
    /// when the commit's outcome is unknown.
    async fn write_and_commit(&mut self, key: &str, client: u64, value: i64, time_ns: u64) -> Result<(), LockError>;
}

/// Why a backend lacks an optional capability: the words of the error that refuses a scenario
/// needing it.
pub type Unsupported = &'static str;

/// The controller's side of a backend: starts its servers inside the node containers and tells
/// workers how to reach them. Optional capabilities, Jepsen-style, are methods answering
/// `Ok(capability)` or `Err(why not)`: a fault asks for the one it needs, the preflight refuses
/// a scenario whose backend lacks it, and a new capability is one method with its default.
#[async_trait::async_trait]
pub trait BackendSetup: Send + Sync {
    /// Node containers (n1..nN) this backend needs.
    fn node_count(&self) -> usize;
    /// The server's process name in a node, for pause and kill faults on nodes.
    fn server_process(&self) -> &'static str;
    /// Starts (or, after a kill, restarts) the server in one node and waits until it answers.
    async fn start_node(&self, cluster: &Cluster, node: &str) -> anyhow::Result<()>;
    /// Starts the servers inside all running nodes; by default each on its own, in parallel.
    async fn start(&self, cluster: &Cluster) -> anyhow::Result<()> {
        let nodes: Vec<String> = (1..=self.node_count()).map(|i| format!("n{i}")).collect();
        for result in futures_util::future::join_all(nodes.iter().map(|n| self.start_node(cluster, n))).await {
            result?;
        }
        Ok(())
    }
    /// How workers reach the started backend.
    fn client_config(&self, cluster: &Cluster) -> ClientConfig;
    /// The protected resource's records (process "resource"), read at the end of the workload,
    /// when the backend keeps the resource itself (Postgres xact); None: the ledger service's
    /// own log is the record.
    async fn resource_records(&self, _cluster: &Cluster) -> anyhow::Result<Option<Vec<checker::Event>>> {
        Ok(None)
    }

    /// Clock faults can move the servers' clocks: they run under libfaketime when a scenario
    /// has one (see libfaketime.rs).
    fn clock_faults(&self) -> Result<(), Unsupported> {
        Err("its servers do not run under libfaketime")
    }
    /// A command, run in a node, that prints its server's clock as seconds and microseconds on
    /// two lines (Redis's TIME): how a clock slew measures that the clock really ran fast.
    fn server_clock(&self) -> Result<&'static [&'static str], Unsupported> {
        Err("lockchaos has no way to read its servers' clock")
    }
    /// `server.persistence` applies.
    fn persistence(&self) -> Result<(), Unsupported> {
        Err("it has no persistence setting (only the Redis backends do)")
    }
    /// `[server.postgres]` applies: its servers are Postgres servers.
    fn postgres_settings(&self) -> Result<(), Unsupported> {
        Err("its servers are not Postgres (only the Postgres backends take [server.postgres])")
    }
    /// Each client can talk to one member only (`lock.one_member_each`).
    fn one_member_each(&self) -> Result<(), Unsupported> {
        Err("its clients need every node, or reach the servers through one address anyway (only etcd's and ZooKeeper's take one member each)")
    }
    /// The lock client can skip reading its key after waiting (`lock.check_key_after_wait =
    /// false`): it waits in a queue of keys, as etcd's Mutex does.
    fn skip_key_check(&self) -> Result<(), Unsupported> {
        Err("its lock client does not wait in a queue of keys (only etcd's does)")
    }
    /// The protected resource lives in the lock's own transaction (Postgres xact): a scenario
    /// cannot name another.
    fn keeps_its_resource(&self) -> bool {
        false
    }
    /// The lock client can renew a grant on request (`lock.renew_ms`).
    fn renew(&self) -> Result<(), Unsupported> {
        Err("its lock client has no renew")
    }
    /// A leader among the nodes, for faults aimed at `leader`.
    fn leader(&self) -> Result<&dyn Leader, Unsupported> {
        Err("its servers elect no leader")
    }
    /// The backend's own failover (fault `failover`).
    fn failover(&self) -> Result<&dyn Failover, Unsupported> {
        Err("it has no replica to promote")
    }
    /// Ending one client's server sessions (fault `kill-session`).
    fn kill_session(&self) -> Result<&dyn KillSession, Unsupported> {
        Err("its server has no sessions to end one by one")
    }
    /// Its servers can be wiped and started again in the same nodes between the runs of a warm
    /// pool (node_source/warm_pool.rs), and a started server shown to hold nothing of an earlier
    /// run. Without it, a backend's runs always start on fresh containers.
    fn warm_reset(&self) -> Result<&dyn WarmReset, Unsupported> {
        Err("lockchaos has no verified reset of its servers between runs yet")
    }
    /// Its servers can run on hosts a nodes-file names (hosts/): the Debian packages each host
    /// needs for them.
    fn remote_hosts(&self) -> Result<&'static [&'static str], Unsupported> {
        Err("lockchaos runs its servers only in containers so far (a host's own cluster and data directory would be at stake)")
    }
}

/// Capability: the servers reset in place between two runs of a warm pool. The pool kills
/// every process in the nodes, removes `state_paths` and the faults' state, restores the
/// nodes' firewall, starts the servers again (`BackendSetup::start`) and then asks
/// `verify_empty`.
#[async_trait::async_trait]
pub trait WarmReset: Send + Sync {
    /// Where, in a node, the servers keep what outlives a restart (data directories, an AOF).
    fn state_paths(&self) -> Vec<String>;
    /// With the servers started again: Err naming what an earlier run left (a key, a revision
    /// past a new cluster's, a lock or a session).
    async fn verify_empty(&self, cluster: &Cluster) -> anyhow::Result<()>;
}

/// Capability: the servers elect a leader.
#[async_trait::async_trait]
pub trait Leader: Send + Sync {
    /// The node whose server leads now; None when none does (an election is under way).
    async fn leader(&self, cluster: &Cluster) -> anyhow::Result<Option<String>>;
}

/// Capability: the backend's own failover away from a node.
#[async_trait::async_trait]
pub trait Failover: Send + Sync {
    /// Moves the primary role away from `node`; returns what was done, in words.
    async fn failover(&self, cluster: &Cluster, node: &str) -> anyhow::Result<String>;
}

/// Capability: the server can end one client's sessions.
#[async_trait::async_trait]
pub trait KillSession: Send + Sync {
    /// Ends every server session of the client at `client_ip`; returns how many ended.
    async fn kill_sessions(&self, cluster: &Cluster, client_ip: std::net::Ipv4Addr) -> anyhow::Result<u64>;
}

/// The backend a scenario names, with its servers set up as `options` say.
pub fn setup_for(kind: BackendKind, options: ServerOptions) -> Box<dyn BackendSetup> {
    let redis = redis_server::ServerOptions { faketime: options.faketime, appendonly: options.persistence == Persistence::Appendonly };
    use postgres::setup::Variant;
    let postgres_setup = |variant| Box::new(postgres::Setup { variant, settings: options.postgres }) as Box<dyn BackendSetup>;
    match kind {
        BackendKind::RedisSingle => Box::new(redis_server::IndependentServers { nodes: 1, options: redis }),
        BackendKind::Redlock => Box::new(redis_server::IndependentServers { nodes: redlock::NODES, options: redis }),
        BackendKind::RedisSentinel => Box::new(redis_sentinel::Setup { options: redis }),
        BackendKind::Etcd => Box::new(etcd::Setup),
        BackendKind::Zookeeper => Box::new(zookeeper::Setup),
        BackendKind::PostgresSession => postgres_setup(Variant::Session),
        BackendKind::PostgresSessionPooler => postgres_setup(Variant::SessionPooler),
        BackendKind::PostgresXact => postgres_setup(Variant::Xact),
        BackendKind::PostgresXactPooler => postgres_setup(Variant::XactPooler),
        BackendKind::PostgresXactReplicated => postgres_setup(Variant::XactReplicated),
    }
}
pub async fn connect_client(config: &ClientConfig, lock: &LockParams, op_timeout: Duration) -> anyhow::Result<Box<dyn LockClient>> {
    match config {
        ClientConfig::RedisSingle { addr } => Ok(Box::new(redis_single::Client::connect(addr, lock.clone(), op_timeout).await?)),
        ClientConfig::Redlock { addrs } => Ok(Box::new(redlock::Client::new(addrs, lock.clone()))),
        ClientConfig::RedisSentinel { sentinels } => Ok(Box::new(redis_sentinel::Client::new(sentinels, lock.clone(), op_timeout))),
        ClientConfig::Etcd { endpoints } => Ok(Box::new(etcd::Client::new(endpoints, lock.clone(), op_timeout))),
        ClientConfig::Zookeeper { servers } => Ok(Box::new(zookeeper::Client::new(servers, lock.clone(), op_timeout))),
        ClientConfig::PostgresSession { addr } => Ok(Box::new(postgres::session::Client::connect(addr, lock.clone(), op_timeout).await?)),
        ClientConfig::PostgresXact { addr } => Ok(Box::new(postgres::xact::Client::connect(addr, lock.clone(), op_timeout).await?)),
    }
}

#[cfg(test)]
mod tests {
    use super::ClientConfig;
    use serde_json::json;

    #[test]
    fn a_program_is_told_hosts_and_ports_and_for_postgres_a_dsn_with_the_clients_role() {
        assert_eq!(ClientConfig::RedisSingle { addr: "10.0.0.2:6379".into() }.program_config(), json!({"host": "10.0.0.2", "port": 6379}));
        let etcd = ClientConfig::Etcd { endpoints: vec!["10.0.0.2:2379".into(), "10.0.0.3:2379".into()] }.program_config();
        assert_eq!(etcd["endpoints"][1], json!({"host": "10.0.0.3", "port": 2379}));
        let one = ClientConfig::PostgresSession { addr: "10.0.0.2:5432".into() }.program_config();
        assert_eq!(one["dsn"], "host=10.0.0.2 port=5432 dbname=postgres user=lockchaos_client");
        // The replicated pair: both servers, and only the one that accepts writes will do.
        let two = ClientConfig::PostgresXact { addr: "10.0.0.2:5432,10.0.0.3:5432".into() }.program_config();
        assert_eq!(
            two["dsn"],
            "host=10.0.0.2,10.0.0.3 port=5432,5432 dbname=postgres user=lockchaos_client target_session_attrs=read-write"
        );
        let sentinel = ClientConfig::RedisSentinel { sentinels: vec!["10.0.0.2:26379".into()] }.program_config();
        assert_eq!(sentinel["master_name"], "lockchaos");
        let zookeeper = ClientConfig::Zookeeper { servers: vec!["10.0.0.2:2181".into(), "10.0.0.3:2181".into()] };
        assert_eq!(
            zookeeper.program_config(),
            json!({"hosts": [{"host": "10.0.0.2", "port": 2181}, {"host": "10.0.0.3", "port": 2181}], "connect": "10.0.0.2:2181,10.0.0.3:2181"})
        );
        // One server each, as etcd's members: client-2 talks to the second.
        let (one, node) = zookeeper.one_member(2).unwrap();
        assert_eq!((one.program_config()["connect"].clone(), node), (json!("10.0.0.3:2181"), 2));
    }
}
