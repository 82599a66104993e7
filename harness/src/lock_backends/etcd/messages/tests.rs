//! Unit tests of messages.rs.
use super::*;

#[test]
fn a_txn_answer_is_read_with_absent_fields_at_zero() {
    let body = br#"{"header":{"cluster_id":"1","member_id":"2","revision":"41","raft_term":"3"},"succeeded":true,
        "responses":[{"response_put":{"header":{"revision":"41"}}},
                     {"response_range":{"header":{"revision":"41"},"kvs":[{"key":"YS9iLzE=","create_revision":"17","mod_revision":"17","version":"1","lease":"694d7ff1fc2e4b0c"}],"count":"2"}}]}"#;
    // The lease above is not decimal: that is malformed, not 0.
    let err = parse_unary::<TxnResponse>(body).unwrap_err();
    assert!(matches!(&err, AnswerError::Malformed(m) if m.contains("responses[1].response_range.kvs[0].lease")), "{err}");

    let body = String::from_utf8_lossy(body).replace("694d7ff1fc2e4b0c", "7587888233432");
    let txn: TxnResponse = parse_unary(body.as_bytes()).unwrap();
    assert!(txn.succeeded);
    assert_eq!(txn.header.revision, 41);
    let owner = &txn.range(1).unwrap().kvs[0];
    assert_eq!((owner.key.as_slice(), owner.create_revision, owner.lease), (&b"a/b/1"[..], 17, 7587888233432));
    assert!(txn.range(0).is_err(), "a put answer is not a range answer");

    // An Else branch that found nothing: `succeeded` and `kvs` left out.
    let txn: TxnResponse =
        parse_unary(br#"{"header":{"revision":"5"},"responses":[{"response_range":{"header":{"revision":"5"}}}]}"#).unwrap();
    assert!(!txn.succeeded);
    assert!(txn.range(0).unwrap().kvs.is_empty());
}

#[test]
fn a_present_malformed_int64_is_an_error_never_zero() {
    for bad in [r#""12x""#, r#""""#, r#"" 12""#, "1.5", "true", r#""0x10""#, r#""9223372036854775808""#, "[]", "{}"] {
        let body = format!(r#"{{"header":{{"revision":{bad}}},"ID":"7","TTL":"2"}}"#);
        let err = parse_unary::<LeaseGrantResponse>(body.as_bytes()).unwrap_err();
        assert!(matches!(&err, AnswerError::Malformed(m) if m.contains("header.revision")), "{bad}: {err}");
    }
    let ok: LeaseGrantResponse = parse_unary(br#"{"header":{"revision":12},"ID":"-7","TTL":null}"#).unwrap();
    assert_eq!((ok.header.revision, ok.id, ok.ttl), (12, -7, 0), "integers and null are proto3 JSON too");
    let absent: LeaseGrantResponse = parse_unary(br#"{"header":{}}"#).unwrap();
    assert_eq!((absent.id, absent.ttl), (0, 0));
}

#[test]
fn other_malformed_fields_are_errors_too() {
    let bad_key = br#"{"header":{"revision":"3"},"kvs":[{"key":"not base64!","create_revision":"2"}]}"#;
    assert!(matches!(parse_unary::<RangeResponse>(bad_key), Err(AnswerError::Malformed(m)) if m.contains("kvs[0].key")));
    let bad_bool = br#"{"header":{"revision":"3"},"succeeded":"yes"}"#;
    assert!(matches!(parse_unary::<TxnResponse>(bad_bool), Err(AnswerError::Malformed(m)) if m.contains("succeeded")));
    let bad_list = br#"{"header":{"revision":"3"},"kvs":{"key":"YQ=="}}"#;
    assert!(parse_unary::<RangeResponse>(bad_list).is_err());
    let bad_type = br#"{"result":{"header":{"revision":"3"},"events":[{"type":"EXPIRE","kv":{"key":"YQ=="}}]}}"#;
    assert!(matches!(parse_stream_line::<WatchResponse>(bad_type), Err(AnswerError::Malformed(m)) if m.contains("events[0].type")));
    assert!(matches!(parse_unary::<RangeResponse>(b"<html>"), Err(AnswerError::Malformed(_))));
    assert!(matches!(parse_unary::<RangeResponse>(b"[1]"), Err(AnswerError::Malformed(_))));
}

#[test]
fn errors_and_results_are_told_apart() {
    let unary = br#"{"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5}"#;
    assert_eq!(
        parse_unary::<LeaseRevokeResponse>(unary).unwrap_err(),
        AnswerError::Etcd { code: 5, message: "etcdserver: requested lease not found".into() }
    );
    let bad_code = br#"{"error":"x","message":"x","code":"five"}"#;
    assert!(matches!(parse_unary::<LeaseRevokeResponse>(bad_code), Err(AnswerError::Malformed(_))));
    // A lease grant's own `error` field is not the error envelope.
    let grant: LeaseGrantResponse = parse_unary(br#"{"header":{"revision":"1"},"ID":"9","TTL":"2","error":""}"#).unwrap();
    assert_eq!((grant.id, grant.ttl), (9, 2));

    let stream = br#"{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader","http_status":"Service Unavailable"}}"#;
    assert_eq!(
        parse_stream_line::<WatchResponse>(stream).unwrap_err(),
        AnswerError::Etcd { code: 14, message: "etcdserver: no leader".into() }
    );
    assert!(matches!(parse_stream_line::<WatchResponse>(unary), Err(AnswerError::Etcd { code: 5, .. })));
    let alive: LeaseKeepAliveResponse = parse_stream_line(br#"{"result":{"header":{"revision":"3"},"ID":"2324035789476399376"}}"#).unwrap();
    assert_eq!((alive.id, alive.ttl), (2324035789476399376, 0), "an absent TTL is 0: the lease is gone");
    assert!(parse_stream_line::<LeaseKeepAliveResponse>(br#"{"header":{}}"#).is_err(), "no result");
}

#[test]
fn watch_events_put_is_left_out_delete_is_named() {
    let line = br#"{"result":{"header":{"revision":"3"},"events":[{"kv":{"key":"YQ==","create_revision":"2","mod_revision":"2","version":"1"}},{"type":"DELETE","kv":{"key":"YQ==","mod_revision":"3"}}]}}"#;
    let w: WatchResponse = parse_stream_line(line).unwrap();
    assert_eq!(w.events.iter().map(|e| e.kind).collect::<Vec<_>>(), [EventType::Put, EventType::Delete]);
    assert_eq!(w.events[1].kv.create_revision, 0);
    let created: WatchResponse = parse_stream_line(br#"{"result":{"header":{"revision":"2"},"created":true}}"#).unwrap();
    assert!(created.created && !created.canceled && created.watch_id == 0);
}

#[test]
fn lines_are_whole_whatever_the_chunks() {
    let text = b"{\"result\":{\"created\":true}}\n{\"result\":{\"events\":[]}}\r\n\n{\"error\":{\"grpc_code\":14}}";
    for split in 0..text.len() {
        for second in split..text.len() {
            let mut lines = Lines::default();
            let mut got = vec![];
            for chunk in [&text[..split], &text[split..second], &text[second..]] {
                lines.push(chunk).unwrap();
                while let Some(l) = lines.next_line() {
                    got.push(l);
                }
            }
            got.extend(lines.rest());
            assert_eq!(
                got,
                vec![
                    b"{\"result\":{\"created\":true}}".to_vec(),
                    b"{\"result\":{\"events\":[]}}".to_vec(),
                    b"{\"error\":{\"grpc_code\":14}}".to_vec()
                ],
                "split at {split} and {second}"
            );
        }
    }
    let mut lines = Lines::default();
    lines.push(b"\n\r\n  \n").unwrap();
    assert_eq!((lines.next_line(), lines.rest()), (None, None));
}
