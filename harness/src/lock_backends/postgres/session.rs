//! Session-level advisory lock: acquire = `SELECT pg_try_advisory_lock(t, k)` until true or the
//! timeout; release = `SELECT pg_advisory_unlock(t, k)` (false: this session does not hold it;
//! t, k: the lock type and resource id of [`AdvisoryKey`]). The lock lasts as long as the
//! session that took it. No fencing token.
//!
//! Only simple-protocol queries (the keys are integers, written into the text): PgBouncer 1.18 in
//! transaction mode cannot carry the extended protocol's named prepared statements across
//! server connections, and this client runs unchanged behind it.

use super::{connect, describe, first_value, AdvisoryKey, Session};
use crate::lock_backends::LockParams;
use crate::lock_backends::{Grant, LockClient, LockError};
use std::time::{Duration, Instant};

/// A session lock has no expiry: the grant is valid until released or the session ends.
pub const UNBOUNDED: Duration = Duration::from_secs(24 * 3600);

pub struct Client {
    addr: String,
    lock: LockParams,
    op_timeout: Duration,
    conn: Option<Session>,
}

impl Client {
    /// Fails when the server cannot be reached at the start; reconnects after errors later on.
    pub async fn connect(addr: &str, lock: LockParams, op_timeout: Duration) -> anyhow::Result<Self> {
        let conn = connect(addr, op_timeout).await.map_err(anyhow::Error::msg)?;
        Ok(Client { addr: addr.to_string(), lock, op_timeout, conn: Some(conn) })
    }

    /// Runs one statement and returns the boolean it selects. After an error or a timeout the
    /// connection is dropped (its session, and any lock it held, ends with it on a direct
    /// connection) and the next call connects again.
    async fn select_bool(&mut self, sql: &str) -> Result<bool, String> {
        let timeout = self.op_timeout;
        let result = tokio::time::timeout(timeout, async {
            if self.conn.as_ref().is_none_or(|c| c.is_closed()) {
                self.conn = Some(connect(&self.addr, timeout).await?);
            }
            let conn = self.conn.as_ref().expect("connected above");
            let messages = conn.client.simple_query(sql).await.map_err(|e| conn.explain(&describe(&e)))?;
            match first_value(&messages).as_deref() {
                Some("t") => Ok(true),
                Some("f") => Ok(false),
                other => Err(format!("unexpected reply {other:?} to {sql}")),
            }
        })
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")));
        if result.is_err() {
            self.conn = None;
        }
        result.map_err(|e| format!("{}: {e}", self.addr))
    }
}

#[async_trait::async_trait]
impl LockClient for Client {
    async fn acquire(&mut self, key: &str, timeout: Duration) -> Result<Grant, LockError> {
        let sql = format!("SELECT pg_try_advisory_lock({})", AdvisoryKey::of(key).args());
        let deadline = Instant::now() + timeout;
        loop {
            let last_error = match self.select_bool(&sql).await {
                Ok(true) => return Ok(Grant { token: None, validity: UNBOUNDED, secret: String::new() }),
                Ok(false) => None,
                // Maybe granted, but then on a session that is now closed (direct connection).
                Err(e) => Some(e),
            };
            if Instant::now() + Duration::from_millis(self.lock.retry_ms) > deadline {
                return Err(match last_error {
                    Some(e) => LockError::Unknown(format!("acquire timed out; last error: {e}")),
                    None => LockError::Refused(format!("lock held by another session for {timeout:?}")),
                });
            }
            tokio::time::sleep(Duration::from_millis(self.lock.retry_ms)).await;
        }
    }

    async fn release(&mut self, key: &str, _grant: &Grant) -> Result<(), LockError> {
        let sql = format!("SELECT pg_advisory_unlock({})", AdvisoryKey::of(key).args());
        match self.select_bool(&sql).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(LockError::Refused("this session does not hold the lock (session ended, or another backend)".into())),
            Err(e) => Err(LockError::Unknown(e)),
        }
    }
}
