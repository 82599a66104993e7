//! A Postgres 15 server in a node (Debian's cluster 15/main), started with pg_ctl as user
//! postgres, asked with psql. Used by the Postgres backends and by the Postgres table resource.
//!
//! Nobody but the node itself is the superuser: psql in the node and PgBouncer beside the
//! server connect as postgres from 127.0.0.1; clients (built-in and programs) connect from
//! anywhere, without a password, as [`CLIENT_ROLE`], which can take advisory locks and use the
//! tables granted to it and nothing more (no COPY ... TO PROGRAM, no pg_read_file). Each user
//! of the server adds its own pg_hba.conf lines for the rest (`configure`).

use super::PORT;
use crate::containers::Cluster;
use crate::lock_backends::PostgresSettings;
use crate::wait;
use anyhow::Context;
use std::time::Duration;

pub const BIN: &str = "/usr/lib/postgresql/15/bin";
pub const DATA: &str = "/var/lib/postgresql/15/main";
const CONF: &str = "/etc/postgresql/15/main";
/// How long a start may take until the server accepts connections.
const START_LIMIT: Duration = Duration::from_secs(30);

/// Reachable from the other containers, enough connections for many clients.
const SETTINGS: &str = "listen_addresses = '*'\nmax_connections = 300\n";
/// The superuser, from the node itself only.
const HBA_LOCAL_SUPERUSER: &str = "host all postgres 127.0.0.1/32 trust";
/// The role of the lock clients.
pub const CLIENT_ROLE: &str = "lockchaos_client";
pub const HBA_CLIENTS: &str = "host all lockchaos_client 0.0.0.0/0 trust";

/// Creates [`CLIENT_ROLE`] (once; a standby gets it by replication) and grants it the tables
/// there are: run after the schema.
pub fn client_role_sql() -> String {
    format!(
        "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{CLIENT_ROLE}') THEN            CREATE ROLE {CLIENT_ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION; END IF; END $$;
         REVOKE CREATE ON SCHEMA public FROM PUBLIC;
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {CLIENT_ROLE};
         GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {CLIENT_ROLE};"
    )
}

fn log_file(node: &str) -> String {
    format!("/lockchaos/logs/{node}-postgres.log")
}

/// Runs one SQL statement with psql in `node` and returns its unaligned, tuples-only output.
pub async fn psql_on(cluster: &Cluster, node: &str, sql: &str) -> anyhow::Result<String> {
    cluster
        .exec_ok(node, &["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql])
        .await
}

/// Debian's cluster 15/main in `node`, reachable by the superuser from the node itself and as
/// `hba` says (pg_hba.conf lines, separated by a backslash and an n as sed's `i` takes them,
/// put after that one and before Debian's own), configured once.
pub async fn configure(cluster: &Cluster, node: &str, hba: &str) -> anyhow::Result<()> {
    let log = log_file(node);
    let configure = format!(
        "set -e; if ! grep -qx '{HBA_LOCAL_SUPERUSER}' {CONF}/pg_hba.conf; then \
           sed -i '1i {HBA_LOCAL_SUPERUSER}\\n{hba}' {CONF}/pg_hba.conf; \
           mkdir -p {CONF}/conf.d; printf \"{SETTINGS}\" > {CONF}/conf.d/lockchaos.conf; fi; \
         touch {log}; chown postgres {log}; mkdir -p /var/run/postgresql; chown postgres /var/run/postgresql"
    );
    cluster.exec_ok(node, &["sh", "-c", &configure]).await.context("configuring postgres")?;
    Ok(())
}

/// Starts the configured cluster with pg_ctl as user postgres and waits until it accepts
/// connections; also after a kill (pg_ctl removes the stale pid file). `settings` are the
/// scenario's `[server.postgres]`, given to the server as `-c name=value`.
pub async fn start(cluster: &Cluster, node: &str, settings: &PostgresSettings) -> anyhow::Result<()> {
    let start = format!(
        "{BIN}/pg_ctl -D {DATA} -o '-c config_file={CONF}/postgresql.conf{}' -l {} start",
        settings.server_options(),
        log_file(node)
    );
    cluster
        .exec_ok(node, &["runuser", "-u", "postgres", "--", "sh", "-c", &start])
        .await
        .with_context(|| format!("starting postgres in {node}"))?;
    let what = format!("postgres in {node} accepting connections (see logs/{node}-postgres.log)");
    wait::until(&what, START_LIMIT, Duration::from_millis(100), || async {
        let ready = [&format!("{BIN}/pg_isready"), "-U", "postgres", "-h", "127.0.0.1", "-p", &PORT.to_string()];
        let (code, out) = cluster.exec(node, &ready).await?;
        Ok(wait::ready_if(code == 0, out))
    })
    .await
}

/// Whether the server in `node` accepts writes (is not a standby in recovery).
pub async fn is_primary(cluster: &Cluster, node: &str) -> bool {
    psql_on(cluster, node, "SELECT pg_is_in_recovery()").await.is_ok_and(|out| out.trim() == "f")
}
