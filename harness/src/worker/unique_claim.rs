//! No lock: the unique claim (`[workload] kind = "unique-claim"`). A scheduled job falls due
//! every `job_every_ms` of the run (job n at n·job_every_ms), for every client at once, as a
//! timer on each replica fires. Each client claims it by inserting its id into `claims`, whose
//! primary key lets one insert in and fails the others at once (`claim` fail); the winner does
//! the work and applies the job's effect (add one to the counter, logged with the job's id).
//! A client that wakes late (frozen, restarted) claims the job due then, not the ones it
//! missed: those had their claims.
//!
//! `claim_by_insert = false`, the broken variant: the client checks that nobody has done the
//! job (`jobs_done`, no constraint), does it, then records it done; clients that check before
//! any has finished all do it.

use super::no_lock_db::{bounded, Db, Failure, ADD_ONE, LEDGER_ROW};
use super::{Recorder, WorkerConfig};
use checker::EventType;
use std::time::Duration;
use tokio_postgres::error::SqlState;

const CLAIM: &str = "INSERT INTO claims (job, client) VALUES ($1, $2)";
const DONE_ALREADY: &str = "SELECT EXISTS (SELECT 1 FROM jobs_done WHERE job = $1)";
/// ADD_ONE, and the job recorded done (the broken variant's record); $5 job.
const APPLY_AND_RECORD_DONE: &str = "WITH w AS (UPDATE ledger SET value = value + 1 WHERE key = $1 RETURNING value), \
     l AS (INSERT INTO ledger_log (time_ns, client, key, f, value, op) SELECT $2, $3, $1, 'write', value, $4 FROM w), \
     d AS (INSERT INTO jobs_done (job, client) VALUES ($5, $3)) \
     SELECT value FROM w";

pub async fn run(config: &WorkerConfig, db: &mut Db, rec: &mut Recorder) -> anyhow::Result<()> {
    let w = &config.workload;
    let every_ns = w.job_every_ms.max(1) * 1_000_000;
    let process = config.process as i64;
    let t = db.op_timeout;
    let mut row_made = false;
    // The first job due from now on.
    let mut job = rec.clock.now().div_ceil(every_ns).max(1);
    while config.running(rec.clock.now()) {
        let due = job * every_ns;
        let now = rec.clock.now();
        if now < due {
            tokio::time::sleep(Duration::from_nanos(due - now)).await;
        }
        if !config.running(rec.clock.now()) {
            break;
        }
        let s = match db.session().await {
            Ok(s) => s,
            Err(e) => {
                tracing::info!("connecting: {e}");
                tokio::time::sleep(Duration::from_millis(config.lock.retry_ms)).await;
                job = next_job(job, rec.clock.now(), every_ns);
                continue;
            }
        };
        if !row_made {
            match bounded(t, s.client.execute(LEDGER_ROW, &[&w.key])).await {
                Ok(_) => row_made = true,
                Err(e) => {
                    // Without the row a job's effect could not land: no claim until it exists.
                    tracing::info!("creating the ledger row: {}", e.describe());
                    db.reset();
                    tokio::time::sleep(Duration::from_millis(config.lock.retry_ms)).await;
                    job = next_job(job, rec.clock.now(), every_ns);
                    continue;
                }
            }
        }
        let op = format!("job-{job}");
        let job_id = job as i64;
        rec.record(EventType::Invoke, "claim", |e| e.op = Some(op.clone()))?;
        let claim = if w.claim_by_insert {
            match bounded(t, s.client.execute(CLAIM, &[&job_id, &process])).await {
                Ok(_) => Ok(()),
                Err(f) if f.is_code(&SqlState::UNIQUE_VIOLATION) => Err((EventType::Fail, "claimed by another client".to_string(), false)),
                Err(f @ Failure::Refused(_)) => Err((EventType::Fail, f.describe(), false)),
                // The claim may be in: the job is not done by this client, and may be by none.
                Err(Failure::Unknown(why)) => Err((EventType::Info, why, true)),
            }
        } else {
            // A check that did not answer claims nothing: the job is not done by this client.
            match bounded(t, s.client.query_one(DONE_ALREADY, &[&job_id])).await {
                Ok(row) if row.get::<_, bool>(0) => Err((EventType::Fail, "done already".to_string(), false)),
                Ok(_) => Ok(()),
                Err(f @ Failure::Refused(_)) => Err((EventType::Fail, f.describe(), false)),
                Err(f @ Failure::Unknown(_)) => Err((EventType::Fail, f.describe(), true)),
            }
        };
        match claim {
            Err((kind, why, broken_connection)) => {
                if broken_connection {
                    db.reset();
                }
                rec.record(kind, "claim", |e| {
                    e.op = Some(op.clone());
                    e.error = Some(why);
                })?;
            }
            Ok(()) => {
                rec.record(EventType::Ok, "claim", |e| e.op = Some(op.clone()))?;
                rec.record(EventType::Invoke, "apply", |e| e.op = Some(op.clone()))?;
                tokio::time::sleep(Duration::from_millis(w.work_ms.draw(&mut rec.rng))).await;
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [&w.key, &(rec.clock.now() as i64), &process, &op, &job_id];
                let applied = if w.claim_by_insert {
                    bounded(t, s.client.query_one(ADD_ONE, &params[..4])).await
                } else {
                    bounded(t, s.client.query_one(APPLY_AND_RECORD_DONE, &params)).await
                };
                let (kind, value, error) = match applied {
                    Ok(row) => (EventType::Ok, Some(row.get::<_, i64>(0)), None),
                    Err(f @ Failure::Refused(_)) => (EventType::Fail, None, Some(f.describe())),
                    Err(Failure::Unknown(why)) => (EventType::Info, None, Some(why)),
                };
                if kind != EventType::Ok {
                    db.reset();
                }
                rec.record(kind, "apply", |e| {
                    e.op = Some(op.clone());
                    e.value = value.into();
                    e.error = error;
                })?;
            }
        }
        job = next_job(job, rec.clock.now(), every_ns);
    }
    Ok(())
}

/// The job after `job`, or, when the client is late, the one due now.
fn next_job(job: u64, now: u64, every_ns: u64) -> u64 {
    (job + 1).max(now / every_ns)
}

#[cfg(test)]
mod tests {
    use super::next_job;

    #[test]
    fn a_late_client_takes_the_job_due_now_not_the_ones_it_missed() {
        assert_eq!(next_job(4, 4_600, 1_000), 5);
        assert_eq!(next_job(4, 9_200, 1_000), 9);
    }
}
