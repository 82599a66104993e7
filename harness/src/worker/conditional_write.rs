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
//!
//! `keys = N` spreads the rounds over N keys, one drawn per round (no hot key).
//!
//! Partitioning (`kind = "partitioned"`) is the same round without the condition, on a key
//! only this client touches (`{key}-{K}`); `one_owner_per_key = false`, its broken variant,
//! puts every client on the one key.

use super::no_lock_db::{bounded, Db, Failure, LEDGER_ROW};
use super::{Recorder, WorkerConfig, WorkloadKind};
use crate::lock_backends::postgres::Session;
use checker::EventType;
use rand::Rng;
use std::collections::HashSet;
use std::time::{Duration, Instant};

const READ: &str = "WITH r AS (SELECT value, version FROM ledger WHERE key = $1), \
     l AS (INSERT INTO ledger_log (time_ns, client, key, f, value) SELECT $2, $3, $1, 'read', value FROM r) \
     SELECT value, version FROM r";
/// $4 NULL: no condition on the version (the broken variant).
const WRITE: &str = "WITH w AS (UPDATE ledger SET value = $2, version = version + 1 \
     WHERE key = $1 AND ($4::bigint IS NULL OR version = $4) RETURNING value), \
     l AS (INSERT INTO ledger_log (time_ns, client, key, f, value) SELECT $3, $5, $1, 'write', value FROM w) \
     SELECT count(*) FROM w";

pub async fn run(config: &WorkerConfig, db: &mut Db, rec: &mut Recorder) -> anyhow::Result<()> {
    let w = &config.workload;
    let (key, check_version) = match w.kind {
        WorkloadKind::Partitioned if w.one_owner_per_key => (format!("{}-{}", w.key, config.client), false),
        WorkloadKind::Partitioned => (w.key.clone(), false),
        _ => (w.key.clone(), w.check_version),
    };
    let t = db.op_timeout;
    let mut rows_made: HashSet<String> = HashSet::new();
    while config.running(rec.clock.now()) {
        let key = if w.keys > 1 { format!("{}-{}", w.key, rec.rng.random_range(1..=w.keys)) } else { key.clone() };
        rec.key = key.clone();
        let round_ends = Instant::now() + Duration::from_millis(config.lock.acquire_timeout_ms);
        loop {
            let s = match db.session().await {
                Ok(s) => s,
                Err(e) => {
                    tracing::info!("connecting: {e}");
                    tokio::time::sleep(Duration::from_millis(config.lock.retry_ms)).await;
                    break;
                }
            };
            // The row must exist for a conditional update to find it.
            if !rows_made.contains(&key) {
                match bounded(t, s.client.execute(LEDGER_ROW, &[&key])).await {
                    Ok(_) => _ = rows_made.insert(key.clone()),
                    Err(e) => tracing::info!("creating the ledger row: {}", e.describe()),
                }
            }
            match attempt(config, rec, s, &key, check_version, t).await? {
                Attempt::Applied => break,
                Attempt::Conflict if Instant::now() < round_ends && config.running(rec.clock.now()) => continue,
                Attempt::Conflict => break,
                Attempt::Broken => {
                    db.reset();
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

/// Read, work, (conditional) write; each recorded.
async fn attempt(
    config: &WorkerConfig,
    rec: &mut Recorder,
    s: &Session,
    key: &str,
    check_version: bool,
    op_timeout: Duration,
) -> anyhow::Result<Attempt> {
    let process = config.process as i64;
    rec.record(EventType::Invoke, "read", |_| {})?;
    let read = bounded(op_timeout, s.client.query_opt(READ, &[&key, &(rec.clock.now() as i64), &process])).await;
    let (value, version) = match read {
        Ok(Some(row)) => (row.get::<_, i64>(0), row.get::<_, i64>(1)),
        Ok(None) => {
            rec.record(EventType::Fail, "read", |e| e.error = Some("no ledger row".into()))?;
            return Ok(Attempt::Broken);
        }
        // A read changes nothing the checker counts on: a failed one is simply not a read.
        Err(Failure::Refused(e)) => {
            rec.record(EventType::Fail, "read", |ev| ev.error = Some(Failure::Refused(e).describe()))?;
            return Ok(Attempt::Broken);
        }
        Err(Failure::Unknown(why)) => {
            rec.record(EventType::Info, "read", |e| e.error = Some(why))?;
            return Ok(Attempt::Broken);
        }
    };
    rec.record(EventType::Ok, "read", |e| e.value = value.into())?;
    tokio::time::sleep(Duration::from_millis(config.workload.work_ms.draw(&mut rec.rng))).await;

    let new_value = value + 1;
    rec.record(EventType::Invoke, "write", |e| e.value = new_value.into())?;
    let condition = check_version.then_some(version);
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [&key, &new_value, &(rec.clock.now() as i64), &condition, &process];
    let (kind, error, next) = match bounded(op_timeout, s.client.query_one(WRITE, &params)).await {
        Ok(row) if row.get::<_, i64>(0) == 1 => (EventType::Ok, None, Attempt::Applied),
        Ok(_) => (EventType::Fail, Some(format!("conflict: the version moved from {version}; nothing written")), Attempt::Conflict),
        Err(e @ Failure::Refused(_)) => (EventType::Fail, Some(e.describe()), Attempt::Broken),
        // The statement may have committed before the connection went: unknown.
        Err(Failure::Unknown(why)) => (EventType::Info, Some(why), Attempt::Broken),
    };
    rec.record(kind, "write", |e| {
        e.value = new_value.into();
        e.error = error;
    })?;
    Ok(next)
}
