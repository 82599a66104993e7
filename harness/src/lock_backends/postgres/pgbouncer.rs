//! PgBouncer in front of the n1 server, in transaction pooling mode with a tiny pool, so that
//! clients share server connections (backends) between their transactions. Session-level
//! advisory locks then belong to whichever backend ran `pg_try_advisory_lock`, not to a client.
//! PgBouncer refuses to run as root and needs an auth_file even with auth_type=trust. It logs in
//! to the server as the client did (the server's rules decide: only psql in the node is the
//! superuser, from 127.0.0.1, which PgBouncer's connections also come from, so the clients' role
//! is the only user PgBouncer knows).

use crate::containers::Cluster;
use crate::wait;
use anyhow::Context;
use std::time::Duration;

pub const PORT: u16 = 6432;
/// Server connections per (database, user): fewer than the clients, so backends are shared.
pub const POOL_SIZE: u32 = 2;
const DIR: &str = "/etc/pgbouncer/lockchaos";

fn ini() -> String {
    format!(
        "[databases]\n\
         postgres = host=127.0.0.1 port={pg} dbname=postgres\n\
         [pgbouncer]\n\
         listen_addr = 0.0.0.0\n\
         listen_port = {PORT}\n\
         auth_type = trust\n\
         auth_file = {DIR}/users.txt\n\
         pool_mode = transaction\n\
         default_pool_size = {POOL_SIZE}\n\
         max_client_conn = 500\n\
         ignore_startup_parameters = extra_float_digits,options\n\
         logfile = /lockchaos/logs/n1-pgbouncer.log\n\
         pidfile = {DIR}/pgbouncer.pid\n",
        pg = super::PORT
    )
}

/// Writes the configuration (readable and writable by postgres), starts PgBouncer as postgres
/// in the background and waits until it answers a query.
/// A PgBouncer still running (the server behind it was killed and restarted) is left as it is.
pub async fn start(cluster: &Cluster, node: &str) -> anyhow::Result<()> {
    let (running, _) = cluster.exec(node, &["pgrep", "-x", "pgbouncer"]).await?;
    if running == 0 {
        return Ok(());
    }
    let setup = format!(
        "set -e; mkdir -p {DIR}; printf '%s' \"$INI\" > {DIR}/pgbouncer.ini; printf '\"{client}\" \"\"\\n' > {DIR}/users.txt; \
         rm -f {DIR}/pgbouncer.pid; touch /lockchaos/logs/n1-pgbouncer.log; \
         chown -R postgres {DIR} /lockchaos/logs/n1-pgbouncer.log",
        client = super::server::CLIENT_ROLE
    );
    let env = format!("INI={}", ini());
    cluster.exec_ok(node, &["env", &env, "sh", "-c", &setup]).await.context("writing the pgbouncer configuration")?;
    cluster
        .exec_ok(node, &["runuser", "-u", "postgres", "--", "pgbouncer", "-d", &format!("{DIR}/pgbouncer.ini")])
        .await
        .context("starting pgbouncer")?;
    wait::until(&format!("pgbouncer in {node} answering"), Duration::from_secs(15), Duration::from_millis(100), || async {
        let query = [
            "psql",
            "-h",
            "127.0.0.1",
            "-p",
            &PORT.to_string(),
            "-U",
            super::server::CLIENT_ROLE,
            "-d",
            "postgres",
            "-qAt",
            "-c",
            "SELECT 1",
        ];
        let (code, out) = cluster.exec(node, &query).await?;
        Ok(wait::ready_if(code == 0, out))
    })
    .await
}
