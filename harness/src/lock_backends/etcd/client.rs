//! The etcd lock client: the recipe of etcd's own `concurrency.Mutex`, over the JSON gateway.
//!
//! acquire: grant a lease (TTL = lock.ttl_ms rounded up to whole seconds; etcd raises it to its
//! minimum, 2 s with default election settings, and says so in the answer) and keep it alive
//! from a background task every TTL/3; create `PREFIX/<lease id>` attached to the lease if it
//! does not exist (one txn); then poll the prefix until our key has the lowest create_revision.
//! The fencing token is that create_revision: etcd's revision counter only goes up, and a
//! waiter's key is created after every key ahead of it, so tokens rise in grant order.
//! release: revoke the lease, which deletes the key; an unknown lease means it had expired.
//!
//! Session loss: the keep-alive task marks the session lost when etcd answers a keep-alive with
//! TTL 0 (the lease is gone) or when the lease's deadline passes without a renewal (as clientv3
//! does): the deadline is the send time of the last renewal etcd confirmed, plus the TTL, on
//! CLOCK_MONOTONIC, which keeps running while the process is stopped.

use super::gateway::{b64, int, prefix_end, unb64, Gateway, GatewayError};
use crate::lock_backends::LockParams;
use crate::lock_backends::{Grant, LockClient, LockError};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every lock lives under this prefix: `lockchaos/lock/<name>/<lease id in hex>`.
const ROOT: &str = "lockchaos/lock";

/// The lease as the client sees it.
struct SessionState {
    lost: AtomicBool,
    /// When the lease expires unless renewed: confirmed renewal's send time + TTL.
    deadline: Mutex<Instant>,
}

impl SessionState {
    fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed) || Instant::now() >= *self.deadline.lock().unwrap()
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
    gateway: Gateway,
    lock: LockParams,
    op_timeout: Duration,
    session: Option<Session>,
}

impl Client {
    pub fn new(endpoints: &[String], lock: LockParams, op_timeout: Duration) -> Self {
        Client { gateway: Gateway::new(endpoints), lock, op_timeout, session: None }
    }

    /// Ends the current session, if any: stops renewing and revokes the lease (best effort).
    async fn abandon(&mut self) {
        if let Some(session) = self.session.take() {
            session.keep_alive.abort();
            let _ = self.gateway.call("/v3/lease/revoke", &json!({"ID": session.lease.to_string()}), self.op_timeout).await;
        }
    }

    async fn try_acquire(&mut self, name: &str, deadline: Instant) -> Result<Grant, LockError> {
        let retry = Duration::from_millis(self.lock.retry_ms.max(1));
        // 1. A lease, kept alive from now on.
        let want_ttl = self.lock.ttl_ms.div_ceil(1000).max(1);
        let sent = Instant::now();
        let granted = self
            .gateway
            .call("/v3/lease/grant", &json!({"TTL": want_ttl.to_string()}), self.op_timeout)
            .await
            .map_err(|e| LockError::Refused(format!("lease grant failed: {e}")))?;
        let (lease, ttl) = (int(&granted, "ID"), int(&granted, "TTL"));
        if lease == 0 || ttl <= 0 {
            return Err(LockError::Refused(format!("lease grant answered without a lease: {granted}")));
        }
        let ttl = Duration::from_secs(ttl as u64);
        let state = Arc::new(SessionState { lost: AtomicBool::new(false), deadline: Mutex::new(sent + ttl) });
        let keep_alive = tokio::spawn(keep_alive(self.gateway.clone(), lease, ttl, state.clone()));
        self.session = Some(Session { lease, state: state.clone(), keep_alive });

        // 2. Our key under the lock's prefix, created once (a retried txn finds it).
        let prefix = format!("{ROOT}/{name}/");
        let my_key = format!("{prefix}{lease:016x}");
        let k = b64(my_key.as_bytes());
        let txn = json!({
            "compare": [{"key": k, "target": "CREATE", "result": "EQUAL", "create_revision": "0"}],
            "success": [{"request_put": {"key": k, "value": "", "lease": lease.to_string()}}],
            "failure": [{"request_range": {"key": k}}],
        });
        let answer = self.gateway.call("/v3/kv/txn", &txn, self.op_timeout).await.map_err(unknown("creating the lock key"))?;
        let token = if answer.get("succeeded").and_then(Value::as_bool).unwrap_or(false) {
            int(&answer["header"], "revision")
        } else {
            answer["responses"][0]["response_range"]["kvs"].get(0).map(|kv| int(kv, "create_revision")).unwrap_or(0)
        };
        if token <= 0 {
            return Err(LockError::Unknown(format!("lock key not created and not found: {answer}")));
        }

        // 3. Wait until ours is the oldest key under the prefix.
        let oldest = json!({
            "key": b64(prefix.as_bytes()),
            "range_end": b64(&prefix_end(&prefix)),
            "sort_target": "CREATE",
            "sort_order": "ASCEND",
            "limit": "1",
        });
        loop {
            if state.is_lost() {
                return Err(LockError::Refused("lease lost while waiting for the lock".into()));
            }
            match self.gateway.call("/v3/kv/range", &oldest, self.op_timeout).await {
                Ok(v) => match v["kvs"].get(0) {
                    Some(kv) if unb64(kv["key"].as_str().unwrap_or_default()) == my_key.as_bytes() => {
                        let validity = state.deadline.lock().unwrap().saturating_duration_since(Instant::now());
                        return Ok(Grant { token: Some(token as u64), validity, secret: lease.to_string() });
                    }
                    Some(_) => {}
                    None => return Err(LockError::Refused("lock key gone while waiting (lease expired)".into())),
                },
                Err(e) => tracing::debug!("etcd range failed: {e}"),
            }
            if Instant::now() + retry > deadline {
                return Err(LockError::Refused("lock held by another client".into()));
            }
            tokio::time::sleep(retry).await;
        }
    }
}

fn unknown(what: &'static str) -> impl Fn(GatewayError) -> LockError {
    move |e| LockError::Unknown(format!("{what}: {e}"))
}

/// Renews the lease every TTL/3 until etcd says it is gone or its deadline passes.
async fn keep_alive(gateway: Gateway, lease: i64, ttl: Duration, state: Arc<SessionState>) {
    let every = ttl / 3;
    let attempt_timeout = every.max(Duration::from_millis(300));
    loop {
        tokio::time::sleep(every).await;
        if state.is_lost() {
            break;
        }
        let sent = Instant::now();
        match gateway.call("/v3/lease/keepalive", &json!({"ID": lease.to_string()}), attempt_timeout).await {
            Ok(v) => {
                let left = int(&v, "TTL");
                if left <= 0 {
                    tracing::info!(lease, "etcd lease expired: session lost");
                    break;
                }
                *state.deadline.lock().unwrap() = sent + Duration::from_secs(left as u64);
            }
            Err(e) if e.is_not_found() => break,
            Err(e) => tracing::debug!(lease, "keep-alive failed: {e}"),
        }
    }
    state.lost.store(true, Ordering::Relaxed);
}

#[async_trait::async_trait]
impl LockClient for Client {
    async fn acquire(&mut self, key: &str, timeout: Duration) -> Result<Grant, LockError> {
        self.abandon().await;
        let result = self.try_acquire(key, Instant::now() + timeout).await;
        if result.is_err() {
            // Not ours: revoking the lease deletes our key, so no one waits behind it.
            self.abandon().await;
        }
        result
    }

    async fn release(&mut self, _key: &str, grant: &Grant) -> Result<(), LockError> {
        if let Some(session) = self.session.take() {
            session.keep_alive.abort();
        }
        let revoke = json!({"ID": grant.secret});
        match self.gateway.call("/v3/lease/revoke", &revoke, self.op_timeout).await {
            Ok(_) => Ok(()),
            Err(GatewayError::Etcd { code: 5, after_failures: false, .. }) => {
                Err(LockError::Refused("lease already expired: the lock was no longer ours".into()))
            }
            Err(e) => Err(LockError::Unknown(format!("lease revoke: {e}"))),
        }
    }

    fn session_lost(&self) -> bool {
        self.session.as_ref().is_some_and(|s| s.state.is_lost())
    }
}
