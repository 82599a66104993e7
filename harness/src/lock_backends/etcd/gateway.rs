//! etcd's JSON gRPC gateway (`http://IP:2379/v3/...`), over plain HTTP/1.1: unary calls, the
//! watch stream and the lease keep-alive stream. Not the etcd-client crate: that needs `protoc`
//! at build time, which a fresh machine lacks and no cargo command can install.
//!
//! What etcd 3.4's gateway does with streams (the node image's Debian etcd-server 3.4.23, tried
//! by hand with raw sockets):
//! - `POST /v3/watch` with one `create_request` as a complete body answers a long-lived chunked
//!   response, one `{"result": WatchResponse}` per line as events happen. Used as is, one HTTP
//!   request per watch; dropping the connection cancels the watch.
//! - `POST /v3/lease/keepalive` with several requests on one chunked request body does not work
//!   as a stream: no answer comes while the request body is open (3 requests 4 s apart: nothing
//!   for 12 s), then all of them at once when it ends. With a complete body it answers once and
//!   ends, so over plain HTTP/1.1 it is one request per renewal at best.
//! - The same path upgraded to a WebSocket (etcd wraps the gateway in grpc-websocket-proxy) *is*
//!   the bidirectional stream: each text message sent is one `LeaseKeepAliveRequest`, each text
//!   message received one `{"result": …}` line, answered as soon as it is sent. The keep-alive
//!   uses that: one long-lived stream per session, re-opened (on the next member) only after an
//!   error or a missed answer. The WebSocket proxy forwards no gRPC metadata, so this stream
//!   cannot ask for a leader (below); a member that cannot reach one fails the renewals instead.
//!
//! Failover: requests stick to the last member that answered and move to the next one on
//! connection errors, timeouts and gRPC codes 4 and 14 (deadline exceeded inside etcd,
//! unavailable / no leader). Unary calls use a fresh TCP connection each: a member that was
//! paused, killed or cut off never leaves a half-dead pooled connection behind, and on a bridge
//! network a connect costs little. Watches ask for a leader (`Grpc-Metadata-hasleader: true`,
//! clientv3's `WithRequireLeader`): a member cut off from the leader ends the watch with
//! "no leader" instead of watching a stale copy of the keys forever.

use super::messages::{parse_stream_line, parse_unary, AnswerError, LeaseKeepAliveResponse, Lines};
use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

pub const PORT: u16 = 2379;

/// gRPC status codes after which the next member is tried: the member is up but cannot serve
/// (no leader, request timed out inside etcd). A request retried there may have been applied
/// by the first member: every request this client sends is safe to repeat.
const RETRY_ELSEWHERE: [i64; 2] = [4, 14];

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// No member answered: every attempt failed to connect, timed out or was unavailable.
    /// `maybe_applied`: some attempt got as far as sending the request (or etcd said it timed
    /// out), so it may have been applied; false when every connection was refused.
    #[error("no etcd member answered: {detail}")]
    Unreachable { detail: String, maybe_applied: bool },
    /// A member answered with an error. `after_failures`: earlier attempts on other members
    /// failed after sending the request, so one of them may have been applied.
    #[error("etcd error {code}: {message}")]
    Etcd { code: i64, message: String, after_failures: bool },
    /// A member answered something that is not etcd's answer (the request may have been applied).
    #[error("{0}")]
    Malformed(String),
}

impl GatewayError {
    /// The request was not applied: etcd answered with an error and no earlier attempt may have
    /// been applied, or no attempt ever reached a member.
    pub fn definitely_not_applied(&self) -> bool {
        matches!(self, GatewayError::Etcd { after_failures: false, .. } | GatewayError::Unreachable { maybe_applied: false, .. })
    }
}

/// An attempt that got no answer from its member; `sent`: the request may have reached it.
pub struct NoAnswer {
    message: String,
    sent: bool,
}

impl NoAnswer {
    /// Failed before the request left (the connection was refused or could not be set up).
    fn unsent(message: String) -> Self {
        NoAnswer { message, sent: false }
    }

    /// Failed after the request may have been sent.
    fn sent(message: String) -> Self {
        NoAnswer { message, sent: true }
    }
}

/// Why a stream stopped giving answers.
#[derive(Debug, thiserror::Error)]
pub enum StreamFailure {
    #[error(transparent)]
    Answer(#[from] AnswerError),
    /// The connection failed or ended.
    #[error("{0}")]
    Transport(String),
}

/// The members' client endpoints (`IP:2379`). Cheap to clone: clones share the current member.
#[derive(Clone)]
pub struct Gateway {
    endpoints: Arc<Vec<String>>,
    current: Arc<AtomicUsize>,
}

impl Gateway {
    pub fn new(endpoints: &[String]) -> Self {
        Gateway { endpoints: Arc::new(endpoints.to_vec()), current: Arc::new(AtomicUsize::new(0)) }
    }

    /// Runs `attempt` on each member at most once, starting with the current one, each within
    /// `attempt_timeout`, until a member answers. `attempt`'s outer error: no answer (connection
    /// failed, or ended before the answer); its inner result: the member's answer. A timed-out
    /// attempt counts as sent.
    async fn each_member<T, Fut>(
        &self,
        attempt_timeout: Duration,
        mut attempt: impl FnMut(String) -> Fut,
    ) -> Result<(usize, T), GatewayError>
    where
        Fut: Future<Output = Result<Result<T, AnswerError>, NoAnswer>>,
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
            if let Err(AnswerError::Etcd { code, message }) = &answer {
                if RETRY_ELSEWHERE.contains(code) {
                    // "no leader" was not applied, "request timed out" may have been.
                    failures.push(format!("{endpoint}: etcd error {code}: {message}"));
                    maybe_applied = true;
                    continue;
                }
            }
            self.current.store(idx, Ordering::Relaxed);
            let after_failures = maybe_applied;
            return match answer {
                Ok(v) => Ok((idx, v)),
                Err(AnswerError::Etcd { code, message }) => Err(GatewayError::Etcd { code, message, after_failures }),
                Err(AnswerError::Malformed(m)) => Err(GatewayError::Malformed(format!("{endpoint}: {m}"))),
            };
        }
        // Start the next call on the member after the one we started with.
        self.current.store((first + 1) % n.max(1), Ordering::Relaxed);
        Err(GatewayError::Unreachable { detail: failures.join("; "), maybe_applied })
    }

    /// A stream on member `idx` failed: later requests start on the next member, unless
    /// something else has moved on already.
    pub fn failed(&self, idx: usize) {
        let n = self.endpoints.len().max(1);
        let _ = self.current.compare_exchange(idx, (idx + 1) % n, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// POSTs `body` to `path` (a unary call) and reads the answer as `T`.
    pub async fn call<T: DeserializeOwned>(&self, path: &str, body: &Value, attempt_timeout: Duration) -> Result<T, GatewayError> {
        let body = Bytes::from(serde_json::to_vec(body).expect("JSON values serialise"));
        let (_, answer) = self
            .each_member(attempt_timeout, |endpoint| {
                let body = body.clone();
                async move {
                    let response = post(&endpoint, path, body, &[]).await?;
                    let bytes = response.into_body().collect().await.map_err(|e| NoAnswer::sent(format!("response body: {e}")))?.to_bytes();
                    Ok(parse_unary(&bytes))
                }
            })
            .await?;
        Ok(answer)
    }

    /// Watches `key` from `start_revision` (`POST /v3/watch`, requiring a leader); returns once
    /// etcd has confirmed the watch is created, within `attempt_timeout` per member.
    pub async fn watch(&self, key: &[u8], start_revision: i64, attempt_timeout: Duration) -> Result<ResponseStream, GatewayError> {
        let body = json!({"create_request": {"key": b64(key), "start_revision": start_revision.to_string()}});
        let body = Bytes::from(serde_json::to_vec(&body).expect("JSON values serialise"));
        let (idx, mut stream) = self
            .each_member(attempt_timeout, |endpoint| {
                let body = body.clone();
                async move {
                    let response = post(&endpoint, "/v3/watch", body, &[("grpc-metadata-hasleader", "true")]).await?;
                    let mut stream = ResponseStream::new(response);
                    match stream.next::<super::messages::WatchResponse>().await {
                        Ok(first) if first.created => Ok(Ok(stream)),
                        Ok(first) => Ok(Err(AnswerError::Malformed(format!("the watch's first answer is not its creation: {first:?}")))),
                        Err(StreamFailure::Answer(e)) => Ok(Err(e)),
                        Err(StreamFailure::Transport(e)) => Err(NoAnswer::sent(e)),
                    }
                }
            })
            .await?;
        stream.member = idx;
        Ok(stream)
    }

    /// Opens the lease keep-alive stream (a WebSocket on `/v3/lease/keepalive`).
    pub async fn keep_alive_stream(&self, attempt_timeout: Duration) -> Result<KeepAliveStream, GatewayError> {
        let (member, ws) = self
            .each_member(attempt_timeout, |endpoint| async move {
                let tcp = TcpStream::connect(&endpoint).await.map_err(|e| NoAnswer::unsent(format!("connect: {e}")))?;
                let _ = tcp.set_nodelay(true);
                let url = format!("ws://{endpoint}/v3/lease/keepalive");
                let (ws, _) =
                    tokio_tungstenite::client_async(url, tcp).await.map_err(|e| NoAnswer::sent(format!("WebSocket handshake: {e}")))?;
                Ok(Ok(ws))
            })
            .await?;
        Ok(KeepAliveStream { ws, member })
    }
}

/// Aborts the connection task when the request is done or abandoned (timeout).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A response whose connection lives as long as it does.
struct Response {
    response: hyper::Response<Incoming>,
    conn: AbortOnDrop,
}

impl Response {
    fn into_body(self) -> ResponseBody {
        ResponseBody { body: self.response.into_body(), _conn: self.conn }
    }
}

struct ResponseBody {
    body: Incoming,
    _conn: AbortOnDrop,
}

impl ResponseBody {
    async fn collect(self) -> Result<http_body_util::Collected<Bytes>, hyper::Error> {
        self.body.collect().await
    }
}

/// POSTs on a fresh connection and returns once the response's head has arrived.
async fn post(endpoint: &str, path: &str, body: Bytes, headers: &[(&str, &str)]) -> Result<Response, NoAnswer> {
    let stream = TcpStream::connect(endpoint).await.map_err(|e| NoAnswer::unsent(format!("connect: {e}")))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .map_err(|e| NoAnswer::unsent(format!("handshake: {e}")))?;
    let conn = AbortOnDrop(tokio::spawn(async move {
        let _ = conn.await;
    }));
    let mut request =
        hyper::Request::post(path).header(hyper::header::HOST, endpoint).header(hyper::header::CONTENT_TYPE, "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(body)).map_err(|e| NoAnswer::unsent(format!("request: {e}")))?;
    let response = sender.send_request(request).await.map_err(|e| NoAnswer::sent(format!("request: {e}")))?;
    Ok(Response { response, conn })
}

/// A streaming call's answer: newline-delimited JSON read as it arrives.
pub struct ResponseStream {
    body: ResponseBody,
    lines: Lines,
    ended: bool,
    /// The member it came from.
    pub member: usize,
}

impl ResponseStream {
    fn new(response: Response) -> Self {
        ResponseStream { body: response.into_body(), lines: Lines::default(), ended: false, member: 0 }
    }

    /// The next message; waits as long as the server sends nothing (the caller bounds it).
    pub async fn next<T: DeserializeOwned>(&mut self) -> Result<T, StreamFailure> {
        loop {
            if let Some(line) = self.lines.next_line() {
                return Ok(parse_stream_line(&line)?);
            }
            if self.ended {
                return Err(StreamFailure::Transport("the stream ended".into()));
            }
            match self.body.body.frame().await {
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        self.lines.push(data)?;
                    }
                }
                Some(Err(e)) => return Err(StreamFailure::Transport(format!("reading the stream: {e}"))),
                None => {
                    self.ended = true;
                    // An error answered before the stream started has no final newline.
                    if let Some(rest) = self.lines.rest() {
                        return Ok(parse_stream_line(&rest)?);
                    }
                }
            }
        }
    }
}

/// The lease keep-alive stream: one request, one answer, on one long-lived WebSocket.
pub struct KeepAliveStream {
    ws: WebSocketStream<TcpStream>,
    /// The member it is open on.
    pub member: usize,
}

impl KeepAliveStream {
    /// Sends one keep-alive and waits for its answer (the caller bounds the wait; after a
    /// missed answer the stream is dropped, so answers never pair with the wrong request).
    pub async fn renew(&mut self, lease: i64) -> Result<LeaseKeepAliveResponse, StreamFailure> {
        let request = json!({"ID": lease.to_string()}).to_string();
        self.ws.send(Message::text(request)).await.map_err(|e| StreamFailure::Transport(format!("sending: {e}")))?;
        loop {
            match self.ws.next().await {
                Some(Ok(Message::Text(text))) => return Ok(parse_stream_line(text.as_bytes())?),
                Some(Ok(Message::Binary(bytes))) => return Ok(parse_stream_line(&bytes)?),
                Some(Ok(Message::Close(_))) | None => return Err(StreamFailure::Transport("the stream was closed".into())),
                Some(Ok(_)) => continue, // ping / pong: answered by the library
                Some(Err(e)) => return Err(StreamFailure::Transport(format!("receiving: {e}"))),
            }
        }
    }
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The end of the key range that holds every key starting with `prefix` (last byte + 1).
pub fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests;
