//! Postgres advisory locks, several ways, against one server in n1 (and a standby in n2 for
//! the replicated variant). Every lock is taken in the two-argument form (lock type, resource
//! id): see [`AdvisoryKey`].
//! - `postgres-session`: `pg_try_advisory_lock` / `pg_advisory_unlock` on a direct connection;
//!   the lock lives as long as the session (or until unlocked). No fencing token.
//! - `postgres-session-pooler`: the same client, but through PgBouncer in transaction pooling
//!   mode: each statement may run on another server connection, so a session lock is held by
//!   whichever backend ran the lock call, not by the client (locks leak across clients).
//! - `postgres-xact`: `pg_try_advisory_xact_lock` inside a transaction, and the protected counter
//!   is a table in the same database, read and written in that transaction: lock and write
//!   commit or abort together. The worker drives it through `LockClient::transactional_resource`.
//! - `postgres-xact-pooler`: the same xact client through the same PgBouncer in transaction
//!   mode: the lock lives exactly as long as the transaction, which the pooler keeps on one
//!   server connection, so nothing leaks (the article's fix for the session pooler).
//! - `postgres-xact-replicated`: the xact lock on a primary (n1) with a synchronous streaming
//!   standby (n2); a `failover` kills the primary and promotes the standby.
//!
//! `server` runs a Postgres server in a node; `setup` is the backend (with `pgbouncer` the
//! pooler, `replication` the standby);
//! `session` and `xact` are the clients.

pub mod pgbouncer;
pub mod replication;
pub mod server;
pub mod session;
pub mod setup;
pub mod xact;

pub use setup::Setup;

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_postgres::{Client, NoTls};

pub const PORT: u16 = 5432;
pub const PROCESS: &str = "postgres";

/// The first key of every advisory lock lockchaos takes ("LC"): the lock type, which keeps
/// these locks apart from any other use of advisory locks in the same database.
pub const LOCK_TYPE: i32 = 0x4c43;

/// An advisory lock in the two-argument form `(int4, int4)` = (lock type, resource id), as the
/// article recommends over one bigint. In `pg_locks` it shows as `classid` = lock type, `objid`
/// = resource id (as unsigned), `objsubid` = 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdvisoryKey {
    pub lock_type: i32,
    pub resource: i32,
}

impl AdvisoryKey {
    /// The lock for a lock name: [`LOCK_TYPE`], and FNV-1a (32 bit) of the name as the resource
    /// id, stable across processes and builds (Rust's default hasher is randomly seeded).
    pub fn of(name: &str) -> AdvisoryKey {
        let mut h: u32 = 0x811c_9dc5;
        for b in name.as_bytes() {
            h ^= *b as u32;
            h = h.wrapping_mul(0x0100_0193);
        }
        AdvisoryKey { lock_type: LOCK_TYPE, resource: h as i32 }
    }

    /// The arguments of `pg_try_advisory_lock(…)` and its kin: `lock type, resource id`.
    pub fn args(&self) -> String {
        format!("{}, {}", self.lock_type, self.resource)
    }
}

/// A connection, and why the server ended it when it did (e.g. "terminating connection due to
/// idle-in-transaction timeout", which arrives outside any query).
pub struct Session {
    pub client: Client,
    ended: Arc<Mutex<Option<String>>>,
}

impl Session {
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
    /// `what`, followed by the server's reason for ending the session when it gave one.
    pub fn explain(&self, what: &str) -> String {
        match self.ended.lock().expect("session end lock").as_deref() {
            Some(reason) if !what.contains(reason) => format!("{what} ({reason})"),
            _ => what.to_string(),
        }
    }
}

/// Who connects, and with what password (None: trust).
pub struct Login<'a> {
    pub user: &'a str,
    pub password: Option<&'a str>,
}

/// Every lock client, built-in or program: the role that can take advisory locks and use the
/// ledger's tables, and nothing more (server.rs).
pub const CLIENT_LOGIN: Login<'static> = Login { user: server::CLIENT_ROLE, password: None };

/// Connects as a lock client ([`CLIENT_LOGIN`]) to `addr`: see [`connect_as`].
pub async fn connect(addr: &str, timeout: Duration) -> Result<Session, String> {
    connect_as(addr, &CLIENT_LOGIN, timeout).await
}

/// Connects as `login` to `addr` (`IP:PORT`, or several comma-separated: then to the first
/// that accepts writes, as libpq's target_session_attrs=read-write does) and drives the
/// connection in a task.
pub async fn connect_as(addr: &str, login: &Login<'_>, timeout: Duration) -> Result<Session, String> {
    let mut config = tokio_postgres::Config::new();
    for one in addr.split(',') {
        let (host, port) = one.rsplit_once(':').ok_or_else(|| format!("bad address {one}"))?;
        config.host(host).port(port.parse().map_err(|_| format!("bad port in {one}"))?);
    }
    if addr.contains(',') {
        config.target_session_attrs(tokio_postgres::config::TargetSessionAttrs::ReadWrite);
    }
    config.user(login.user).dbname("postgres").application_name("lockchaos").connect_timeout(timeout);
    if let Some(password) = login.password {
        config.password(password);
    }
    let (client, connection) = tokio::time::timeout(timeout, config.connect(NoTls))
        .await
        .map_err(|_| format!("{addr}: no connection within {timeout:?}"))?
        .map_err(|e| format!("{addr}: {e}"))?;
    let ended = Arc::new(Mutex::new(None));
    let reason = ended.clone();
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!("postgres connection ended: {e}");
            *reason.lock().expect("session end lock") = Some(describe(&e));
        }
    });
    Ok(Session { client, ended })
}

/// The first column of the first row of a simple query's reply.
pub fn first_value(messages: &[tokio_postgres::SimpleQueryMessage]) -> Option<String> {
    messages.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
        _ => None,
    })
}

/// An error as one line, with the server's message when there is one.
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{AdvisoryKey, LOCK_TYPE};

    #[test]
    fn advisory_keys_are_a_lock_type_and_a_stable_resource_id() {
        // FNV-1a 32 of "" is the offset basis; of "a", the published test vector.
        assert_eq!(AdvisoryKey::of(""), AdvisoryKey { lock_type: 0x4c43, resource: 0x811c_9dc5_u32 as i32 });
        assert_eq!(AdvisoryKey::of("a").resource, 0xe40c_292c_u32 as i32);
        assert_eq!(AdvisoryKey::of("ledger"), AdvisoryKey::of("ledger"));
        assert_ne!(AdvisoryKey::of("ledger"), AdvisoryKey::of("ledger2"));
        assert_eq!(AdvisoryKey::of("ledger").lock_type, LOCK_TYPE);
        let k = AdvisoryKey { lock_type: 0x4c43, resource: -7 };
        assert_eq!(format!("SELECT pg_try_advisory_lock({})", k.args()), "SELECT pg_try_advisory_lock(19523, -7)");
    }
}
