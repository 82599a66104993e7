//! `lockchaos worker`: one lock client, PID 1 of its own container.
//!
//! Loop: acquire → read the resource → hold (work) → write value+1 with the token → release →
//! think. Every step is an invoke event followed by ok / fail / info, appended and flushed at
//! once, so a worker frozen or killed mid-round leaves everything it completed.
//!
//! Over 400 lines: the round's steps (section, transactional section, check before write,
//! renewal while working) share the `Recorder` and read best in one place; the workloads
//! without a lock live in the submodules.

mod conditional_write;
mod config;
mod idempotency_key;
mod no_lock_db;
mod unique_claim;
mod work_ms;

use crate::client_program::ProgramClient;
use crate::clock::RunClock;
use crate::event_log::EventLog;
use crate::lock_backends::{self, ClientGone, Grant, LockClient, LockError, TxResource};
use crate::resource::client::{CallError, ResourceClient};
use crate::resource::postgres_table::PostgresTable;
use crate::resource::protocol::Request;
use crate::resource::ResourceCall;
use crate::resource::ResourceKind;

use checker::{Event, EventType, Process};
pub use config::{WorkerConfig, Workload, WorkloadKind};
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::time::{Duration, Instant};
pub use work_ms::WorkMs;

struct Recorder {
    log: EventLog,
    clock: RunClock,
    process: u64,
    key: String,
    /// Draws the work time of each round.
    rng: StdRng,
}

impl Recorder {
    fn new(config: &WorkerConfig) -> anyhow::Result<Self> {
        Ok(Recorder {
            log: EventLog::create(&config.events)?,
            clock: RunClock { t0_ns: config.t0_ns },
            process: config.process,
            key: config.workload.key.clone(),
            rng: StdRng::seed_from_u64(config.seed ^ config.process.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        })
    }

    fn record(&mut self, kind: EventType, f: &str, fill: impl FnOnce(&mut Event)) -> anyhow::Result<()> {
        self.append(Process::Client(self.process), kind, f, fill)
    }

    /// A single event of a named party that lives in this worker (the client's transport).
    fn record_as(&mut self, party: &str, kind: EventType, f: &str, fill: impl FnOnce(&mut Event)) -> anyhow::Result<()> {
        self.append(Process::Named(party.into()), kind, f, fill)
    }

    fn append(&mut self, process: Process, kind: EventType, f: &str, fill: impl FnOnce(&mut Event)) -> anyhow::Result<()> {
        let mut ev = Event::new(self.clock.now(), process, kind, f);
        ev.key = Some(self.key.clone());
        fill(&mut ev);
        self.log.append(ev)?;
        Ok(())
    }
}

/// The signal that asks a worker to finish its round and exit, as at its stop time: the run
/// ends before its time limit (its episodes are over).
pub const END_SIGNAL: &str = "SIGUSR1";

static END_ASKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the run asked this worker to end (see [`END_SIGNAL`]).
pub fn end_asked() -> bool {
    END_ASKED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Listens for [`END_SIGNAL`] from now on.
fn listen_for_end() -> anyhow::Result<()> {
    let mut usr1 = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())?;
    tokio::spawn(async move {
        if usr1.recv().await.is_some() {
            END_ASKED.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
    Ok(())
}

pub async fn run(config: WorkerConfig) -> anyhow::Result<()> {
    listen_for_end()?;
    if let Some(egress) = &config.egress {
        egress.apply_here()?;
    }
    let op_timeout = Duration::from_millis(config.workload.op_timeout_ms);
    if !config.workload.kind.takes_lock() {
        return run_without_lock(&config, op_timeout).await;
    }
    let lock: Box<dyn LockClient> = match &config.program {
        Some(spec) => {
            // Init may not outlast the run: a program still silent at the stop time is named
            // by this worker, before the run has to stop it.
            let left = Duration::from_nanos(config.stop_at.saturating_sub(RunClock { t0_ns: config.t0_ns }.now()));
            let ttl = Duration::from_millis(config.lock.ttl_ms);
            Box::new(ProgramClient::start(spec, config.process, op_timeout, ttl, left.max(Duration::from_secs(1))).await?)
        }
        None => lock_backends::connect_client(&config.backend, &config.lock, op_timeout).await?,
    };
    let resource: Box<dyn ResourceCall> = match config.resource_params.kind {
        ResourceKind::Ledger => Box::new(ResourceClient::new(config.resource, op_timeout, config.resource_proof.clone())),
        ResourceKind::Postgres => {
            let clock = RunClock { t0_ns: config.t0_ns };
            let password = config.resource_proof.clone();
            Box::new(PostgresTable::new(config.resource, password, config.resource_params.mode, op_timeout, clock))
        }
    };
    run_with(&config, lock, resource).await
}

/// The article's alternatives: no lock, the counter in the run's own Postgres.
async fn run_without_lock(config: &WorkerConfig, op_timeout: Duration) -> anyhow::Result<()> {
    let lock_backends::ClientConfig::PostgresXact { addr } = &config.backend else {
        anyhow::bail!(
            "the {} workload needs the run's Postgres (backend postgres-xact), not {:?}",
            config.workload.kind.name(),
            config.backend
        );
    };
    let mut db = no_lock_db::Db::new(addr, op_timeout);
    let rec = &mut Recorder::new(config)?;
    match config.workload.kind {
        WorkloadKind::ConditionalWrite | WorkloadKind::Partitioned => conditional_write::run(config, &mut db, rec).await,
        WorkloadKind::IdempotencyKey => idempotency_key::run(config, addr, &mut db, rec).await,
        WorkloadKind::UniqueClaim => unique_claim::run(config, &mut db, rec).await,
        WorkloadKind::Lock => unreachable!("a lock workload takes the lock"),
    }
}

/// The loop itself, over an already connected lock client and resource client.
pub async fn run_with(config: &WorkerConfig, mut lock: Box<dyn LockClient>, mut resource: Box<dyn ResourceCall>) -> anyhow::Result<()> {
    let mut rec = Recorder::new(config)?;
    let clock = rec.clock;
    let key = config.workload.key.clone();
    let acquire_timeout = Duration::from_millis(config.lock.acquire_timeout_ms);

    while config.running(clock.now()) {
        rec.record(EventType::Invoke, "acquire", |_| {})?;
        let grant = match lock.acquire(&key, acquire_timeout).await {
            Ok(grant) => {
                rec.record(EventType::Ok, "acquire", |e| {
                    e.token = grant.token;
                    e.validity_ms = Some(grant.validity.as_millis() as u64);
                })?;
                grant
            }
            Err(err) => {
                rec.record(lock_error_type(&err), "acquire", |e| e.error = Some(err.to_string()))?;
                stop_if_gone(&err)?;
                think(config).await;
                continue;
            }
        };
        let mut held = Held { valid_until: Instant::now() + grant.validity, renew_failed: false };
        critical_section(&mut rec, resource.as_mut(), lock.as_mut(), &grant, &mut held, config).await?;
        rec.record(EventType::Invoke, "release", |e| e.token = grant.token)?;
        match lock.release(&key, &grant).await {
            Ok(()) => rec.record(EventType::Ok, "release", |e| e.token = grant.token)?,
            Err(err) => {
                rec.record(lock_error_type(&err), "release", |e| {
                    e.token = grant.token;
                    e.error = Some(err.to_string());
                })?;
                stop_if_gone(&err)?;
            }
        }
        think(config).await;
    }
    Ok(())
}

/// What the client knows about the grant it holds.
struct Held {
    /// When the grant runs out unless renewed, as the client computes it.
    valid_until: Instant,
    /// A renew failed or its outcome is unknown: the client cannot count on the lock.
    renew_failed: bool,
}

impl Held {
    /// A client that cannot say (its program answered `fail` or `info`) does not know it lost
    /// the lock; one that is gone stops the worker.
    async fn known_lost(&self, lock: &mut dyn LockClient) -> Result<bool, ClientGone> {
        if self.renew_failed {
            return Ok(true);
        }
        match lock.session_lost().await {
            Ok(lost) => Ok(lost),
            Err(LockError::Gone(gone)) => Err(gone),
            Err(_) => Ok(false),
        }
    }
}

/// Exit codes of `lockchaos worker` that the run reads: the client program could not start or
/// broke the protocol (the run ends unknown), or exited (the client comes back as a new
/// process).
pub const EXIT_UNUSABLE: u8 = 3;
pub const EXIT_PROGRAM_EXITED: u8 = 4;

/// After recording an operation that failed: a client that is gone stops the worker.
fn stop_if_gone(err: &LockError) -> anyhow::Result<()> {
    match err {
        LockError::Gone(gone) => Err(gone.clone().into()),
        _ => Ok(()),
    }
}

/// The work time between read and write; with `lock.renew_ms`, the grant is renewed every
/// renew_ms meanwhile, each renew recorded. A failed renew does not stop the work: what the
/// client does then is `honour_session_loss`'s business at the write.
async fn work(rec: &mut Recorder, lock: &mut dyn LockClient, grant: &Grant, held: &mut Held, config: &WorkerConfig) -> anyhow::Result<()> {
    let end = Instant::now() + Duration::from_millis(config.workload.work_ms.draw(&mut rec.rng));
    let every = Duration::from_millis(config.lock.renew_ms);
    if every.is_zero() {
        tokio::time::sleep_until(end.into()).await;
        return Ok(());
    }
    loop {
        let next = Instant::now() + every;
        if next >= end {
            tokio::time::sleep_until(end.into()).await;
            return Ok(());
        }
        tokio::time::sleep_until(next.into()).await;
        rec.record(EventType::Invoke, "renew", |e| e.token = grant.token)?;
        let sent = Instant::now();
        match lock.renew(&config.workload.key, grant).await {
            Ok(validity) => {
                held.valid_until = sent + validity;
                rec.record(EventType::Ok, "renew", |e| {
                    e.token = grant.token;
                    e.validity_ms = Some(validity.as_millis() as u64);
                })?;
            }
            Err(err) => {
                held.renew_failed = true;
                rec.record(lock_error_type(&err), "renew", |e| {
                    e.token = grant.token;
                    e.error = Some(err.to_string());
                })?;
                stop_if_gone(&err)?;
            }
        }
    }
}

/// Read the counter, hold for the work time, write value+1 with the grant's token. With
/// `honour_session_loss`, a client that knows its lock is gone (session lost, renew failed)
/// records the write as failed and does not send it.
async fn critical_section(
    rec: &mut Recorder,
    resource: &mut dyn ResourceCall,
    lock: &mut dyn LockClient,
    grant: &Grant,
    held: &mut Held,
    config: &WorkerConfig,
) -> anyhow::Result<()> {
    if let Some(tx) = lock.transactional_resource() {
        return transactional_section(rec, tx, config).await;
    }
    let key = config.workload.key.clone();
    rec.record(EventType::Invoke, "read", |e| e.token = grant.token)?;
    let read = Request::Read { key: key.clone(), client: config.process, token: grant.token };
    let value = match resource.call(&read).await {
        Ok(resp) if resp.ok => {
            let v = resp.value.unwrap_or(0);
            rec.record(EventType::Ok, "read", |e| {
                e.token = grant.token;
                e.value = v.into();
            })?;
            v
        }
        Ok(resp) => {
            rec.record(EventType::Fail, "read", |e| e.error = resp.error)?;
            return Ok(());
        }
        Err(err) => {
            rec.record(call_error_type(&err), "read", |e| e.error = Some(err.to_string()))?;
            return Ok(());
        }
    };
    work(rec, lock, grant, held, config).await?;
    if config.workload.check_before_write && !check_still_valid(rec, lock, grant, held, config).await? {
        return Ok(());
    }
    let new_value = value + 1;
    rec.record(EventType::Invoke, "write", |e| {
        e.token = grant.token;
        e.value = new_value.into();
    })?;
    let lost = match config.workload.honour_session_loss {
        true => held.known_lost(lock).await,
        false => Ok(false),
    };
    let lost = match lost {
        Ok(lost) => lost,
        Err(gone) => {
            rec.record(EventType::Info, "write", |e| {
                e.token = grant.token;
                e.value = new_value.into();
                e.error = Some(gone.to_string());
            })?;
            return Err(gone.into());
        }
    };
    if lost {
        return rec.record(EventType::Fail, "write", |e| {
            e.token = grant.token;
            e.value = new_value.into();
            e.error = Some("session lost; write not sent".into());
        });
    }
    let write = Request::Write { key, client: config.process, token: grant.token, value: new_value };
    let (kind, error) = match resource.call(&write).await {
        Ok(resp) if resp.ok => (EventType::Ok, None),
        Ok(resp) => (EventType::Fail, resp.error),
        Err(err) => (call_error_type(&err), Some(err.to_string())),
    };
    rec.record(kind, "write", |e| {
        e.token = grant.token;
        e.value = new_value.into();
        e.error = error;
    })
}

/// The seed's "check the clock right before writing": records a `check` with the validity
/// left; false (and no write) when the grant has run out or the session is known lost. A pause
/// that lands after this check, before the write, is exactly what the check cannot see.
async fn check_still_valid(
    rec: &mut Recorder,
    lock: &mut dyn LockClient,
    grant: &Grant,
    held: &Held,
    config: &WorkerConfig,
) -> anyhow::Result<bool> {
    rec.record(EventType::Invoke, "check", |e| e.token = grant.token)?;
    let left = held.valid_until.saturating_duration_since(Instant::now());
    let lost = match held.known_lost(lock).await {
        Ok(lost) => lost,
        Err(gone) => {
            rec.record(EventType::Info, "check", |e| {
                e.token = grant.token;
                e.error = Some(gone.to_string());
            })?;
            return Err(gone.into());
        }
    };
    if left.is_zero() || lost {
        rec.record(EventType::Fail, "check", |e| {
            e.token = grant.token;
            e.error = Some("lock no longer valid; write not sent".into());
        })?;
        return Ok(false);
    }
    rec.record(EventType::Ok, "check", |e| {
        e.token = grant.token;
        e.validity_ms = Some(left.as_millis() as u64);
    })?;
    tokio::time::sleep(Duration::from_millis(config.workload.check_to_write_ms)).await;
    Ok(true)
}

/// The same section against a resource inside the lock's transaction: the write commits (and
/// so releases the lock) or nothing of the section is kept. No token: none is needed.
async fn transactional_section(rec: &mut Recorder, tx: &mut dyn TxResource, config: &WorkerConfig) -> anyhow::Result<()> {
    let key = config.workload.key.clone();
    rec.record(EventType::Invoke, "read", |_| {})?;
    let value = match tx.read(&key, config.process, rec.clock.now()).await {
        Ok(v) => {
            rec.record(EventType::Ok, "read", |e| e.value = v.into())?;
            v
        }
        Err(err) => {
            rec.record(lock_error_type(&err), "read", |e| e.error = Some(err.to_string()))?;
            return stop_if_gone(&err);
        }
    };
    tokio::time::sleep(Duration::from_millis(config.workload.work_ms.draw(&mut rec.rng))).await;
    let new_value = value + 1;
    rec.record(EventType::Invoke, "write", |e| e.value = new_value.into())?;
    let result = tx.write_and_commit(&key, config.process, new_value, rec.clock.now()).await;
    rec.record(result.as_ref().map_or_else(lock_error_type, |_| EventType::Ok), "write", |e| {
        e.value = new_value.into();
        e.error = result.as_ref().err().map(|err| err.to_string());
    })?;
    result.err().map_or(Ok(()), |err| stop_if_gone(&err))
}

async fn think(config: &WorkerConfig) {
    tokio::time::sleep(Duration::from_millis(config.workload.think_ms)).await;
}

fn lock_error_type(err: &LockError) -> EventType {
    match err {
        LockError::Refused(_) => EventType::Fail,
        LockError::Unknown(_) | LockError::Gone(_) => EventType::Info,
    }
}

/// Every resource call error leaves the outcome unknown: the request may have been applied.
fn call_error_type(_err: &CallError) -> EventType {
    EventType::Info
}

#[cfg(test)]
mod tests;
