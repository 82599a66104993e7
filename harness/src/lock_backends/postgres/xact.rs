//! Transaction-level advisory lock with the protected write in the same transaction:
//! acquire = `BEGIN; SET LOCAL idle_in_transaction_session_timeout = …; SELECT
//! pg_try_advisory_xact_lock(t, k)` (t, k: the lock type and resource id of [`AdvisoryKey`];
//! ROLLBACK and retry while false);
//! read = the counter from table `ledger`; write = the new value + `COMMIT`, which also releases
//! the lock. Every read and write is logged into `ledger_log` inside the same transaction, so
//! the log holds exactly the committed work (see setup.rs).
//!
//! The lock lasts as long as the transaction. For another client to get it while the holder is
//! frozen, the holder's transaction must die: the client sets `idle_in_transaction_session_timeout`
//! to the scenario's `lock.ttl_ms` with `SET LOCAL` inside each transaction, before taking the
//! lock, so Postgres ends a session that sits idle inside that transaction (a paused holder) for
//! that long, and its lock and uncommitted write go with it. A holder that wakes up afterwards
//! finds its session gone and cannot commit. `SET LOCAL`, not a session-level `SET`: behind a
//! transaction-mode pooler a session `SET` stays on whichever server connection ran it, for the
//! other clients' transactions that land there, and is missing from the connections this
//! client's next transactions land on.

use super::{connect, describe, first_value, AdvisoryKey, Session};
use crate::lock_backends::LockParams;
use crate::lock_backends::{Grant, LockClient, LockError, TxResource};
use std::time::{Duration, Instant};
use tokio_postgres::Client as PgClient;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tx {
    /// No transaction open.
    None,
    /// Open, holding the lock.
    Open,
    /// Committed by the write: the lock went with the commit.
    Committed,
}

pub struct Client {
    addr: String,
    lock: LockParams,
    op_timeout: Duration,
    conn: Option<Session>,
    tx: Tx,
}

impl Client {
    pub async fn connect(addr: &str, lock: LockParams, op_timeout: Duration) -> anyhow::Result<Self> {
        let mut client = Client { addr: addr.to_string(), lock, op_timeout, conn: None, tx: Tx::None };
        client.ensure_connected().await.map_err(anyhow::Error::msg)?;
        Ok(client)
    }

    async fn ensure_connected(&mut self) -> Result<(), String> {
        if self.conn.as_ref().is_some_and(|c| !c.is_closed()) {
            return Ok(());
        }
        self.tx = Tx::None;
        self.conn = Some(connect(&self.addr, self.op_timeout).await?);
        Ok(())
    }

    /// Runs `op` on the connection with the operation timeout. After an error or a timeout the
    /// connection is dropped: its session ends and the server aborts an open transaction.
    async fn with_conn<T, F>(&mut self, op: F) -> Result<T, Failure>
    where
        F: for<'c> FnOnce(&'c PgClient) -> futures_util::future::BoxFuture<'c, Result<T, tokio_postgres::Error>>,
    {
        let timeout = self.op_timeout;
        let conn = match self.conn.as_ref() {
            Some(c) if !c.is_closed() => c,
            Some(c) => {
                let why = c.explain("the session has ended");
                self.conn = None;
                self.tx = Tx::None;
                return Err(Failure::NotSent(why));
            }
            None => {
                self.tx = Tx::None;
                return Err(Failure::NotSent("no session".into()));
            }
        };
        let result = match tokio::time::timeout(timeout, op(&conn.client)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) if e.as_db_error().is_some() => Err(Failure::Server(describe(&e))),
            Ok(Err(e)) => Err(Failure::Lost(conn.explain(&describe(&e)))),
            Err(_) => Err(Failure::Lost(format!("no answer within {timeout:?}"))),
        };
        if result.is_err() {
            self.conn = None;
            self.tx = Tx::None;
        }
        result
    }
}

/// One attempt to take the lock: a transaction whose idle timeout is set for it alone, then the
/// lock (the SET LOCAL ends with the transaction, on whichever server connection it ran).
fn acquire_sql(key: &str, idle_timeout_ms: u64) -> String {
    format!(
        "BEGIN; SET LOCAL idle_in_transaction_session_timeout = {idle_timeout_ms}; SELECT pg_try_advisory_xact_lock({})",
        AdvisoryKey::of(key).args()
    )
}

/// How a statement failed.
enum Failure {
    /// Not sent: the session was already gone.
    NotSent(String),
    /// The server answered with an error.
    Server(String),
    /// Connection lost or timed out after sending: outcome unknown for that statement.
    Lost(String),
}

impl Failure {
    fn text(&self) -> &str {
        match self {
            Failure::NotSent(s) | Failure::Server(s) | Failure::Lost(s) => s,
        }
    }
}

#[async_trait::async_trait]
impl LockClient for Client {
    async fn acquire(&mut self, key: &str, timeout: Duration) -> Result<Grant, LockError> {
        let sql = acquire_sql(key, self.lock.ttl_ms);
        let deadline = Instant::now() + timeout;
        loop {
            let attempt = match self.ensure_connected().await {
                Err(e) => Err(e),
                Ok(()) => {
                    let sql = sql.clone();
                    self.with_conn(move |c| Box::pin(async move { c.simple_query(&sql).await }))
                        .await
                        .map(|m| first_value(&m))
                        .map_err(|f| f.text().to_string())
                }
            };
            let last_error = match attempt {
                Ok(Some(v)) if v == "t" => {
                    self.tx = Tx::Open;
                    // Valid while the transaction lives; a holder idle for ttl_ms loses it.
                    return Ok(Grant { token: None, validity: Duration::from_millis(self.lock.ttl_ms), secret: String::new() });
                }
                // Not granted: end the empty transaction before trying again.
                Ok(_) => self.with_conn(|c| Box::pin(c.batch_execute("ROLLBACK"))).await.err().map(|f| f.text().to_string()),
                // An error ends the session (dropped above), and any lock it might have taken.
                Err(e) => Some(e),
            };
            if Instant::now() + Duration::from_millis(self.lock.retry_ms) > deadline {
                return Err(match last_error {
                    // The connection was dropped, so no transaction of ours holds the lock.
                    Some(e) => LockError::Refused(format!("acquire timed out; last error: {}: {e}", self.addr)),
                    None => LockError::Refused(format!("lock held by another transaction for {timeout:?}")),
                });
            }
            tokio::time::sleep(Duration::from_millis(self.lock.retry_ms)).await;
        }
    }

    /// The commit of the write released the lock; after a section that did not reach its write,
    /// ROLLBACK releases it. Refused when the transaction had already died with its session.
    async fn release(&mut self, _key: &str, _grant: &Grant) -> Result<(), LockError> {
        match self.tx {
            Tx::Committed => {
                self.tx = Tx::None;
                Ok(())
            }
            Tx::Open => match self.with_conn(|c| Box::pin(c.batch_execute("ROLLBACK"))).await {
                Ok(()) => {
                    self.tx = Tx::None;
                    Ok(())
                }
                // Either way the session is dropped now, and the lock with it.
                Err(f) => Err(LockError::Refused(format!("rollback failed ({}); session closed", f.text()))),
            },
            Tx::None => Err(LockError::Refused("the transaction had already ended with its session; the lock went with it".into())),
        }
    }

    fn transactional_resource(&mut self) -> Option<&mut dyn TxResource> {
        Some(self)
    }
}

#[async_trait::async_trait]
impl TxResource for Client {
    async fn read(&mut self, key: &str, client: u64, time_ns: u64) -> Result<i64, LockError> {
        if self.tx != Tx::Open {
            return Err(LockError::Refused("no transaction open".into()));
        }
        let key = key.to_string();
        let row = self
            .with_conn(move |c| {
                Box::pin(async move {
                    c.query_one(
                        "WITH r AS (SELECT COALESCE((SELECT value FROM ledger WHERE key = $1), 0) AS v), \
                         l AS (INSERT INTO ledger_log (time_ns, client, key, f, value) SELECT $2, $3, $1, 'read', v FROM r) \
                         SELECT v FROM r",
                        &[&key, &(time_ns as i64), &(client as i64)],
                    )
                    .await
                })
            })
            .await;
        match row {
            Ok(row) => Ok(row.get::<_, i64>(0)),
            // Whatever happened, the read is not committed unless the write commits later, and
            // the session is dropped now: a read that is never committed is no read at all.
            Err(f) => Err(LockError::Refused(f.text().to_string())),
        }
    }

    async fn write_and_commit(&mut self, key: &str, client: u64, value: i64, time_ns: u64) -> Result<(), LockError> {
        if self.tx != Tx::Open {
            return Err(LockError::Refused("no transaction open: the session ended; nothing committed".into()));
        }
        let key = key.to_string();
        let written = self
            .with_conn(move |c| {
                Box::pin(async move {
                    c.execute(
                        "WITH w AS (INSERT INTO ledger (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value) \
                         INSERT INTO ledger_log (time_ns, client, key, f, value) VALUES ($3, $4, $1, 'write', $2)",
                        &[&key, &value, &(time_ns as i64), &(client as i64)],
                    )
                    .await
                })
            })
            .await;
        if let Err(f) = written {
            // COMMIT was never sent: the server aborts the transaction when the session ends.
            return Err(LockError::Refused(format!("not committed: {}", f.text())));
        }
        match self.with_conn(|c| Box::pin(c.batch_execute("COMMIT"))).await {
            Ok(()) => {
                self.tx = Tx::Committed;
                Ok(())
            }
            Err(Failure::Server(e)) | Err(Failure::NotSent(e)) => Err(LockError::Refused(format!("not committed: {e}"))),
            Err(Failure::Lost(e)) => Err(LockError::Unknown(format!("commit outcome unknown: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_timeout_is_set_inside_each_transaction_before_the_lock() {
        let k = AdvisoryKey::of("ledger");
        assert_eq!(
            acquire_sql("ledger", 1000),
            format!(
                "BEGIN; SET LOCAL idle_in_transaction_session_timeout = 1000; SELECT pg_try_advisory_xact_lock({}, {})",
                k.lock_type, k.resource
            )
        );
    }
}
