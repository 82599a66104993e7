//! The session's keep-alive task: one long-lived stream, a renewal every TTL/3.

use super::SessionState;
use crate::lock_backends::etcd::gateway::{Gateway, KeepAliveStream, StreamFailure};
use crate::lock_backends::etcd::messages::AnswerError;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Renews the lease every TTL/3 over one keep-alive stream until etcd says it is gone or its
/// deadline passes; after a failed or unanswered renewal the stream is opened again on the
/// next member and the renewal repeated at once.
pub(super) async fn keep_alive(gateway: Gateway, lease: i64, ttl: Duration, state: Arc<SessionState>) {
    let every = ttl / 3;
    let attempt_timeout = every.max(Duration::from_millis(300));
    let pause = every.min(Duration::from_millis(100));
    let mut stream: Option<KeepAliveStream> = gateway.keep_alive_stream(attempt_timeout).await.ok();
    // The grant counts as the first renewal.
    let mut next = Instant::now() + every;
    // Failed renewals since the last confirmed one: the first and the recovery are logged at
    // info, so the client's log says what it saw (a cut-off member, a lease that ran out).
    let mut failed_in_a_row = 0u32;
    loop {
        tokio::time::sleep_until(next.into()).await;
        if state.is_lost() {
            if !*state.lost.borrow() {
                tracing::info!(lease, failed_in_a_row, "etcd lease lost: no renewal confirmed within its TTL");
            }
            break;
        }
        if stream.is_none() {
            match gateway.keep_alive_stream(attempt_timeout).await {
                Ok(s) => stream = Some(s),
                Err(e) => {
                    tracing::debug!(lease, "opening the keep-alive stream: {e}");
                    next = Instant::now() + pause;
                    continue;
                }
            }
        }
        let Some(open) = stream.as_mut() else {
            continue;
        };
        let sent = Instant::now();
        let failure = match tokio::time::timeout(attempt_timeout, open.renew(lease)).await {
            Ok(Ok(answer)) if answer.id == lease => {
                if answer.ttl <= 0 {
                    tracing::info!(lease, "etcd lease expired: session lost");
                    break;
                }
                let left = Duration::from_secs(answer.ttl as u64);
                *state.deadline.lock().unwrap() = sent + left;
                if failed_in_a_row > 0 {
                    tracing::info!(lease, failed_in_a_row, member = %open.member, "keep-alive confirmed again");
                    failed_in_a_row = 0;
                }
                next = Instant::now() + left / 3;
                continue;
            }
            Ok(Ok(answer)) => format!("an answer for another lease: {answer:?}"),
            Ok(Err(StreamFailure::Answer(AnswerError::Etcd { code: 5, message }))) => {
                tracing::info!(lease, "etcd lease not found ({message}): session lost");
                break;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {attempt_timeout:?}"),
        };
        if failed_in_a_row == 0 {
            let left = state.deadline().saturating_duration_since(Instant::now());
            tracing::info!(lease, member = %open.member, "keep-alive failed: {failure}; the lease lapses in {left:?} unless a renewal is confirmed");
        } else {
            tracing::debug!(lease, "keep-alive failed again: {failure}");
        }
        failed_in_a_row += 1;
        gateway.failed(open.member);
        stream = None;
        next = Instant::now();
    }
    state.mark_lost();
}
