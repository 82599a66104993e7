//! Unit tests of members.rs: failover and the refused / unknown split, against loopback
//! addresses that refuse connections or accept them and never answer.
use super::*;

/// A loopback address where nothing listens: connects are refused.
async fn refusing() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A loopback address that accepts connections and never answers (a paused member).
async fn silent() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let mut held = vec![];
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    addr
}

async fn get(members: &Members) -> Result<etcd_client::GetResponse, CallError> {
    members.call(Duration::from_millis(300), |mut c| async move { c.get("k", None).await }).await
}

#[tokio::test]
async fn no_member_taking_a_connection_is_definitely_not_applied() {
    let members = Members::new(&[refusing().await, refusing().await]);
    let err = get(&members).await.unwrap_err();
    assert!(matches!(err, CallError::Unreachable { maybe_applied: false, .. }), "{err}");
    assert!(err.definitely_not_applied());
}

#[tokio::test]
async fn a_member_that_took_the_request_and_never_answered_may_have_applied_it() {
    let members = Members::new(&[refusing().await, silent().await]);
    let err = get(&members).await.unwrap_err();
    assert!(matches!(err, CallError::Unreachable { maybe_applied: true, .. }), "{err}");
    assert!(!err.definitely_not_applied());
}

#[tokio::test]
async fn each_member_fails_over_and_sticks_to_the_one_that_answered() {
    let members = Members::new(&["a".into(), "b".into(), "c".into()]);
    let tried = std::sync::Mutex::new(vec![]);
    let answer = members
        .each_member(Duration::from_secs(1), |endpoint| {
            tried.lock().unwrap().push(endpoint.clone());
            async move {
                match endpoint.as_str() {
                    "a" => Err(NoAnswer { message: "refused".into(), sent: false }),
                    "b" => Ok(Err(Answered { code: 14, message: "etcdserver: no leader".into() })),
                    _ => Ok(Ok(7)),
                }
            }
        })
        .await;
    assert_eq!(answer.unwrap(), (2, 7));
    assert_eq!(*tried.lock().unwrap(), ["a", "b", "c"]);
    // The next call starts on c; an error answer there is etcd's, after a maybe-applied attempt
    // only if one came before it.
    let err = members
        .each_member(Duration::from_secs(1), |_| async { Ok::<Result<(), _>, _>(Err(Answered { code: 9, message: "no".into() })) })
        .await;
    assert!(matches!(err, Err(CallError::Etcd { code: 9, after_failures: false, .. })));
    members.failed(2);
    let first = std::sync::Mutex::new(None);
    let _ = members
        .each_member(Duration::from_secs(1), |endpoint| {
            first.lock().unwrap().get_or_insert(endpoint);
            async { Ok::<_, NoAnswer>(Ok(())) }
        })
        .await;
    assert_eq!(first.lock().unwrap().as_deref(), Some("a"), "a failed stream moves on to the next member");
}

#[test]
fn etcd_statuses_are_answers_and_transport_failures_are_not() {
    let answered = sort::<()>(Err(etcd_client::Error::GRpcStatus(tonic::Status::unavailable("etcdserver: no leader"))));
    assert_eq!(answered.unwrap().unwrap_err(), Answered { code: 14, message: "etcdserver: no leader".into() });
    let broken = tonic::Status::from_error(Box::new(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset")));
    let sorted = sort::<()>(Err(etcd_client::Error::GRpcStatus(broken)));
    assert!(matches!(sorted, Err(NoAnswer { sent: true, .. })));
    let gone = sort::<()>(Err(etcd_client::Error::LeaseKeepAliveError("lease not found".into())));
    assert_eq!(gone.unwrap().unwrap_err().code, NOT_FOUND);
}
