//! etcd's JSON gRPC gateway (`POST http://IP:2379/v3/...`), over plain HTTP/1.1 with hyper.
//!
//! Not the etcd-client crate: that needs `protoc` at build time. In the gateway's JSON, keys and
//! values are base64, int64 fields are strings, and fields at their zero value are left out
//! (a keep-alive of an expired lease answers without `TTL`). Errors come back as
//! `{"error": …, "message": …, "code": N}` with the gRPC status code (5 = not found,
//! 14 = unavailable); a streaming call (lease keep-alive) wraps its one answer in `result`.
//!
//! One fresh TCP connection per request: a member that was paused, killed or cut off never
//! leaves a half-dead pooled connection behind, and on a bridge network a connect costs little.

use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const PORT: u16 = 2379;

/// gRPC status codes after which the next member is tried: the member is up but cannot serve
/// (no leader, request timed out inside etcd).
const RETRY_ELSEWHERE: [i64; 2] = [4, 14];

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// No member answered: every attempt failed to connect, timed out or was unavailable.
    /// Any attempt may have been applied.
    #[error("no etcd member answered: {0}")]
    Unreachable(String),
    /// A member answered with an error. `after_failures`: earlier attempts on other members
    /// failed without an answer, so one of them may have been applied.
    #[error("etcd error {code}: {message}")]
    Etcd { code: i64, message: String, after_failures: bool },
}

impl GatewayError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, GatewayError::Etcd { code: 5, .. })
    }
}

/// The members' client endpoints (`IP:2379`); requests stick to the last member that answered
/// and fail over to the next on connection errors, timeouts and "unavailable". Cheap to clone:
/// clones share the current member.
#[derive(Clone)]
pub struct Gateway {
    endpoints: Arc<Vec<String>>,
    current: Arc<AtomicUsize>,
}

impl Gateway {
    pub fn new(endpoints: &[String]) -> Self {
        Gateway { endpoints: Arc::new(endpoints.to_vec()), current: Arc::new(AtomicUsize::new(0)) }
    }

    /// POSTs `body` to `path`, trying each member at most once, each with `attempt_timeout`.
    /// Returns the answer (unwrapped from `result` for streaming calls).
    pub async fn call(&self, path: &str, body: &Value, attempt_timeout: Duration) -> Result<Value, GatewayError> {
        let body = Bytes::from(serde_json::to_vec(body).expect("JSON values serialise"));
        let n = self.endpoints.len();
        let first = self.current.load(Ordering::Relaxed);
        let mut failures: Vec<String> = vec![];
        for i in 0..n {
            let idx = (first + i) % n;
            let endpoint = &self.endpoints[idx];
            let answer = match tokio::time::timeout(attempt_timeout, post(endpoint, path, body.clone())).await {
                Ok(Ok(bytes)) => parse(&bytes),
                Ok(Err(e)) => {
                    failures.push(format!("{endpoint}: {e}"));
                    continue;
                }
                Err(_) => {
                    failures.push(format!("{endpoint}: no answer within {attempt_timeout:?}"));
                    continue;
                }
            };
            match answer {
                Ok(v) => {
                    self.current.store(idx, Ordering::Relaxed);
                    return Ok(v);
                }
                Err((code, message)) if RETRY_ELSEWHERE.contains(&code) => {
                    failures.push(format!("{endpoint}: etcd error {code}: {message}"));
                }
                Err((code, message)) => {
                    self.current.store(idx, Ordering::Relaxed);
                    return Err(GatewayError::Etcd { code, message, after_failures: !failures.is_empty() });
                }
            }
        }
        // Start the next call on the member after the one we started with.
        self.current.store((first + 1) % n.max(1), Ordering::Relaxed);
        Err(GatewayError::Unreachable(failures.join("; ")))
    }
}

/// Aborts the connection task when the request is done or abandoned (timeout).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn post(endpoint: &str, path: &str, body: Bytes) -> Result<Bytes, String> {
    let stream = tokio::net::TcpStream::connect(endpoint).await.map_err(|e| format!("connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.map_err(|e| format!("handshake: {e}"))?;
    let _conn = AbortOnDrop(tokio::spawn(async move {
        let _ = conn.await;
    }));
    let request = hyper::Request::post(path)
        .header(hyper::header::HOST, endpoint)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body))
        .map_err(|e| format!("request: {e}"))?;
    let response = sender.send_request(request).await.map_err(|e| format!("request: {e}"))?;
    let bytes = response.into_body().collect().await.map_err(|e| format!("response body: {e}"))?.to_bytes();
    Ok(bytes)
}

/// The answer, or the error's (gRPC code, message). HTTP status is not needed: the body says it.
fn parse(bytes: &[u8]) -> Result<Value, (i64, String)> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| (-1, format!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes[..bytes.len().min(200)]))))?;
    // A streaming call: {"result": …} or {"error": {"code", "message", …}}.
    if let Some(err) = v.get("error").filter(|e| e.is_object()) {
        return Err((int(err, "code"), err.get("message").and_then(Value::as_str).unwrap_or_default().to_string()));
    }
    // A unary call's error: {"error": "…", "message": "…", "code": N}.
    if v.get("code").is_some() && v.get("message").is_some() {
        return Err((int(&v, "code"), v["message"].as_str().unwrap_or_default().to_string()));
    }
    Ok(match v.get("result") {
        Some(r) => r.clone(),
        None => v,
    })
}

/// An int64 field: a string in the gateway's JSON, sometimes a number; absent means 0.
pub fn int(v: &Value, field: &str) -> i64 {
    match v.get(field) {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn unb64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(text).unwrap_or_default()
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
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_errors_and_stream_results_are_told_apart() {
        let ok = br#"{"header":{"revision":"6"},"ID":"22","TTL":"2"}"#;
        assert_eq!(int(&parse(ok).unwrap(), "TTL"), 2);
        let stream_ok = br#"{"result":{"header":{"revision":"7"},"ID":"22"}}"#;
        let v = parse(stream_ok).unwrap();
        assert_eq!((int(&v, "ID"), int(&v, "TTL")), (22, 0), "an absent TTL is 0: the lease is gone");
        let unary_err = br#"{"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5}"#;
        assert_eq!(parse(unary_err).unwrap_err().0, 5);
        let stream_err = br#"{"error":{"grpc_code":14,"http_code":503,"message":"no leader","code":14}}"#;
        assert_eq!(parse(stream_err).unwrap_err(), (14, "no leader".to_string()));
        assert!(parse(b"<html>").is_err());
        assert_eq!(int(&json!({"n": 3}), "n"), 3);
    }

    #[test]
    fn prefix_end_covers_exactly_the_prefix() {
        assert_eq!(prefix_end("a/b/"), b"a/b0".to_vec());
        assert_eq!(unb64(&b64(b"lockchaos/x")), b"lockchaos/x".to_vec());
    }

    #[tokio::test]
    async fn an_unreachable_member_is_skipped_and_all_unreachable_is_an_error() {
        // A port nothing listens on, then a tiny server that answers like etcd.
        let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let live = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = vec![0u8; 4096];
                let _ = s.read(&mut buf).await;
                let body = r#"{"header":{},"ID":"9","TTL":"2"}"#;
                let reply = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len());
                let _ = s.write_all(reply.as_bytes()).await;
            }
        });
        let gw = Gateway::new(&[dead.clone(), live]);
        let v = gw.call("/v3/lease/grant", &json!({"TTL": 2}), Duration::from_secs(2)).await.unwrap();
        assert_eq!(int(&v, "ID"), 9);
        assert_eq!(gw.current.load(Ordering::Relaxed), 1, "sticks to the member that answered");
        let gw = Gateway::new(&[dead]);
        let err = gw.call("/v3/lease/grant", &json!({"TTL": 2}), Duration::from_secs(2)).await.unwrap_err();
        assert!(matches!(err, GatewayError::Unreachable(_)), "{err}");
    }
}
