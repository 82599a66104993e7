//! The three members, reached over gRPC with the etcd-client crate, and failover between them.
//!
//! One gRPC connection per call (or per stream), connected before the request is sent, never a
//! pool: a member that was paused, killed or cut off leaves no half-dead connection behind, and
//! whether the request left at all is known, which the error classification needs. A connect
//! that fails is a request never sent: not applied. Anything that fails after the connection is
//! up (a reset, a stream that ends, no answer within the attempt's timeout) may have been
//! applied. On a bridge network a connect costs little.
//!
//! Failover, as before with the JSON gateway: requests stick to the last member that answered
//! and move to the next one on connection errors, timeouts and gRPC codes 4 and 14 (deadline
//! exceeded inside etcd; unavailable: no leader, leader changed, request timed out). Watches and
//! the lease keep-alive stream ask for a leader (gRPC metadata `hasleader: true`, clientv3's
//! `WithRequireLeader`): a member cut off from the leader refuses them, or ends them once it
//! notices, instead of watching a stale copy of the keys or renewing nothing. The gateway could
//! do this for watches only; its WebSocket keep-alive forwarded no metadata. Unary calls do not
//! ask, as clientv3 does not: a member without a leader fails them by itself.

use etcd_client::{ConnectOptions, LeaseKeepAliveStream, LeaseKeeper, WatchOptions, WatchStream};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const PORT: u16 = 2379;

/// gRPC status codes after which the next member is tried: the member is up but cannot serve
/// (no leader, request timed out inside etcd). A request retried there may have been applied
/// by the first member: every request this client sends is safe to repeat.
const RETRY_ELSEWHERE: [i32; 2] = [4, 14];

/// gRPC code "not found": what etcd answers a keep-alive for a lease it does not have.
pub const NOT_FOUND: i32 = 5;

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No member answered: every attempt failed to connect, timed out or was unavailable.
    /// `maybe_applied`: some attempt got as far as sending the request (or etcd said it timed
    /// out), so it may have been applied; false when no connection could be made at all.
    #[error("no etcd member answered: {detail}")]
    Unreachable { detail: String, maybe_applied: bool },
    /// A member answered with an error. `after_failures`: earlier attempts on other members
    /// failed after sending the request, so one of them may have been applied.
    #[error("etcd error {code}: {message}")]
    Etcd { code: i32, message: String, after_failures: bool },
}

impl CallError {
    /// The request was not applied: etcd answered with an error and no earlier attempt may have
    /// been applied, or no attempt ever reached a member.
    pub fn definitely_not_applied(&self) -> bool {
        matches!(self, CallError::Etcd { after_failures: false, .. } | CallError::Unreachable { maybe_applied: false, .. })
    }
}

/// etcd's own error answer: its gRPC status code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    pub code: i32,
    pub message: String,
}

/// An attempt that got no answer from its member; `sent`: the request may have reached it.
#[derive(Debug)]
pub struct NoAnswer {
    pub message: String,
    pub sent: bool,
}

/// What one attempt on one member came to: its outer error, no answer; its inner result, the
/// member's answer or its error.
pub type Attempt<T> = Result<Result<T, Answered>, NoAnswer>;

/// Sorts an etcd-client error from a call whose connection was up: etcd's answer, or no answer.
/// A gRPC status that tonic made from a transport error (it carries that error as its source)
/// is no answer: the stream broke after the request may have left. etcd's own statuses come in
/// the answer's trailers and carry none.
pub fn sort<T>(result: Result<T, etcd_client::Error>) -> Attempt<T> {
    use std::error::Error as _;
    match result {
        Ok(v) => Ok(Ok(v)),
        Err(etcd_client::Error::GRpcStatus(s)) if s.source().is_none() => {
            Ok(Err(Answered { code: s.code() as i32, message: s.message().to_string() }))
        }
        // etcd-client's keep-alive opening says so when the first answer has TTL 0.
        Err(etcd_client::Error::LeaseKeepAliveError(m)) if m == "lease not found" => Ok(Err(Answered { code: NOT_FOUND, message: m })),
        Err(e) => Err(NoAnswer { message: e.to_string(), sent: true }),
    }
}

/// The members' client endpoints (`IP:2379`). Cheap to clone: clones share the current member.
#[derive(Clone)]
pub struct Members {
    endpoints: Arc<Vec<String>>,
    current: Arc<AtomicUsize>,
}

impl Members {
    pub fn new(endpoints: &[String]) -> Self {
        Members { endpoints: Arc::new(endpoints.to_vec()), current: Arc::new(AtomicUsize::new(0)) }
    }

    /// Runs `attempt` on each member at most once, starting with the current one, each within
    /// `attempt_timeout`, until a member answers. A timed-out attempt counts as sent.
    pub async fn each_member<T, Fut>(
        &self,
        attempt_timeout: Duration,
        mut attempt: impl FnMut(String) -> Fut,
    ) -> Result<(usize, T), CallError>
    where
        Fut: Future<Output = Attempt<T>>,
    {
        let n = self.endpoints.len();
        let first = self.current.load(Ordering::Relaxed);
        let mut failures: Vec<String> = vec![];
        let mut maybe_applied = false;
        for i in 0..n {
            let idx = (first + i) % n;
            let endpoint = &self.endpoints[idx];
            let answer = match tokio::time::timeout(attempt_timeout, attempt(endpoint.clone())).await {
                Err(_) => {
                    failures.push(format!("{endpoint}: no answer within {attempt_timeout:?}"));
                    maybe_applied = true;
                    continue;
                }
                Ok(Err(e)) => {
                    failures.push(format!("{endpoint}: {}", e.message));
                    maybe_applied |= e.sent;
                    continue;
                }
                Ok(Ok(answer)) => answer,
            };
            if let Err(Answered { code, message }) = &answer {
                if RETRY_ELSEWHERE.contains(code) {
                    // "no leader" was not applied, "request timed out" may have been.
                    failures.push(format!("{endpoint}: etcd error {code}: {message}"));
                    maybe_applied = true;
                    continue;
                }
            }
            self.current.store(idx, Ordering::Relaxed);
            return match answer {
                Ok(v) => Ok((idx, v)),
                Err(Answered { code, message }) => Err(CallError::Etcd { code, message, after_failures: maybe_applied }),
            };
        }
        // Start the next call on the member after the one we started with.
        self.current.store((first + 1) % n.max(1), Ordering::Relaxed);
        Err(CallError::Unreachable { detail: failures.join("; "), maybe_applied })
    }

    /// A stream on member `idx` failed: later requests start on the next member, unless
    /// something else has moved on already.
    pub fn failed(&self, idx: usize) {
        let n = self.endpoints.len().max(1);
        let _ = self.current.compare_exchange(idx, (idx + 1) % n, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// A unary call: `op` on a client connected to each member in turn (see `each_member`).
    pub async fn call<T, Fut>(&self, attempt_timeout: Duration, op: impl Fn(etcd_client::Client) -> Fut) -> Result<T, CallError>
    where
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let op = &op;
        let (_, answer) = self
            .each_member(attempt_timeout, |endpoint| async move {
                let client = connect(&endpoint, false).await?;
                sort(op(client).await)
            })
            .await?;
        Ok(answer)
    }

    /// Watches `key` from `start_revision`, requiring a leader; returns once etcd has confirmed
    /// that the watch is created, with the member it is on.
    pub async fn watch(&self, key: &[u8], start_revision: i64, attempt_timeout: Duration) -> Result<(usize, WatchStream), CallError> {
        self.each_member(attempt_timeout, |endpoint| async move {
            let mut client = connect(&endpoint, true).await?;
            let options = WatchOptions::new().with_start_revision(start_revision);
            let mut stream = match sort(client.watch(key, Some(options)).await)? {
                Ok(stream) => stream,
                Err(answered) => return Ok(Err(answered)),
            };
            match sort(stream.message().await)? {
                Ok(Some(first)) if first.created() && !first.canceled() => Ok(Ok(stream)),
                Ok(Some(first)) => Ok(Err(Answered { code: 2, message: format!("the watch was not created: {first:?}") })),
                Ok(None) => Err(NoAnswer { message: "the watch stream ended before its creation".into(), sent: true }),
                Err(answered) => Ok(Err(answered)),
            }
        })
        .await
    }

    /// Opens the lease keep-alive stream, requiring a leader. Opening it renews the lease once
    /// (etcd-client sends the first keep-alive and waits for its answer); a lease etcd does not
    /// have is etcd's error `NOT_FOUND`.
    pub async fn keep_alive(&self, lease: i64, attempt_timeout: Duration) -> Result<(usize, LeaseKeeper, LeaseKeepAliveStream), CallError> {
        let (idx, (keeper, stream)) = self
            .each_member(attempt_timeout, |endpoint| async move {
                let mut client = connect(&endpoint, true).await?;
                sort(client.lease_keep_alive(lease).await)
            })
            .await?;
        Ok((idx, keeper, stream))
    }
}

/// A client on a fresh connection to `endpoint` (`IP:port`). A failed connect sent nothing.
async fn connect(endpoint: &str, require_leader: bool) -> Result<etcd_client::Client, NoAnswer> {
    let unsent = |e: String| NoAnswer { message: e, sent: false };
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{endpoint}"))
        .map_err(|e| unsent(format!("endpoint {endpoint}: {e}")))?
        .tcp_nodelay(true)
        .connect()
        .await
        .map_err(|e| unsent(format!("connect: {}", chain(&e))))?;
    let options = ConnectOptions::new().with_require_leader(require_leader);
    // Without a user, from_channel makes no request.
    etcd_client::Client::from_channel(etcd_client::Channel::Tonic(channel), Some(options)).await.map_err(|e| unsent(e.to_string()))
}

/// An error and its sources, as one line: tonic's own message says only "transport error".
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests;
