//! The etcd lock client: what Go's `concurrency.Session` and `concurrency.Mutex` (etcd
//! clientv3/concurrency) do, over etcd's gRPC API with the etcd-client crate (members.rs: one
//! connection per call, failover between the members).
//!
//! Session: one lease (TTL = lock.ttl_ms rounded up to whole seconds; etcd raises it to its
//! minimum, 2 s with default election settings, and says so in the answer), granted by the first
//! acquire and kept alive every TTL/3 over one long-lived, bidirectional gRPC keep-alive stream
//! that requires a leader (keep_alive.rs) from a background task. The session outlives a lock: later acquires reuse it, and
//! a new one is granted only once it is lost. It is lost when etcd answers a keep-alive with
//! TTL 0 (the lease is gone) or when the lease's deadline passes without a confirmed renewal
//! (as clientv3 closes the keep-alive channel, which ends Go's session): the deadline is the send
//! time of the last renewal etcd confirmed plus the TTL, on CLOCK_MONOTONIC, which keeps running
//! while the process is stopped.
//!
//! acquire, as `Mutex.Lock`: our key is `lockchaos/lock/<name>/<lease id in hex>`.
//! 1. One txn: if our key does not exist, put it attached to the lease, else read it; either way
//!    read the owner, the key under the prefix with the lowest create_revision. Our revision is
//!    the txn's revision (put) or our key's create_revision (found). If the owner's
//!    create_revision is ours, the lock is ours: one round trip once the session exists.
//! 2. Otherwise wait for every key created before ours to go: read the last key with
//!    create_revision < ours, watch it from that read's revision until a DELETE event, and again
//!    until no such key is left. No polling; the pause between attempts (lock.retry_ms) is taken
//!    only after a failed request.
//! 3. Read our key again: gone means our session expired while we waited (Go's
//!    `ErrSessionExpired`): refused. Otherwise the lock is ours. With
//!    `lock.check_key_after_wait = false` this step is left out, as in every etcd 3.4 release
//!    (Jepsen tested 3.4.3; the read came with 3.5.0), and so is ending the wait when the
//!    session is lost: the lock is then ours once the keys ahead are gone, even if our own key
//!    went with our lease.
//!
//! The fencing token is our key's create_revision: etcd's revision counter only goes up, and a
//! waiter's key is created after every key ahead of it, so tokens rise in grant order.
//!
//! The wait ends at the acquire deadline (or when the session is lost); a failed attempt then
//! deletes its key, as `Lock` does through `Unlock` on a cancelled context, so nobody waits
//! behind it. If that delete fails too, the session is abandoned (no more renewals, lease
//! revoked if etcd can be reached) so the key lives at most a TTL.
//!
//! release, as `Mutex.Unlock` with its ownership check (`IsOwner`): delete our key in a txn
//! conditioned on its create_revision being the token. The lease is not revoked: the session
//! stays for the next acquire. The key already gone means the lease expired and the lock was
//! no longer ours (refused). A failed delete abandons the session, as above.
//!
//! Errors: a request that etcd answered with an error on the first member asked, or that no
//! member would even take a connection for, was not applied (refused); one whose answer never
//! came, or came only after another member may have applied it, may have been (unknown), as may
//! one answered without what etcd always sends (a txn's range results, a header's revision).

use super::members::{CallError, Members};
use crate::lock_backends::LockParams;
use crate::lock_backends::{Grant, LockClient, LockError};
use etcd_client::{Compare, CompareOp, EventType, GetOptions, GetResponse, PutOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every lock lives under this prefix: `lockchaos/lock/<name>/<lease id in hex>`.
const ROOT: &str = "lockchaos/lock";

/// The lease as the client sees it.
struct SessionState {
    /// When the lease expires unless renewed: confirmed renewal's send time + TTL.
    deadline: Mutex<Instant>,
    /// Set once the session is known to be gone.
    lost: tokio::sync::watch::Sender<bool>,
}

impl SessionState {
    fn new(deadline: Instant) -> Self {
        SessionState { deadline: Mutex::new(deadline), lost: tokio::sync::watch::Sender::new(false) }
    }

    fn deadline(&self) -> Instant {
        *self.deadline.lock().unwrap()
    }

    fn is_lost(&self) -> bool {
        *self.lost.borrow() || Instant::now() >= self.deadline()
    }

    fn mark_lost(&self) {
        self.lost.send_replace(true);
    }

    /// Returns once the session is lost: marked so, or its deadline passed (a local timer).
    async fn until_lost(&self) {
        let mut lost = self.lost.subscribe();
        loop {
            if self.is_lost() {
                return;
            }
            let deadline = self.deadline();
            tokio::select! {
                _ = lost.wait_for(|l| *l) => return,
                _ = tokio::time::sleep_until(deadline.into()) => {}
            }
        }
    }
}

struct Session {
    lease: i64,
    state: Arc<SessionState>,
    keep_alive: tokio::task::JoinHandle<()>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.keep_alive.abort();
    }
}

pub struct Client {
    members: Members,
    lock: LockParams,
    op_timeout: Duration,
    session: Option<Session>,
}

/// Refused when etcd answered that it did not do it, else unknown.
fn classify(what: &str, e: CallError) -> LockError {
    if e.definitely_not_applied() {
        LockError::Refused(format!("{what}: {e}"))
    } else {
        LockError::Unknown(format!("{what}: {e}"))
    }
}

/// A range over every key under `prefix`, one key: the first (or last) created, optionally
/// only among those created at or before `max_create_revision`.
fn range_by_create(order: SortOrder, max_create_revision: Option<i64>) -> GetOptions {
    let range = GetOptions::new().with_prefix().with_sort(SortTarget::Create, order).with_limit(1);
    match max_create_revision {
        Some(max) => range.with_max_create_revision(max),
        None => range,
    }
}

/// The range answer at `index` of a txn's answers.
fn range_at(answers: &[TxnOpResponse], index: usize) -> Result<&GetResponse, LockError> {
    match answers.get(index) {
        Some(TxnOpResponse::Get(range)) => Ok(range),
        other => Err(LockError::Unknown(format!("etcd's txn answer has no range result at {index}: {other:?}"))),
    }
}

fn revision(header: Option<&etcd_client::ResponseHeader>) -> i64 {
    header.map_or(0, |h| h.revision())
}

impl Client {
    pub fn new(endpoints: &[String], lock: LockParams, op_timeout: Duration) -> Self {
        Client { members: Members::new(endpoints), lock, op_timeout, session: None }
    }

    /// The current session, or a new one when there is none or it is lost.
    async fn session(&mut self) -> Result<(i64, Arc<SessionState>), LockError> {
        if let Some(s) = &self.session {
            if !s.state.is_lost() {
                return Ok((s.lease, s.state.clone()));
            }
        }
        // A lost session's lease is gone, or about to be: nothing left to revoke.
        self.session = None;
        let want_ttl = self.lock.ttl_ms.div_ceil(1000).max(1) as i64;
        let sent = Instant::now();
        let granted = self
            .members
            .call(self.op_timeout, |mut c| async move { c.lease_grant(want_ttl, None).await })
            .await
            .map_err(|e| LockError::Refused(format!("lease grant failed: {e}")))?;
        if granted.id() == 0 || granted.ttl() <= 0 || !granted.error().is_empty() {
            return Err(LockError::Refused(format!("lease grant answered without a lease: {granted:?}")));
        }
        let (lease, ttl) = (granted.id(), Duration::from_secs(granted.ttl() as u64));
        let state = Arc::new(SessionState::new(sent + ttl));
        let keep_alive = tokio::spawn(keep_alive::keep_alive(self.members.clone(), lease, ttl, state.clone()));
        self.session = Some(Session { lease, state: state.clone(), keep_alive });
        Ok((lease, state))
    }

    /// Ends the session: stops renewing and, unless it is lost already, revokes the lease (best
    /// effort), which deletes every key attached to it.
    async fn abandon(&mut self) {
        if let Some(session) = self.session.take() {
            session.keep_alive.abort();
            if !session.state.is_lost() {
                let lease = session.lease;
                if let Err(e) = self.members.call(self.op_timeout, |mut c| async move { c.lease_revoke(lease).await }).await {
                    tracing::debug!(lease, "revoking an abandoned lease: {e}");
                }
            }
        }
    }

    /// After a failed attempt: deletes our key so nobody waits behind it (Go's Lock does this
    /// through Unlock); if that fails, abandons the session so the key goes with the lease.
    async fn clean_up(&mut self, my_key: &str, state: &SessionState) {
        if state.is_lost() {
            self.session = None;
            return;
        }
        if let Err(e) = self.members.call(self.op_timeout, |mut c| async move { c.delete(my_key, None).await }).await {
            tracing::debug!("deleting our lock key after a failed acquire: {e}; abandoning the session");
            self.abandon().await;
        }
    }

    /// `Mutex.Lock`: steps 1-3 of the module comment.
    async fn lock(&self, prefix: &str, my_key: &str, lease: i64, state: &SessionState, deadline: Instant) -> Result<Grant, LockError> {
        let owner = || TxnOp::get(prefix, Some(range_by_create(SortOrder::Ascend, None)));
        let txn = Txn::new()
            .when([Compare::create_revision(my_key, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(my_key, "", Some(PutOptions::new().with_lease(lease))), owner()])
            .or_else([TxnOp::get(my_key, None), owner()]);
        let answer = self
            .members
            .call(self.op_timeout, |mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })
            .await
            .map_err(|e| classify("creating the lock key", e))?;
        let answers = answer.op_responses();
        let my_rev = if answer.succeeded() {
            revision(answer.header())
        } else {
            range_at(&answers, 0)?.kvs().first().map_or(0, |kv| kv.create_revision())
        };
        if my_rev <= 0 {
            return Err(LockError::Unknown(format!("the lock key's revision is not in etcd's answer: {answer:?}")));
        }
        let Some(owner) = range_at(&answers, 1)?.kvs().first() else {
            return Err(LockError::Unknown(format!("no key under the prefix, not even ours, in etcd's answer: {answer:?}")));
        };
        let grant = |state: &SessionState| Grant {
            token: Some(my_rev as u64),
            validity: state.deadline().saturating_duration_since(Instant::now()),
            secret: my_key.to_string(),
        };
        if owner.create_revision() == my_rev {
            return Ok(grant(state));
        }

        let waited = tokio::time::timeout_at(deadline.into(), async {
            if !self.lock.check_key_after_wait {
                // etcd 3.4's Mutex: only the caller's deadline ends the wait.
                return self.wait_deletes(prefix, my_rev - 1).await;
            }
            tokio::select! {
                waited = self.wait_deletes(prefix, my_rev - 1) => waited,
                _ = state.until_lost() => Err(LockError::Refused("the session was lost while waiting for the lock".into())),
            }
        })
        .await;
        match waited {
            Err(_) => return Err(LockError::Refused("lock held by another client: not our turn within the acquire timeout".into())),
            Ok(Err(e)) => return Err(e),
            Ok(Ok(())) => {}
        }
        if !self.lock.check_key_after_wait {
            return Ok(grant(state));
        }

        let mine = self
            .members
            .call(self.op_timeout, |mut c| async move { c.get(my_key, None).await })
            .await
            .map_err(|e| LockError::Unknown(format!("reading our lock key after the wait: {e}")))?;
        match mine.kvs().first() {
            Some(kv) if kv.create_revision() == my_rev => Ok(grant(state)),
            _ => {
                state.mark_lost();
                Err(LockError::Refused("our lock key is gone after the wait: the session expired".into()))
            }
        }
    }

    /// Go's `waitDeletes`: returns once no key under `prefix` created at or before
    /// `max_create_revision` is left. Failed requests are retried after lock.retry_ms; the
    /// caller bounds the whole wait.
    async fn wait_deletes(&self, prefix: &str, max_create_revision: i64) -> Result<(), LockError> {
        let before_me = range_by_create(SortOrder::Descend, Some(max_create_revision));
        let pause = Duration::from_millis(self.lock.retry_ms.max(1));
        loop {
            let read = self.members.call(self.op_timeout, |mut c| {
                let before_me = before_me.clone();
                async move { c.get(prefix, Some(before_me)).await }
            });
            let last = match read.await {
                Ok(answer) => answer,
                Err(e) => {
                    tracing::debug!("reading the keys ahead of ours: {e}");
                    tokio::time::sleep(pause).await;
                    continue;
                }
            };
            let Some(ahead) = last.kvs().first() else {
                return Ok(());
            };
            let at = revision(last.header());
            if at <= 0 {
                return Err(LockError::Refused(format!("a range answer without its revision: {last:?}")));
            }
            if let Err(e) = self.wait_delete(ahead.key(), at).await {
                tracing::debug!("watching the key ahead of ours: {e}");
                tokio::time::sleep(pause).await;
            }
        }
    }

    /// Go's `waitDelete`: watches `key` from `revision` until it is deleted.
    async fn wait_delete(&self, key: &[u8], revision: i64) -> Result<(), String> {
        let (member, mut watch) = self.members.watch(key, revision, self.op_timeout).await.map_err(|e| e.to_string())?;
        loop {
            let failure = match watch.message().await {
                Ok(Some(w)) if w.canceled() => {
                    format!("watch cancelled ({}; compacted at {})", w.cancel_reason(), w.compact_revision())
                }
                Ok(Some(w)) => {
                    if w.events().iter().any(|e| e.event_type() == EventType::Delete) {
                        return Ok(());
                    }
                    continue;
                }
                Ok(None) => "the watch stream ended".to_string(),
                Err(e) => e.to_string(),
            };
            self.members.failed(member);
            return Err(failure);
        }
    }
}

#[async_trait::async_trait]
impl LockClient for Client {
    async fn acquire(&mut self, key: &str, timeout: Duration) -> Result<Grant, LockError> {
        let deadline = Instant::now() + timeout;
        let (lease, state) = self.session().await?;
        let prefix = format!("{ROOT}/{key}/");
        let my_key = format!("{prefix}{lease:x}");
        let result = self.lock(&prefix, &my_key, lease, &state, deadline).await;
        if result.is_err() {
            self.clean_up(&my_key, &state).await;
        }
        result
    }

    async fn release(&mut self, _key: &str, grant: &Grant) -> Result<(), LockError> {
        let key = grant.secret.as_str();
        let token = grant.token.unwrap_or(0) as i64;
        let txn = Txn::new().when([Compare::create_revision(key, CompareOp::Equal, token)]).and_then([TxnOp::delete(key, None)]);
        let answer = self
            .members
            .call(self.op_timeout, |mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })
            .await;
        match answer {
            Ok(answer) if answer.succeeded() => Ok(()),
            Ok(_) => {
                // Only the lease's expiry deletes our key behind our back.
                if let Some(session) = &self.session {
                    session.state.mark_lost();
                }
                Err(LockError::Refused("the lock key was gone: the lease had expired, the lock was no longer ours".into()))
            }
            Err(e) => {
                // The key may still be there: let it go with the lease.
                self.abandon().await;
                Err(classify("deleting the lock key", e))
            }
        }
    }

    async fn session_lost(&mut self) -> Result<bool, LockError> {
        Ok(self.is_session_lost())
    }
}

impl Client {
    fn is_session_lost(&self) -> bool {
        self.session.as_ref().is_some_and(|s| s.state.is_lost())
    }
}

mod keep_alive;
#[cfg(test)]
mod tests;
