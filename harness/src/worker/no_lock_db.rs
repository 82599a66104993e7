//! The run's Postgres as the workloads without a lock use it: a connection made again after a
//! failure, each statement bounded by the operation timeout, and its failure classified by
//! what the client can know about it.

use crate::lock_backends::postgres::{connect, describe, Session};
use std::future::Future;
use std::time::Duration;

/// A transaction left open by a frozen or dead client must not hold its rows for ever: the
/// server ends such a session after this long (the idempotency key holds its key's row while
/// it works; the work is shorter).
const IDLE_IN_TRANSACTION: &str = "SET idle_in_transaction_session_timeout = '3s'";

/// The counter's row, made once: the updates below find it.
pub const LEDGER_ROW: &str = "INSERT INTO ledger (key, value, version) VALUES ($1, 0, 0) ON CONFLICT (key) DO NOTHING";

/// One operation's effect: add one to the counter, logged with the operation's id.
/// $1 key, $2 time_ns, $3 client, $4 op; selects the new value.
pub const ADD_ONE: &str = "WITH w AS (UPDATE ledger SET value = value + 1 WHERE key = $1 RETURNING value), \
     l AS (INSERT INTO ledger_log (time_ns, client, key, f, value, op) SELECT $2, $3, $1, 'write', value, $4 FROM w) \
     SELECT value FROM w";

/// Why a statement did not answer.
#[derive(Debug)]
pub enum Failure {
    /// The server refused it (an error it reported): nothing of it was applied.
    Refused(tokio_postgres::Error),
    /// No answer in time, or the connection went: it may have been applied.
    Unknown(String),
}

impl Failure {
    pub fn describe(&self) -> String {
        match self {
            Failure::Refused(e) => describe(e),
            Failure::Unknown(why) => why.clone(),
        }
    }

    /// The server refused it with this SQLSTATE.
    pub fn is_code(&self, code: &tokio_postgres::error::SqlState) -> bool {
        matches!(self, Failure::Refused(e) if e.code() == Some(code))
    }
}

pub struct Db {
    addr: String,
    pub op_timeout: Duration,
    session: Option<Session>,
}

impl Db {
    pub fn new(addr: &str, op_timeout: Duration) -> Self {
        Db { addr: addr.to_string(), op_timeout, session: None }
    }

    /// The open connection, or a new one (Err: why none could be made).
    pub async fn session(&mut self) -> Result<&Session, String> {
        if self.session.as_ref().is_none_or(|s| s.is_closed()) {
            self.session = None;
            let s = connect(&self.addr, self.op_timeout).await?;
            bounded(self.op_timeout, s.client.batch_execute(IDLE_IN_TRANSACTION)).await.map_err(|f| f.describe())?;
            self.session = Some(s);
        }
        Ok(self.session.as_ref().expect("just connected"))
    }

    /// Drops the connection (its session, and any transaction it had open, end with it).
    pub fn reset(&mut self) {
        self.session = None;
    }
}

/// Runs one statement within `timeout`: a server error is a refusal, anything else unknown.
pub async fn bounded<T>(timeout: Duration, statement: impl Future<Output = Result<T, tokio_postgres::Error>>) -> Result<T, Failure> {
    match tokio::time::timeout(timeout, statement).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) if e.as_db_error().is_some() => Err(Failure::Refused(e)),
        Ok(Err(e)) => Err(Failure::Unknown(describe(&e))),
        Err(_) => Err(Failure::Unknown(format!("no answer within {timeout:?}"))),
    }
}
