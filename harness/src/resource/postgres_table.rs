//! The protected resource as the seed describes it for Postgres: a table with a fence-token
//! column, written by a conditional update (`WHERE fence_token <= $token`), in a Postgres server
//! of its own (the resource container). `[resource] kind = "postgres"`.
//!
//! Fenced, it follows the ledger's rule (ledger.rs): a request whose token is below the
//! highest the row has seen is rejected, and an accepted one raises it; reads count, so a
//! newer holder's read fences out an older holder's write. Unfenced, the condition is dropped.
//! Every request is logged in `resource_log` by the same statement that applies it, so the log
//! holds exactly what the table did, in order; it becomes `resource.jsonl` at the end of the run.

use super::client::CallError;
use super::protocol::{Request, Response};
use super::ResourceCall;
use crate::containers::Cluster;
use crate::lock_backends::postgres::{connect_as, describe, server, Login, Session};
use crate::resource::ResourceMode;
use anyhow::Context;
use checker::{Event, EventType, Process};
use std::time::Duration;

pub const PORT: u16 = crate::lock_backends::postgres::PORT;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS fenced_ledger (key text PRIMARY KEY, value bigint NOT NULL,
  fence_token bigint NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS resource_log (seq bigserial PRIMARY KEY, time_ns bigint NOT NULL, client bigint NOT NULL,
  key text NOT NULL, f text NOT NULL, token bigint, value bigint NOT NULL, accepted boolean NOT NULL);";

/// The role the workers log in as, with the password the run gives them alone
/// ([`crate::resource::proof::RunKey::workers_password`]): a client program can reach this
/// server too, but cannot log in, so the table's log holds only what the workers sent.
const WORKER_ROLE: &str = "lockchaos_worker";

/// Starts Postgres in the resource container and creates the tables and the workers' role.
pub async fn start(cluster: &Cluster, member: &str, workers_password: &str) -> anyhow::Result<()> {
    server::configure(cluster, member, &format!("host all {WORKER_ROLE} 0.0.0.0/0 scram-sha-256")).await?;
    server::start(cluster, member, &Default::default()).await?;
    server::psql_on(cluster, member, SCHEMA).await.context("creating the resource tables")?;
    let role = format!(
        "CREATE ROLE {WORKER_ROLE} LOGIN PASSWORD '{workers_password}';
         GRANT SELECT, INSERT, UPDATE ON fenced_ledger, resource_log TO {WORKER_ROLE};
         GRANT USAGE ON SEQUENCE resource_log_seq_seq TO {WORKER_ROLE};"
    );
    server::psql_on(cluster, member, &role).await.context("creating the workers' role")?;
    Ok(())
}

/// The statements for one mode: $1 key, $2 token (NULL without one), $3 value (write),
/// then time_ns and client. `GREATEST` ignores a NULL token.
fn statements(mode: ResourceMode) -> (String, String) {
    let fence = match mode {
        ResourceMode::Fenced => "AND fence_token <= $2",
        ResourceMode::Unfenced => "",
    };
    let read = format!(
        "WITH r AS (UPDATE fenced_ledger SET fence_token = GREATEST(fence_token, $2) WHERE key = $1 {fence} RETURNING value)
         INSERT INTO resource_log (time_ns, client, key, f, token, value, accepted)
         SELECT $3, $4, $1, 'read', $2, COALESCE((SELECT value FROM r), 0), EXISTS (SELECT 1 FROM r)
         RETURNING accepted, value"
    );
    let write = format!(
        "WITH w AS (UPDATE fenced_ledger SET value = $3, fence_token = GREATEST(fence_token, $2) WHERE key = $1 {fence} RETURNING value)
         INSERT INTO resource_log (time_ns, client, key, f, token, value, accepted)
         SELECT $4, $5, $1, 'write', $2, $3, EXISTS (SELECT 1 FROM w)
         RETURNING accepted, value"
    );
    (read, write)
}

/// A worker's connection to the table.
pub struct PostgresTable {
    addr: String,
    password: String,
    mode: ResourceMode,
    /// The read and write statements of `mode`.
    sql: (String, String),
    timeout: Duration,
    clock: crate::clock::RunClock,
    conn: Option<Session>,
    /// Keys whose row is known to exist (rows are never deleted, so this survives reconnects).
    keys_with_row: std::collections::HashSet<String>,
}

impl PostgresTable {
    /// `password`: the workers' (the worker's configuration has it).
    pub fn new(addr: std::net::SocketAddr, password: String, mode: ResourceMode, timeout: Duration, clock: crate::clock::RunClock) -> Self {
        let sql = statements(mode);
        PostgresTable { addr: addr.to_string(), password, mode, sql, timeout, clock, conn: None, keys_with_row: Default::default() }
    }

    async fn apply(&mut self, req: &Request) -> Result<Response, String> {
        if self.conn.as_ref().is_none_or(|c| c.is_closed()) {
            let login = Login { user: WORKER_ROLE, password: Some(&self.password) };
            self.conn = Some(connect_as(&self.addr, &login, self.timeout).await?);
        }
        let client = &self.conn.as_ref().expect("connected above").client;
        let (Request::Read { key, .. } | Request::Write { key, .. }) = req;
        if !self.keys_with_row.contains(key) {
            ensure_row(client, key).await?;
            self.keys_with_row.insert(key.clone());
        }
        let now = self.clock.now() as i64;
        let rows = match req {
            Request::Read { key, client: c, token } => {
                let token = token.map(|t| t as i64);
                client.query(&self.sql.0, &[key, &token, &now, &(*c as i64)]).await
            }
            Request::Write { key, client: c, token, value } => {
                let token = token.map(|t| t as i64);
                client.query(&self.sql.1, &[key, &token, value, &now, &(*c as i64)]).await
            }
        }
        .map_err(|e| describe(&e))?;
        let row = rows.first().ok_or("no row returned")?;
        let (accepted, value): (bool, i64) = (row.get(0), row.get(1));
        Ok(if accepted {
            Response { ok: true, value: Some(value), error: None }
        } else {
            let why = match self.mode {
                ResourceMode::Fenced => "stale token: the row's fence_token is higher (conditional update matched no row)",
                ResourceMode::Unfenced => "no such row",
            };
            Response { ok: false, value: None, error: Some(why.into()) }
        })
    }
}

/// Every key starts at 0 with token 0.
async fn ensure_row(client: &tokio_postgres::Client, key: &str) -> Result<(), String> {
    client
        .execute("INSERT INTO fenced_ledger (key, value, fence_token) VALUES ($1, 0, 0) ON CONFLICT DO NOTHING", &[&key])
        .await
        .map(|_| ())
        .map_err(|e| describe(&e))
}

#[async_trait::async_trait]
impl ResourceCall for PostgresTable {
    async fn call(&mut self, req: &Request) -> Result<Response, CallError> {
        match tokio::time::timeout(self.timeout, self.apply(req)).await {
            Ok(Ok(resp)) => Ok(resp),
            // The statement may have committed: unknown, and the connection is not reused.
            Ok(Err(e)) => {
                self.conn = None;
                Err(CallError::Io(e))
            }
            Err(_) => {
                self.conn = None;
                Err(CallError::Timeout(self.timeout))
            }
        }
    }
}

#[derive(serde::Deserialize)]
struct LogRow {
    time: u64,
    client: u64,
    key: String,
    f: String,
    token: Option<u64>,
    value: i64,
    accepted: bool,
}

/// The table's log, in the order the server applied the requests, as the resource's records.
pub async fn records(cluster: &Cluster, member: &str) -> anyhow::Result<Vec<Event>> {
    let sql = "SELECT json_build_object('time', time_ns, 'client', client, 'key', key, 'f', f, 'token', token, \
               'value', value, 'accepted', accepted) FROM resource_log ORDER BY seq";
    let out = server::psql_on(cluster, member, sql).await.context("reading resource_log")?;
    out.lines().filter(|l| !l.trim().is_empty()).map(parse_log_row).collect()
}

fn parse_log_row(line: &str) -> anyhow::Result<Event> {
    let row: LogRow = serde_json::from_str(line).with_context(|| format!("resource_log row {line}"))?;
    let kind = if row.accepted { EventType::Ok } else { EventType::Fail };
    let mut ev = Event::new(row.time, Process::Named(Process::RESOURCE.into()), kind, &row.f);
    ev.key = Some(row.key);
    ev.client = Some(row.client);
    ev.token = row.token;
    ev.value = row.value.into();
    Ok(ev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_fenced_statements_carry_the_condition() {
        let (read, write) = statements(ResourceMode::Fenced);
        assert!(read.contains("WHERE key = $1 AND fence_token <= $2") && write.contains("WHERE key = $1 AND fence_token <= $2"));
        let (read, write) = statements(ResourceMode::Unfenced);
        assert!(!read.contains("fence_token <=") && !write.contains("fence_token <="));
    }

    #[test]
    fn log_rows_become_resource_records() {
        let ev =
            parse_log_row(r#"{"time" : 5, "client" : 2, "key" : "ledger", "f" : "write", "token" : 7, "value" : 3, "accepted" : false}"#)
                .unwrap();
        assert_eq!(
            serde_json::to_string(&ev).unwrap(),
            r#"{"index":0,"time":5,"process":"resource","type":"fail","f":"write","key":"ledger","value":3,"token":7,"client":2}"#
        );
    }
}
