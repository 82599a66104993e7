//! One Postgres 15 server in n1 (Debian's cluster 15/main), reachable over TCP without a
//! password, started with the scenario's `[server.postgres]` settings; with the pooler variants
//! also PgBouncer on 6432. For the xact variant, the protected
//! counter lives in the same database: tables `ledger` (the counters) and `ledger_log` (every
//! committed read and write, in order), exported at the end of the run as the resource's log.

use super::server::{self, psql_on, HBA_CLIENTS};
use super::{pgbouncer, replication, PORT, PROCESS};
use crate::containers::Cluster;
use crate::lock_backends::{BackendSetup, ClientConfig, Failover, KillSession, PostgresSettings, Unsupported, WarmReset};
use anyhow::Context;
use checker::{Event, EventType, Process};

const NODE: &str = "n1";
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Session-level lock, direct connection.
    Session,
    /// Session-level lock through PgBouncer in transaction pooling mode.
    SessionPooler,
    /// Transaction-level lock; the counter is a table written in the same transaction.
    Xact,
    /// Xact through PgBouncer in transaction pooling mode.
    XactPooler,
    /// Xact on a primary with a synchronous standby (see replication.rs).
    XactReplicated,
}

impl Variant {
    fn transactional(self) -> bool {
        matches!(self, Variant::Xact | Variant::XactPooler | Variant::XactReplicated)
    }

    fn pooled(self) -> bool {
        matches!(self, Variant::SessionPooler | Variant::XactPooler)
    }
}

pub struct Setup {
    pub variant: Variant,
    /// `[server.postgres]` of the scenario, for every server of the backend.
    pub settings: PostgresSettings,
}

/// The tables of the xact variant. `time_ns` is the worker's run time when it sent the
/// statement; `seq` the order in which the server executed the inserts.
// The rest serve the workloads without a lock (worker/*.rs): `version` the conditional
// write's (the locks leave it at 0); `op` in the log names the operation a write applies or a
// duplicate delivery (`dedup`) was answered for; `idempotency` and `outbox` the idempotency
// key's; `claims` the unique claim's, `jobs_done` its broken variant's (no constraint).
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS ledger (key text PRIMARY KEY, value bigint NOT NULL, version bigint NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS ledger_log (seq bigserial PRIMARY KEY, time_ns bigint NOT NULL, client bigint NOT NULL,
  key text NOT NULL, f text NOT NULL, value bigint NOT NULL, op text);
CREATE TABLE IF NOT EXISTS idempotency (op text PRIMARY KEY, result bigint);
CREATE TABLE IF NOT EXISTS outbox (client bigint PRIMARY KEY, op text NOT NULL);
CREATE TABLE IF NOT EXISTS claims (job bigint PRIMARY KEY, client bigint NOT NULL);
CREATE TABLE IF NOT EXISTS jobs_done (job bigint NOT NULL, client bigint NOT NULL);";

async fn psql(cluster: &Cluster, sql: &str) -> anyhow::Result<String> {
    psql_on(cluster, NODE, sql).await
}

#[async_trait::async_trait]
impl BackendSetup for Setup {
    fn keeps_its_resource(&self) -> bool {
        self.variant.transactional()
    }

    /// The session variant only: its locks live in the server's memory, gone with the server.
    /// The others keep the protected counter in a table, or a standby's copy of it.
    fn warm_reset(&self) -> Result<&dyn WarmReset, Unsupported> {
        match self.variant {
            Variant::Session => Ok(self),
            _ => Err("its tables (or its standby) would need a template to come back from; only postgres-session runs warm"),
        }
    }

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

    fn renew(&self) -> Result<(), Unsupported> {
        Err("an advisory lock has no lease to renew: it lasts as long as its session or transaction")
    }

    fn clock_faults(&self) -> Result<(), Unsupported> {
        Err("advisory locks have no time in them: a server clock jump changes nothing")
    }

    fn postgres_settings(&self) -> Result<(), Unsupported> {
        Ok(())
    }

    /// Configures the cluster (once), starts it with pg_ctl as user postgres and waits until it
    /// accepts connections; also after a kill (pg_ctl removes the stale pid file).
    async fn start_node(&self, cluster: &Cluster, node: &str) -> anyhow::Result<()> {
        let replicated = self.variant == Variant::XactReplicated;
        let hba = if replicated { format!("{HBA_CLIENTS}\\n{}", replication::hba(cluster)?) } else { HBA_CLIENTS.to_string() };
        server::configure(cluster, node, &hba).await?;
        if replicated && node == replication::STANDBY {
            replication::prepare_standby(cluster, node).await?;
        }
        server::start(cluster, node, &self.settings).await?;
        // The standby gets the tables by replication (and cannot write).
        if self.variant.transactional() && node == NODE {
            psql(cluster, SCHEMA).await.context("creating the ledger tables")?;
        }
        if node == NODE {
            psql(cluster, &server::client_role_sql()).await.context("creating the clients' role")?;
        }
        if self.variant.pooled() {
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

    fn kill_session(&self) -> Result<&dyn KillSession, Unsupported> {
        match self.variant {
            Variant::SessionPooler | Variant::XactPooler => {
                Err("behind PgBouncer the server's sessions belong to the pool, not to clients")
            }
            _ => Ok(self),
        }
    }

    fn failover(&self) -> Result<&dyn Failover, Unsupported> {
        match self.variant {
            Variant::XactReplicated => Ok(self),
            _ => Err("one server, no standby to promote (use postgres-xact-replicated)"),
        }
    }

    fn client_config(&self, cluster: &Cluster) -> ClientConfig {
        let ip = cluster.member(NODE).map(|m| m.ip.to_string()).unwrap_or_default();
        match self.variant {
            Variant::Session => ClientConfig::PostgresSession { addr: format!("{ip}:{PORT}") },
            Variant::SessionPooler => ClientConfig::PostgresSession { addr: format!("{ip}:{}", pgbouncer::PORT) },
            Variant::Xact => ClientConfig::PostgresXact { addr: format!("{ip}:{PORT}") },
            Variant::XactPooler => ClientConfig::PostgresXact { addr: format!("{ip}:{}", pgbouncer::PORT) },
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
            // Behind the pooler too: psql asks the server itself.
            Variant::Xact | Variant::XactPooler => NODE,
            Variant::XactReplicated => replication::current_primary(cluster).await?,
            Variant::Session | Variant::SessionPooler => return Ok(None),
        };
        let out = psql_on(
            cluster,
            node,
            "SELECT json_build_object('time', time_ns, 'client', client, 'key', key, 'f', f, 'value', value, 'op', op) FROM ledger_log ORDER BY seq",
        )
        .await
        .context("reading ledger_log")?;
        let records = out.lines().filter(|l| !l.trim().is_empty()).map(parse_row).collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Some(in_server_order(records)))
    }
}

#[async_trait::async_trait]
impl KillSession for Setup {
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
}

#[async_trait::async_trait]
impl Failover for Setup {
    async fn failover(&self, cluster: &Cluster, node: &str) -> anyhow::Result<String> {
        replication::failover(cluster, node).await
    }
}

#[derive(serde::Deserialize)]
struct Row {
    time: u64,
    client: u64,
    key: String,
    f: String,
    value: i64,
    #[serde(default)]
    op: Option<String>,
}

/// `time_ns` is when a worker sent the statement; two sent a microsecond apart may run in the
/// other order (the workloads without a lock send them concurrently), and the history is merged
/// by time. `seq` is the order the server ran them: each time is lifted to at least the one
/// before it, so the merge keeps that order. A lifted time still lies between the statement's
/// sending and its running (the earlier statement was sent at it and ran before this one).
fn in_server_order(mut records: Vec<Event>) -> Vec<Event> {
    let mut latest = 0;
    for r in &mut records {
        latest = latest.max(r.time);
        r.time = latest;
    }
    records
}

/// One `ledger_log` row as the resource's record: a committed read or write is an accepted one.
fn parse_row(line: &str) -> anyhow::Result<Event> {
    let row: Row = serde_json::from_str(line).with_context(|| format!("ledger_log row {line}"))?;
    let mut ev = Event::new(row.time, Process::Named(Process::RESOURCE.into()), EventType::Ok, &row.f);
    ev.key = Some(row.key);
    ev.client = Some(row.client);
    ev.value = row.value.into();
    ev.op = row.op;
    Ok(ev)
}

/// A killed and restarted server holds no advisory lock and no client's session; what it keeps
/// on disk (the client role, the settings) is the same for every run of the pool.
#[async_trait::async_trait]
impl WarmReset for Setup {
    fn state_paths(&self) -> Vec<String> {
        vec![]
    }

    async fn verify_empty(&self, cluster: &Cluster) -> anyhow::Result<()> {
        let sql = format!(
            "SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory') || ' ' || \
             (SELECT count(*) FROM pg_stat_activity WHERE usename = '{}')",
            server::CLIENT_ROLE
        );
        let found = psql_on(cluster, NODE, &sql).await?;
        anyhow::ensure!(found.trim() == "0 0", "postgres on {NODE} holds advisory locks and client sessions (counts: {})", found.trim());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_keep_the_server_s_order_when_merged_by_time() {
        let rows = [(100, 31), (90, 32), (120, 33)].map(|(time, value)| {
            parse_row(&format!(r#"{{"time": {time}, "client": 1, "key": "k", "f": "write", "value": {value}}}"#)).unwrap()
        });
        let times: Vec<u64> = in_server_order(rows.to_vec()).iter().map(|e| e.time).collect();
        assert_eq!(times, [100, 100, 120]);
    }

    #[test]
    fn ledger_log_rows_become_accepted_resource_records() {
        let ev = parse_row(r#"{"time" : 120, "client" : 2, "key" : "ledger", "f" : "write", "value" : 7}"#).unwrap();
        let line = serde_json::to_string(&ev).unwrap();
        assert_eq!(line, r#"{"index":0,"time":120,"process":"resource","type":"ok","f":"write","key":"ledger","value":7,"client":2}"#);
        let ev = parse_row(r#"{"time" : 130, "client" : 1, "key" : "ledger", "f" : "dedup", "value" : 7, "op" : "1-p1-4"}"#).unwrap();
        assert_eq!(ev.op.as_deref(), Some("1-p1-4"));
    }
}
