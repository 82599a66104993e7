//! No lock at all: the conditional write (`[workload] kind = "conditional-write"`), the first of
//! the article's alternatives. The counter lives in the run's own Postgres (a backend that
//! keeps its resource, `postgres-xact`), in `ledger` with a `version` column. A round: read the
//! value and its version → work → `UPDATE … SET value = v + 1, version = version + 1 WHERE key
//! = k AND version = n`. Zero rows: another client wrote meanwhile (a conflict): the write is
//! recorded `fail` and the round starts again from the read, until it lands or the round's
//! time (`lock.acquire_timeout_ms`) is up. Each read and applied write is logged in
//! `ledger_log` by its own statement, so the resource's record is the database's.
//!
//! `check_version = false` drops the condition: the broken variant, whose lost updates the
//! checker must find.

use super::{Recorder, WorkerConfig};
use crate::lock_backends::postgres::{connect, describe, Session};
use crate::lock_backends::ClientConfig;
use checker::EventType;
use std::time::{Duration, Instant};

const READ: &str = "WITH r AS (SELECT value, version FROM ledger WHERE key = $1), \
     l AS (INSERT INTO ledger_log (time_ns, client, key, f, value) SELECT $2, $3, $1, 'read', value FROM r) \
     SELECT value, version FROM r";
/// $4 NULL: no condition on the version (the broken variant).
const WRITE: &str = "WITH w AS (UPDATE ledger SET value = $2, version = version + 1 \
     WHERE key = $1 AND ($4::bigint IS NULL OR version = $4) RETURNING value), \
     l AS (INSERT INTO ledger_log (time_ns, client, key, f, value) SELECT $3, $5, $1, 'write', value FROM w) \
     SELECT count(*) FROM w";
const ROW: &str = "INSERT INTO ledger (key, value, version) VALUES ($1, 0, 0) ON CONFLICT (key) DO NOTHING";

pub async fn run(config: &WorkerConfig, rec: &mut Recorder) -> anyhow::Result<()> {
    let ClientConfig::PostgresXact { addr } = &config.backend else {
        anyhow::bail!("the conditional write needs the run's Postgres (backend postgres-xact), not {:?}", config.backend);
    };
    let op_timeout = Duration::from_millis(config.workload.op_timeout_ms);
    let key = config.workload.key.clone();
    let mut session: Option<Session> = None;
    while rec.clock.now() < config.stop_at {
        let round_ends = Instant::now() + Duration::from_millis(config.lock.acquire_timeout_ms);
        loop {
            let s = match &session {
                Some(s) if !s.is_closed() => s,
                _ => match connect(addr, op_timeout).await {
                    Ok(s) => {
                        // The row must exist for a conditional update to find it.
                        if let Err(e) = tokio::time::timeout(op_timeout, s.client.execute(ROW, &[&key]))
                            .await
                            .map_err(|_| "timeout".to_string())
                            .and_then(|r| r.map_err(|e| describe(&e)))
                        {
                            tracing::info!("creating the ledger row: {e}");
                        }
                        session.insert(s)
                    }
                    Err(e) => {
                        tracing::info!("connecting: {e}");
                        tokio::time::sleep(Duration::from_millis(config.lock.retry_ms)).await;
                        break;
                    }
                },
            };
            match attempt(config, rec, s, &key, op_timeout).await? {
                Attempt::Applied => break,
                Attempt::Conflict if Instant::now() < round_ends && rec.clock.now() < config.stop_at => continue,
                Attempt::Conflict => break,
                Attempt::Broken => {
                    session = None;
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(config.workload.think_ms)).await;
    }
    Ok(())
}

enum Attempt {
    Applied,
    /// The version moved: nothing written; read again.
    Conflict,
    /// The connection failed: start over on a new one.
    Broken,
}

/// Read, work, conditional write; each recorded.
async fn attempt(config: &WorkerConfig, rec: &mut Recorder, s: &Session, key: &str, op_timeout: Duration) -> anyhow::Result<Attempt> {
    let process = config.process as i64;
    rec.record(EventType::Invoke, "read", |_| {})?;
    let read = tokio::time::timeout(op_timeout, s.client.query_opt(READ, &[&key, &(rec.clock.now() as i64), &process])).await;
    let (value, version) = match read {
        Ok(Ok(Some(row))) => (row.get::<_, i64>(0), row.get::<_, i64>(1)),
        Ok(Ok(None)) => {
            rec.record(EventType::Fail, "read", |e| e.error = Some("no ledger row".into()))?;
            return Ok(Attempt::Broken);
        }
        // A read changes nothing the checker counts on: a failed one is simply not a read.
        Ok(Err(e)) => {
            rec.record(EventType::Fail, "read", |ev| ev.error = Some(describe(&e)))?;
            return Ok(Attempt::Broken);
        }
        Err(_) => {
            rec.record(EventType::Info, "read", |e| e.error = Some(format!("no answer within {op_timeout:?}")))?;
            return Ok(Attempt::Broken);
        }
    };
    rec.record(EventType::Ok, "read", |e| e.value = value.into())?;
    tokio::time::sleep(Duration::from_millis(config.workload.work_ms.draw(&mut rec.rng))).await;

    let new_value = value + 1;
    rec.record(EventType::Invoke, "write", |e| e.value = new_value.into())?;
    let condition = config.workload.check_version.then_some(version);
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [&key, &new_value, &(rec.clock.now() as i64), &condition, &process];
    let written = tokio::time::timeout(op_timeout, s.client.query_one(WRITE, &params)).await;
    let (kind, error, next) = match written {
        Ok(Ok(row)) if row.get::<_, i64>(0) == 1 => (EventType::Ok, None, Attempt::Applied),
        Ok(Ok(_)) => (EventType::Fail, Some(format!("conflict: the version moved from {version}; nothing written")), Attempt::Conflict),
        // The statement may have committed before the connection went: unknown.
        Ok(Err(e)) if e.as_db_error().is_none() => (EventType::Info, Some(describe(&e)), Attempt::Broken),
        Ok(Err(e)) => (EventType::Fail, Some(describe(&e)), Attempt::Broken),
        Err(_) => (EventType::Info, Some(format!("no answer within {op_timeout:?}")), Attempt::Broken),
    };
    rec.record(kind, "write", |e| {
        e.value = new_value.into();
        e.error = error;
    })?;
    Ok(next)
}
