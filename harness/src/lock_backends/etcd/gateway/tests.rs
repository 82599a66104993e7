//! Unit tests of gateway.rs.
use super::super::messages::{EventType, LeaseGrantResponse, WatchResponse};
use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[test]
fn prefix_end_covers_exactly_the_prefix() {
    assert_eq!(prefix_end("a/b/"), b"a/b0".to_vec());
    assert_eq!(prefix_end("a\u{7f}"), b"a\x80".to_vec());
}

/// A tiny HTTP server on loopback: reads one request (head and JSON body), then writes
/// `reply` piece by piece, pausing between pieces.
async fn serve(reply: Vec<Vec<u8>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let reply = reply.clone();
            tokio::spawn(async move {
                let mut got = vec![];
                let mut buf = vec![0u8; 4096];
                while !(String::from_utf8_lossy(&got).contains("\r\n\r\n{") && got.ends_with(b"}")) {
                    let n = s.read(&mut buf).await.unwrap();
                    if n == 0 {
                        return;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                for piece in reply {
                    s.write_all(&piece).await.unwrap();
                    s.flush().await.unwrap();
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            });
        }
    });
    addr
}

/// A complete HTTP answer with this status line and body.
fn reply(status: &str, body: &str) -> Vec<Vec<u8>> {
    vec![format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()).into_bytes()]
}

/// A chunked answer's head.
fn chunked_head() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n".to_vec()
}

/// One chunk of a chunked answer.
fn chunk(data: &str) -> Vec<u8> {
    format!("{:x}\r\n{data}\r\n", data.len()).into_bytes()
}

const NO_LEADER: &str = r#"{"error":"etcdserver: no leader","message":"etcdserver: no leader","code":14}"#;

#[tokio::test]
async fn an_unreachable_member_is_skipped_and_all_unreachable_is_an_error() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let live = serve(reply("200 OK", r#"{"header":{},"ID":"9","TTL":"2"}"#)).await;
    let gw = Gateway::new(&[dead.clone(), live]);
    let v: LeaseGrantResponse = gw.call("/v3/lease/grant", &json!({"TTL": "2"}), Duration::from_secs(2)).await.unwrap();
    assert_eq!((v.id, v.ttl), (9, 2));
    assert_eq!(gw.current.load(Ordering::Relaxed), 1, "sticks to the member that answered");
    let gw = Gateway::new(&[dead]);
    let err = gw.call::<LeaseGrantResponse>("/v3/lease/grant", &json!({"TTL": "2"}), Duration::from_secs(2)).await.unwrap_err();
    assert!(matches!(err, GatewayError::Unreachable { maybe_applied: false, .. }), "{err}");
    assert!(err.definitely_not_applied(), "no connection, nothing sent");

    // A member that takes the request and never answers may have applied it.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let mut held = vec![];
        loop {
            held.push(silent.accept().await.unwrap());
        }
    });
    let gw = Gateway::new(&[silent_addr]);
    let err = gw.call::<LeaseGrantResponse>("/v3/lease/grant", &json!({"TTL": "2"}), Duration::from_millis(200)).await.unwrap_err();
    assert!(matches!(err, GatewayError::Unreachable { maybe_applied: true, .. }), "{err}");
}

#[tokio::test]
async fn no_leader_moves_on_other_errors_and_malformed_answers_do_not() {
    let a = serve(reply("503 Service Unavailable", NO_LEADER)).await;
    let b = serve(reply("404 Not Found", r#"{"error":"lease not found","message":"lease not found","code":5}"#)).await;
    let c = serve(reply("200 OK", r#"{"header":{},"ID":"9x","TTL":"2"}"#)).await;
    let gw = Gateway::new(&[a.clone(), b]);
    let err = gw.call::<LeaseGrantResponse>("/v3/lease/revoke", &json!({"ID": "1"}), Duration::from_secs(2)).await.unwrap_err();
    assert!(matches!(err, GatewayError::Etcd { code: 5, after_failures: true, .. }), "{err}");
    assert!(!err.definitely_not_applied(), "the first member may have applied it");
    let gw = Gateway::new(&[c, a]);
    let err = gw.call::<LeaseGrantResponse>("/v3/lease/grant", &json!({"TTL": "2"}), Duration::from_secs(2)).await.unwrap_err();
    assert!(matches!(&err, GatewayError::Malformed(m) if m.contains("ID")), "{err}");
    assert_eq!(gw.current.load(Ordering::Relaxed), 0, "a malformed answer is not retried elsewhere");
}

#[tokio::test]
async fn a_watch_stream_is_read_line_by_line_across_chunk_boundaries() {
    // Chunked transfer encoding, the JSON lines split mid-line and across chunks, each piece
    // written on its own after a pause.
    let reply = vec![
        chunked_head(),
        chunk("{\"result\":{\"header\":{\"revision\":\"7\"},\"created\":true}}\n"),
        chunk("{\"result\":{\"header\":"),
        chunk("{\"revision\":\"8\"},\"events\":[{\"kv\":"),
        chunk("{\"key\":\"YQ==\"}}]}}\n{\"result\":"),
        chunk("{\"header\":{\"revision\":\"9\"},\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":\"YQ==\"}}]}}\n"),
        b"0\r\n\r\n".to_vec(),
    ];
    let addr = serve(reply).await;
    let gw = Gateway::new(&[addr]);
    let mut stream = gw.watch(b"a", 7, Duration::from_secs(2)).await.unwrap();
    let put: WatchResponse = stream.next().await.unwrap();
    assert_eq!((put.header.revision, put.events[0].kind), (8, EventType::Put));
    let delete: WatchResponse = stream.next().await.unwrap();
    let kv = &delete.events[0].kv;
    assert_eq!((delete.header.revision, delete.events[0].kind, kv.key.as_slice()), (9, EventType::Delete, &b"a"[..]));
    assert!(matches!(stream.next::<WatchResponse>().await, Err(StreamFailure::Transport(_))), "then the stream ends");
}

#[tokio::test]
async fn a_watch_refused_for_want_of_a_leader_moves_to_the_next_member() {
    let a = serve(reply("503 Service Unavailable", NO_LEADER)).await;
    let stream_error =
        r#"{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader","http_status":"Service Unavailable"}}"#;
    let b = serve(vec![chunked_head(), chunk(&format!("{stream_error}\n")), b"0\r\n\r\n".to_vec()]).await;
    let c = serve(vec![chunked_head(), chunk("{\"result\":{\"header\":{\"revision\":\"7\"},\"created\":true}}\n")]).await;
    let gw = Gateway::new(&[a, b, c]);
    let stream = gw.watch(b"a", 7, Duration::from_secs(2)).await.unwrap();
    assert_eq!(stream.member, 2);
    assert_eq!(gw.current.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn the_keep_alive_stream_carries_several_renewals_on_one_connection() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        for ttl in ["\"TTL\":\"2\"", "\"TTL\":\"2\"", ""] {
            let Some(Ok(Message::Text(request))) = ws.next().await else { panic!("no request") };
            assert_eq!(request.as_str(), r#"{"ID":"77"}"#);
            let sep = if ttl.is_empty() { "" } else { "," };
            let answer = format!(r#"{{"result":{{"header":{{"revision":"3"}},"ID":"77"{sep}{ttl}}}}}"#);
            ws.send(Message::text(answer)).await.unwrap();
        }
        // A listener that is gone: a second connection would fail.
    });
    let gw = Gateway::new(&[addr]);
    let mut stream = gw.keep_alive_stream(Duration::from_secs(2)).await.unwrap();
    let mut got = vec![];
    for _ in 0..3 {
        got.push(stream.renew(77).await.unwrap().ttl);
    }
    assert_eq!(got, [2, 2, 0]);
    server.await.unwrap();
}
