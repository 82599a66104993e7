//! One Postgres 15 server in n1 (Debian's cluster 15/main), reachable over TCP without a
//! password; with the pooler variant also PgBouncer on 6432. For the xact variant, the protected
//! counter lives in the same database: tables `ledger` (the counters) and `ledger_log` (every
//! committed read and write, in order), exported at the end of the run as the resource's log.

use super::{pgbouncer, replication, PORT, PROCESS};
use crate::containers::Cluster;
use crate::lock_backends::{BackendSetup, ClientConfig};
use anyhow::{bail, Context};
use checker::{Event, EventType, Process};
use std::time::{Duration, Instant};

const NODE: &str = "n1";
pub const BIN: &str = "/usr/lib/postgresql/15/bin";
pub const DATA: &str = "/var/lib/postgresql/15/main";
const CONF: &str = "/etc/postgresql/15/main";
fn log_file(node: &str) -> String {
    format!("/lockchaos/logs/{node}-postgres.log")
}
const START_LIMIT: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Session-level lock, direct connection.
    Session,
    /// Session-level lock through PgBouncer in transaction pooling mode.
    SessionPooler,
    /// Transaction-level lock; the counter is a table written in the same transaction.
    Xact,
    /// Xact on a primary with a synchronous standby (see replication.rs).
    XactReplicated,
}

impl Variant {
    fn transactional(self) -> bool {
        matches!(self, Variant::Xact | Variant::XactReplicated)
    }
}

pub struct Setup {
    pub variant: Variant,
}

/// The tables of the xact variant. `time_ns` is the worker's run time when it sent the
/// statement; `seq` the order in which the server executed the inserts.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS ledger (key text PRIMARY KEY, value bigint NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_log (seq bigserial PRIMARY KEY, time_ns bigint NOT NULL, client bigint NOT NULL,
  key text NOT NULL, f text NOT NULL, value bigint NOT NULL);";

/// Postgres settings: reachable from the other containers, enough connections for many clients.
const SETTINGS: &str = "listen_addresses = '*'\nmax_connections = 300\n";
pub const HBA_TRUST: &str = "host all all 0.0.0.0/0 trust";

async fn psql(cluster: &Cluster, sql: &str) -> anyhow::Result<String> {
    psql_on(cluster, NODE, sql).await
}

pub async fn psql_on(cluster: &Cluster, node: &str, sql: &str) -> anyhow::Result<String> {
    cluster
        .exec_ok(node, &["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql])
        .await
}

#[async_trait::async_trait]
impl BackendSetup for Setup {
    fn node_count(&self) -> usize {
        if self.variant == Variant::XactReplicated {
            2
        } else {
            1
        }
    }

    fn server_process(&self) -> &'static str {
        PROCESS
    }

    fn renew_unsupported(&self) -> Option<&'static str> {
        Some("an advisory lock has no lease to renew: it lasts as long as its session or transaction")
    }

    fn clock_faults_unsupported(&self) -> Option<&'static str> {
        Some("advisory locks have no time in them: a server clock jump changes nothing")
    }

    /// Configures the cluster (once), starts it with pg_ctl as user postgres and waits until it
    /// accepts connections; also after a kill (pg_ctl removes the stale pid file).
    async fn start_node(&self, cluster: &Cluster, node: &str) -> anyhow::Result<()> {
        let replicated = self.variant == Variant::XactReplicated;
        let hba = if replicated { format!("{HBA_TRUST}\\n{}", replication::HBA_REPLICATION) } else { HBA_TRUST.to_string() };
        configure(cluster, node, &hba).await?;
        if replicated && node == replication::STANDBY {
            replication::prepare_standby(cluster, node).await?;
        }
        pg_start(cluster, node).await?;
        // The standby gets the tables by replication (and cannot write).
        if self.variant.transactional() && node == NODE {
            psql(cluster, SCHEMA).await.context("creating the ledger tables")?;
        }
        if self.variant == Variant::SessionPooler {
            pgbouncer::start(cluster, node).await?;
        }
        Ok(())
    }

    /// The primary first, then the standby (see replication.rs).
    async fn start(&self, cluster: &Cluster) -> anyhow::Result<()> {
        for i in 1..=self.node_count() {
            self.start_node(cluster, &format!("n{i}")).await?;
        }
        if self.variant == Variant::XactReplicated {
            replication::make_synchronous(cluster).await?;
        }
        Ok(())
    }

    fn kill_session_unsupported(&self) -> Option<&'static str> {
        (self.variant == Variant::SessionPooler).then_some("behind PgBouncer the server's sessions belong to the pool, not to clients")
    }

    /// pg_terminate_backend on every session whose peer is the client, on the primary.
    async fn kill_sessions(&self, cluster: &Cluster, client_ip: std::net::Ipv4Addr) -> anyhow::Result<u64> {
        let node = match self.variant {
            Variant::XactReplicated => replication::current_primary(cluster).await?,
            _ => NODE,
        };
        let sql =
            format!("SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE client_addr = '{client_ip}') t");
        let out = psql_on(cluster, node, &sql).await?;
        out.trim().parse().with_context(|| format!("pg_terminate_backend count: {out:?}"))
    }

    fn failover_unsupported(&self) -> Option<&'static str> {
        (self.variant != Variant::XactReplicated).then_some("one server, no standby to promote (use postgres-xact-replicated)")
    }

    async fn failover(&self, cluster: &Cluster, node: &str) -> anyhow::Result<String> {
        replication::failover(cluster, node).await
    }

    fn client_config(&self, cluster: &Cluster) -> ClientConfig {
        let ip = cluster.member(NODE).map(|m| m.ip.to_string()).unwrap_or_default();
        match self.variant {
            Variant::Session => ClientConfig::PostgresSession { addr: format!("{ip}:{PORT}") },
            Variant::SessionPooler => ClientConfig::PostgresSession { addr: format!("{ip}:{}", pgbouncer::PORT) },
            Variant::Xact => ClientConfig::PostgresXact { addr: format!("{ip}:{PORT}") },
            Variant::XactReplicated => {
                let standby = cluster.member(replication::STANDBY).map(|m| m.ip.to_string()).unwrap_or_default();
                ClientConfig::PostgresXact { addr: format!("{ip}:{PORT},{standby}:{PORT}") }
            }
        }
    }

    /// Xact: the committed rows of `ledger_log`, in execution order, as the resource's records
    /// (only committed work is there: an aborted transaction leaves no row).
    async fn resource_records(&self, cluster: &Cluster) -> anyhow::Result<Option<Vec<Event>>> {
        let node = match self.variant {
            Variant::Xact => NODE,
            Variant::XactReplicated => replication::current_primary(cluster).await?,
            Variant::Session | Variant::SessionPooler => return Ok(None),
        };
        let out = psql_on(
            cluster,
            node,
            "SELECT json_build_object('time', time_ns, 'client', client, 'key', key, 'f', f, 'value', value) FROM ledger_log ORDER BY seq",
        )
        .await
        .context("reading ledger_log")?;
        out.lines().filter(|l| !l.trim().is_empty()).map(parse_row).collect::<anyhow::Result<Vec<_>>>().map(Some)
    }
}

/// Debian's cluster 15/main in `node`, reachable over TCP without a password (`hba`: the
/// pg_hba.conf lines to put first), configured once.
pub async fn configure(cluster: &Cluster, node: &str, hba: &str) -> anyhow::Result<()> {
    let log = log_file(node);
    let configure = format!(
        "set -e; if ! grep -qx '{HBA_TRUST}' {CONF}/pg_hba.conf; then \
           sed -i '1i {hba}' {CONF}/pg_hba.conf; \
           mkdir -p {CONF}/conf.d; printf \"{SETTINGS}\" > {CONF}/conf.d/lockchaos.conf; fi; \
         touch {log}; chown postgres {log}; mkdir -p /var/run/postgresql; chown postgres /var/run/postgresql"
    );
    cluster.exec_ok(node, &["sh", "-c", &configure]).await.context("configuring postgres")?;
    Ok(())
}

/// Starts the configured cluster with pg_ctl as user postgres and waits until it accepts
/// connections.
pub async fn pg_start(cluster: &Cluster, node: &str) -> anyhow::Result<()> {
    let start = format!("{BIN}/pg_ctl -D {DATA} -o '-c config_file={CONF}/postgresql.conf' -l {} start", log_file(node));
    cluster
        .exec_ok(node, &["runuser", "-u", "postgres", "--", "sh", "-c", &start])
        .await
        .with_context(|| format!("starting postgres in {node}"))?;
    wait_ready(cluster, node).await
}

#[derive(serde::Deserialize)]
struct Row {
    time: u64,
    client: u64,
    key: String,
    f: String,
    value: i64,
}

/// One `ledger_log` row as the resource's record: a committed read or write is an accepted one.
fn parse_row(line: &str) -> anyhow::Result<Event> {
    let row: Row = serde_json::from_str(line).with_context(|| format!("ledger_log row {line}"))?;
    let mut ev = Event::new(row.time, Process::Named(Process::RESOURCE.into()), EventType::Ok, &row.f);
    ev.key = Some(row.key);
    ev.client = Some(row.client);
    ev.value = row.value.into();
    Ok(ev)
}

async fn wait_ready(cluster: &Cluster, node: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + START_LIMIT;
    loop {
        let (code, out) =
            cluster.exec(node, &[&format!("{BIN}/pg_isready"), "-U", "postgres", "-h", "127.0.0.1", "-p", &PORT.to_string()]).await?;
        if code == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            let (_, log) = cluster.exec(node, &["tail", "-n", "20", &log_file(node)]).await.unwrap_or_default();
            bail!("postgres in {node} not ready within {START_LIMIT:?}: {} {}", out.trim(), log.trim());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_log_rows_become_accepted_resource_records() {
        let ev = parse_row(r#"{"time" : 120, "client" : 2, "key" : "ledger", "f" : "write", "value" : 7}"#).unwrap();
        let line = serde_json::to_string(&ev).unwrap();
        assert_eq!(line, r#"{"index":0,"time":120,"process":"resource","type":"ok","f":"write","key":"ledger","value":7,"client":2}"#);
    }
}
