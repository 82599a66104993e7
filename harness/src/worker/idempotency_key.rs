//! No lock: the idempotency key (`[workload] kind = "idempotency-key"`). Each logical
//! operation (add one to the counter) carries a key the client made, `{K}-p{process}-{n}`.
//! The worker is both the client and the service handling its requests:
//!
//! - the handler, in one transaction: insert the key (a concurrent delivery of the same key
//!   waits here for the first to end); if it was there, answer the stored result (logged
//!   `dedup`); else work, add one, store the result with the key, commit;
//! - the client delivers an operation, and again whenever no answer came within
//!   `resend_after_ms` (the first delivery is still being handled: a duplicate in flight, as a
//!   retry after a timeout or after waking from a pause is), each delivery on a connection of
//!   its own, until one is acknowledged. Before the first delivery the operation goes into the
//!   `outbox` (one row per client); a process that starts finds there the operation its dead
//!   predecessor left unacknowledged and delivers it again.
//!
//! `key_in_same_transaction = false`, the broken variant: the handler checks the key, works,
//! applies the effect and then stores the key, each statement on its own, so a duplicate that
//! arrives while the first is working is applied twice.

use super::no_lock_db::{bounded, Db, Failure, ADD_ONE, LEDGER_ROW};
use super::{Recorder, WorkerConfig};
use crate::clock::RunClock;
use crate::lock_backends::postgres::Session;
use checker::{EventType, Process};
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::time::Instant;

const PENDING: &str = "SELECT op FROM outbox WHERE client = $1";
const OUTBOX_PUT: &str = "INSERT INTO outbox (client, op) VALUES ($1, $2) ON CONFLICT (client) DO UPDATE SET op = $2";
const OUTBOX_CLEAR: &str = "DELETE FROM outbox WHERE client = $1 AND op = $2";
const CLAIM_KEY: &str = "INSERT INTO idempotency (op) VALUES ($1) ON CONFLICT (op) DO NOTHING";
const STORED: &str = "SELECT result FROM idempotency WHERE op = $1";
/// $1 key, $2 time_ns, $3 client, $4 op, $5 the stored result.
const LOG_DEDUP: &str = "INSERT INTO ledger_log (time_ns, client, key, f, value, op) VALUES ($2, $3, $1, 'dedup', $5, $4)";
/// The effect, logged, with its result stored under the key (same transaction).
const APPLY_AND_STORE: &str = "WITH w AS (UPDATE ledger SET value = value + 1 WHERE key = $1 RETURNING value), \
     l AS (INSERT INTO ledger_log (time_ns, client, key, f, value, op) SELECT $2, $3, $1, 'write', value, $4 FROM w), \
     i AS (UPDATE idempotency SET result = w.value FROM w WHERE idempotency.op = $4) \
     SELECT value FROM w";
const STORE_KEY: &str = "INSERT INTO idempotency (op, result) VALUES ($1, $2) ON CONFLICT (op) DO NOTHING";

/// Deliveries of one operation in flight at once: the first and two resends.
const MAX_IN_FLIGHT: usize = 3;

pub async fn run(config: &WorkerConfig, addr: &str, db: &mut Db, rec: &mut Recorder) -> anyhow::Result<()> {
    let slot = i64::from(config.client);
    let retry = Duration::from_millis(config.lock.retry_ms);
    let t = db.op_timeout;
    // Set up: the counter's row, and what a dead predecessor left in the outbox.
    let mut pending: Option<String> = loop {
        if !config.running(rec.clock.now()) {
            return Ok(());
        }
        match set_up(db, &config.workload.key, slot).await {
            Ok(pending) => break pending,
            Err(e) => {
                tracing::info!("setting up: {e}");
                db.reset();
                tokio::time::sleep(retry).await;
            }
        }
    };
    // A predecessor's operation may have been applied already, whatever this process hears.
    let inherited = pending.clone();
    let mut n = 0u64;
    while config.running(rec.clock.now()) {
        let op = pending.take().unwrap_or_else(|| {
            n += 1;
            format!("{}-p{}-{n}", config.client, config.process)
        });
        // Into the outbox first: should this process die, the next one delivers it again.
        let put = match db.session().await {
            Ok(s) => bounded(t, s.client.execute(OUTBOX_PUT, &[&slot, &op])).await.map_err(|f| f.describe()),
            Err(e) => Err(e),
        };
        if let Err(e) = put {
            tracing::info!("outbox: {e}");
            db.reset();
            pending = Some(op);
            tokio::time::sleep(retry).await;
            continue;
        }
        let redelivery = inherited.as_deref() == Some(op.as_str());
        deliver_until_acknowledged(config, addr, rec, &op, redelivery).await?;
        // Best effort: a row left behind is delivered again by a later process, and answered
        // from the record.
        if let Ok(s) = db.session().await {
            let _ = bounded(t, s.client.execute(OUTBOX_CLEAR, &[&slot, &op])).await;
        }
        tokio::time::sleep(Duration::from_millis(config.workload.think_ms)).await;
    }
    Ok(())
}

async fn set_up(db: &mut Db, key: &str, slot: i64) -> Result<Option<String>, String> {
    let t = db.op_timeout;
    let s = db.session().await?;
    bounded(t, s.client.execute(LEDGER_ROW, &[&key])).await.map_err(|f| f.describe())?;
    let row = bounded(t, s.client.query_opt(PENDING, &[&slot])).await.map_err(|f| f.describe())?;
    Ok(row.map(|r| r.get(0)))
}

/// What one delivery came to.
enum Delivered {
    /// Applied now, with this result.
    Applied(i64),
    /// Answered from the record: an earlier delivery applied it.
    Stored(i64),
    /// Not applied (nothing committed, or the server refused).
    NotApplied(String),
    /// It may have been applied.
    Unknown(String),
}

type Delivery = Pin<Box<dyn Future<Output = Delivered> + Send>>;

/// Delivers `op` until one delivery is acknowledged (or the run's time is up), resending
/// while the earlier deliveries are still unanswered; then waits for those still in flight.
/// The client's history holds one operation, single-threaded as a Jepsen client: `apply`
/// invoke at the first delivery, its completion at the first acknowledgement (or, when the
/// time is up without one, `info` if any delivery may have been applied, else `fail`). Each
/// resend is a single `delivery` event; what each delivery did is in the database's record.
async fn deliver_until_acknowledged(
    config: &WorkerConfig,
    addr: &str,
    rec: &mut Recorder,
    op: &str,
    redelivery: bool,
) -> anyhow::Result<()> {
    let resend_after = Duration::from_millis(config.workload.resend_after_ms);
    let mut in_flight: FuturesUnordered<Delivery> = FuturesUnordered::new();
    let mut acknowledged = false;
    let mut sent = 0u32;
    // The last answer that was not an acknowledgement, and whether any may have applied it.
    let mut last_failure: Option<String> = None;
    let mut maybe_applied = redelivery;
    let mut next_send = Instant::now();
    loop {
        let may_send = !acknowledged && config.running(rec.clock.now());
        if may_send && Instant::now() >= next_send && in_flight.len() < MAX_IN_FLIGHT {
            if sent == 0 {
                rec.record(EventType::Invoke, "apply", |e| e.op = Some(op.to_string()))?;
            } else {
                let why = last_failure.take().unwrap_or_else(|| format!("no answer within {resend_after:?}"));
                rec.record_as(Process::DELIVERY, EventType::Info, "resend", |e| {
                    e.client = Some(config.process);
                    e.op = Some(op.to_string());
                    e.error = Some(why);
                })?;
            }
            sent += 1;
            let handler = Handler {
                addr: addr.to_string(),
                op_timeout: Duration::from_millis(config.workload.op_timeout_ms),
                key: config.workload.key.clone(),
                op: op.to_string(),
                process: config.process as i64,
                work: Duration::from_millis(config.workload.work_ms.draw(&mut rec.rng)),
                clock: rec.clock,
                same_transaction: config.workload.key_in_same_transaction,
            };
            in_flight.push(Box::pin(handler.deliver()));
            next_send = Instant::now() + resend_after;
        }
        if in_flight.is_empty() {
            if !may_send {
                break;
            }
            tokio::time::sleep_until(next_send).await;
            continue;
        }
        tokio::select! {
            Some(outcome) = in_flight.next() => {
                match outcome {
                    Delivered::Applied(v) | Delivered::Stored(v) if !acknowledged => {
                        acknowledged = true;
                        rec.record(EventType::Ok, "apply", |e| {
                            e.op = Some(op.to_string());
                            e.value = v.into();
                        })?;
                    }
                    Delivered::Applied(_) | Delivered::Stored(_) => {}
                    Delivered::NotApplied(why) => last_failure = Some(why),
                    Delivered::Unknown(why) => {
                        maybe_applied = true;
                        last_failure = Some(why);
                    }
                }
                if !acknowledged && in_flight.is_empty() {
                    // Nothing left in flight: send again after a short wait, not a full resend time.
                    next_send = Instant::now() + Duration::from_millis(config.lock.retry_ms);
                }
            }
            // Only while a delivery may be sent: with every slot taken, wait for an answer.
            _ = tokio::time::sleep_until(next_send), if may_send && in_flight.len() < MAX_IN_FLIGHT => {}
        }
    }
    if !acknowledged && sent > 0 {
        let kind = if maybe_applied { EventType::Info } else { EventType::Fail };
        let why = last_failure.unwrap_or_else(|| "no answer before the run's time was up".into());
        rec.record(kind, "apply", |e| {
            e.op = Some(op.to_string());
            e.error = Some(why);
        })?;
    }
    Ok(())
}

/// The service's handling of one delivery, on a connection of its own.
struct Handler {
    addr: String,
    op_timeout: Duration,
    key: String,
    op: String,
    process: i64,
    work: Duration,
    clock: RunClock,
    same_transaction: bool,
}

impl Handler {
    async fn deliver(self) -> Delivered {
        let mut db = Db::new(&self.addr, self.op_timeout);
        let s = match db.session().await {
            Ok(s) => s,
            Err(e) => return Delivered::NotApplied(format!("not sent: {e}")),
        };
        if self.same_transaction {
            self.in_one_transaction(s).await
        } else {
            self.check_then_store(s).await
        }
    }

    fn now(&self) -> i64 {
        self.clock.now() as i64
    }

    /// Key and effect committed together. Whatever fails before the commit leaves nothing:
    /// the connection is dropped with the transaction open, and the server rolls it back.
    async fn in_one_transaction(&self, s: &Session) -> Delivered {
        let t = self.op_timeout;
        let rolled_back = |f: Failure| Delivered::NotApplied(format!("{}; rolled back", f.describe()));
        if let Err(f) = bounded(t, s.client.batch_execute("BEGIN")).await {
            return rolled_back(f);
        }
        let inserted = match bounded(t, s.client.execute(CLAIM_KEY, &[&self.op])).await {
            Ok(n) => n,
            Err(f) => return rolled_back(f),
        };
        let answer = if inserted == 0 {
            // The key was committed by an earlier delivery: applied; only the answer may be lost.
            match self.answer_from_record(s).await {
                Ok(v) => Delivered::Stored(v),
                Err(f) => return Delivered::Unknown(format!("applied before; the stored result not read: {}", f.describe())),
            }
        } else {
            tokio::time::sleep(self.work).await;
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [&self.key, &self.now(), &self.process, &self.op];
            match bounded(t, s.client.query_one(APPLY_AND_STORE, &params)).await {
                Ok(row) => Delivered::Applied(row.get(0)),
                Err(f) => return rolled_back(f),
            }
        };
        match bounded(t, s.client.batch_execute("COMMIT")).await {
            Ok(()) => answer,
            Err(f @ Failure::Refused(_)) => rolled_back(f),
            Err(Failure::Unknown(why)) => Delivered::Unknown(format!("commit: {why}")),
        }
    }

    /// The broken variant: each statement on its own.
    async fn check_then_store(&self, s: &Session) -> Delivered {
        let t = self.op_timeout;
        match bounded(t, s.client.query_opt(STORED, &[&self.op])).await {
            // The key is stored: the operation was applied; only the answer may be lost.
            Ok(Some(_)) => {
                return match self.answer_from_record(s).await {
                    Ok(v) => Delivered::Stored(v),
                    Err(f) => Delivered::Unknown(format!("applied before; the stored result not read: {}", f.describe())),
                }
            }
            Ok(None) => {}
            Err(f) => return Delivered::NotApplied(f.describe()),
        }
        tokio::time::sleep(self.work).await;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [&self.key, &self.now(), &self.process, &self.op];
        let value: i64 = match bounded(t, s.client.query_one(ADD_ONE, &params)).await {
            Ok(row) => row.get(0),
            Err(f @ Failure::Refused(_)) => return Delivered::NotApplied(f.describe()),
            Err(Failure::Unknown(why)) => return Delivered::Unknown(why),
        };
        match bounded(t, s.client.execute(STORE_KEY, &[&self.op, &value])).await {
            Ok(_) => Delivered::Applied(value),
            // The effect is in; the key may not be.
            Err(f) => Delivered::Unknown(format!("storing the key after the effect: {}", f.describe())),
        }
    }

    /// The stored result, the answer being logged as a duplicate (`dedup`).
    async fn answer_from_record(&self, s: &Session) -> Result<i64, Failure> {
        let t = self.op_timeout;
        let row = bounded(t, s.client.query_one(STORED, &[&self.op])).await?;
        // The key is stored with its result in both variants: NULL is never committed.
        let Some(value) = row.get::<_, Option<i64>>(0) else {
            return Err(Failure::Unknown(format!("key {} stored without a result", self.op)));
        };
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [&self.key, &self.now(), &self.process, &self.op, &value];
        bounded(t, s.client.execute(LOG_DEDUP, &params)).await?;
        Ok(value)
    }
}
