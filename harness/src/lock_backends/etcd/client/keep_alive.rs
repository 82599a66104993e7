//! The session's keep-alive task: one long-lived gRPC stream (`LeaseKeepAlive`, bidirectional,
//! requiring a leader), a renewal every TTL/3.

use super::SessionState;
use crate::lock_backends::etcd::members::{CallError, Members, NOT_FOUND};
use etcd_client::{LeaseKeepAliveStream, LeaseKeeper};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The open stream: requests go out through the keeper, answers come back on the stream.
struct Open {
    keeper: LeaseKeeper,
    answers: LeaseKeepAliveStream,
    member: usize,
}

/// What one renewal came to.
enum Renewal {
    /// etcd confirmed it: the lease has this long left from the send time.
    Confirmed(Duration),
    /// The lease is gone (TTL 0 or etcd's "not found"): the session is lost.
    Gone(String),
    /// No confirmation: the stream is dropped and the next renewal opens one on the next member.
    Failed(String),
}

/// Renews the lease every TTL/3 over one keep-alive stream until etcd says it is gone or its
/// deadline passes; after a failed or unanswered renewal the stream is opened again on the
/// next member and the renewal repeated at once. The stream is opened at the first renewal
/// (opening it sends one) and kept open between renewals.
pub(super) async fn keep_alive(members: Members, lease: i64, ttl: Duration, state: Arc<SessionState>) {
    let every = ttl / 3;
    let attempt_timeout = every.max(Duration::from_millis(300));
    let pause = every.min(Duration::from_millis(100));
    let mut stream: Option<Open> = None;
    // The grant counts as the first renewal.
    let mut next = Instant::now() + every;
    // Failed renewals since the last confirmed one: the first and the recovery are logged at
    // info, so the client's log says what it saw (a cut-off member, a lease that ran out).
    let mut failed_in_a_row = 0u32;
    // The member the last renewal went to (or was meant for), for the log.
    let mut member = None;
    loop {
        tokio::time::sleep_until(next.into()).await;
        if state.is_lost() {
            if !*state.lost.borrow() {
                tracing::info!(lease, failed_in_a_row, "etcd lease lost: no renewal confirmed within its TTL");
            }
            break;
        }
        let sent = Instant::now();
        let renewal = match stream.as_mut() {
            None => match members.keep_alive(lease, attempt_timeout).await {
                // etcd-client reads the first answer and keeps only that its TTL was above 0;
                // etcd renews a lease to its granted TTL, which is ours.
                Ok((at, keeper, answers)) => {
                    member = Some(at);
                    stream = Some(Open { keeper, answers, member: at });
                    Renewal::Confirmed(ttl)
                }
                Err(CallError::Etcd { code: NOT_FOUND, message, .. }) => Renewal::Gone(format!("etcd lease not found ({message})")),
                Err(e) => {
                    // Every member refused or failed: try again shortly, not in a tight loop.
                    tracing::debug!(lease, "opening the keep-alive stream: {e}");
                    failed_in_a_row += 1;
                    next = Instant::now() + pause;
                    continue;
                }
            },
            Some(open) => {
                member = Some(open.member);
                match tokio::time::timeout(attempt_timeout, renew(open, lease)).await {
                    Ok(renewal) => renewal,
                    Err(_) => Renewal::Failed(format!("no answer within {attempt_timeout:?}")),
                }
            }
        };
        let failure = match renewal {
            Renewal::Confirmed(left) => {
                *state.deadline.lock().unwrap() = sent + left;
                if failed_in_a_row > 0 {
                    tracing::info!(lease, failed_in_a_row, member, "keep-alive confirmed again");
                    failed_in_a_row = 0;
                }
                next = Instant::now() + left / 3;
                continue;
            }
            Renewal::Gone(why) => {
                tracing::info!(lease, "{why}: session lost");
                break;
            }
            Renewal::Failed(why) => why,
        };
        if failed_in_a_row == 0 {
            let left = state.deadline().saturating_duration_since(Instant::now());
            tracing::info!(lease, member, "keep-alive failed: {failure}; the lease lapses in {left:?} unless a renewal is confirmed");
        } else {
            tracing::debug!(lease, "keep-alive failed again: {failure}");
        }
        failed_in_a_row += 1;
        if let Some(open) = stream.take() {
            members.failed(open.member);
        }
        next = Instant::now();
    }
    state.mark_lost();
}

/// One renewal on the open stream: a request, then its answer (the caller bounds the wait;
/// after a missed answer the stream is dropped, so answers never pair with the wrong request).
async fn renew(open: &mut Open, lease: i64) -> Renewal {
    if let Err(e) = open.keeper.keep_alive().await {
        return Renewal::Failed(format!("sending: {e}"));
    }
    match open.answers.message().await {
        Ok(Some(answer)) if answer.id() != lease => Renewal::Failed(format!("an answer for another lease: {answer:?}")),
        Ok(Some(answer)) if answer.ttl() <= 0 => Renewal::Gone("etcd lease expired".into()),
        Ok(Some(answer)) => Renewal::Confirmed(Duration::from_secs(answer.ttl() as u64)),
        Ok(None) => Renewal::Failed("the stream ended".into()),
        Err(etcd_client::Error::GRpcStatus(s)) if s.code() as i32 == NOT_FOUND => {
            Renewal::Gone(format!("etcd lease not found ({})", s.message()))
        }
        Err(e) => Renewal::Failed(format!("receiving: {e}")),
    }
}
