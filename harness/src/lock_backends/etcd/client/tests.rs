//! Unit tests of client.rs.
use super::*;

#[tokio::test]
async fn a_session_is_lost_when_marked_or_when_its_deadline_passes() {
    let state = SessionState::new(Instant::now() + Duration::from_millis(50));
    assert!(!state.is_lost());
    let started = Instant::now();
    state.until_lost().await;
    assert!(started.elapsed() >= Duration::from_millis(45) && state.is_lost());

    let state = Arc::new(SessionState::new(Instant::now() + Duration::from_secs(60)));
    let waiter = tokio::spawn({
        let state = state.clone();
        async move { state.until_lost().await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!waiter.is_finished());
    state.mark_lost();
    tokio::time::timeout(Duration::from_secs(1), waiter).await.unwrap().unwrap();
}

/// A loopback address where nothing listens: connects are refused.
async fn closed_port() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().to_string()
}

#[tokio::test]
async fn the_keep_alive_gives_up_when_the_deadline_passes_unrenewed() {
    let members = Members::new(&[closed_port().await]);
    let started = Instant::now();
    let state = Arc::new(SessionState::new(started + Duration::from_secs(1)));
    let task = tokio::spawn(keep_alive::keep_alive(members, 5, Duration::from_secs(1), state.clone()));
    tokio::time::timeout(Duration::from_secs(3), task).await.unwrap().unwrap();
    assert!(state.is_lost() && started.elapsed() >= Duration::from_secs(1));
}

#[test]
fn a_txn_answer_without_its_range_result_is_unknown() {
    let err = range_at(&[], 1).unwrap_err();
    assert!(matches!(err, LockError::Unknown(_)), "{err}");
}

#[tokio::test]
async fn an_acquire_no_member_takes_a_connection_for_is_refused() {
    let lock = LockParams { ttl_ms: 2000, retry_ms: 20, ..LockParams::default() };
    let mut client = Client::new(&[closed_port().await, closed_port().await], lock, Duration::from_millis(500));
    let err = client.acquire("k", Duration::from_secs(1)).await.unwrap_err();
    assert!(matches!(err, LockError::Refused(_)), "{err}");
}

/// Against a real etcd: `LOCKCHAOS_TEST_ETCD=127.0.0.1:2379 cargo test -p harness --lib --
/// --ignored against_a_real_etcd` (the container scenarios cover it otherwise).
#[tokio::test]
#[ignore]
async fn against_a_real_etcd() {
    let endpoint = std::env::var("LOCKCHAOS_TEST_ETCD").expect("LOCKCHAOS_TEST_ETCD=host:port");
    let lock = LockParams { ttl_ms: 2000, retry_ms: 20, ..LockParams::default() };
    let new = || Client::new(std::slice::from_ref(&endpoint), lock.clone(), Duration::from_secs(1));
    let name = format!("test-{}", std::process::id());
    let (mut a, mut b) = (new(), new());

    // Uncontended: granted; again after release, on the same session.
    let first = a.acquire(&name, Duration::from_secs(1)).await.unwrap();
    a.release(&name, &first).await.unwrap();
    let started = Instant::now();
    let held = a.acquire(&name, Duration::from_secs(1)).await.unwrap();
    eprintln!("uncontended acquire on a live session: {:?}", started.elapsed());
    assert!(held.token > first.token && held.secret == first.secret);

    // A waiter that times out leaves no key behind.
    let err = b.acquire(&name, Duration::from_millis(300)).await.unwrap_err();
    assert!(matches!(err, LockError::Refused(_)), "{err}");
    let prefix = format!("{ROOT}/{name}/");
    let keys = a
        .members
        .call(a.op_timeout, |mut c| {
            let prefix = prefix.clone();
            async move { c.get(prefix, Some(GetOptions::new().with_prefix())).await }
        })
        .await
        .unwrap();
    assert_eq!(keys.count(), 1, "only the holder's key: {keys:?}");

    // Held past the TTL: the keep-alive stream renews the lease.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!a.is_session_lost());

    // A waiter is woken by the release (a watch, not a poll) and gets a higher token.
    let waiter = tokio::spawn({
        let name = name.clone();
        async move {
            let grant = b.acquire(&name, Duration::from_secs(5)).await;
            (grant, Instant::now(), b)
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    a.release("", &held).await.unwrap();
    let released = Instant::now();
    let (grant, at, mut b) = waiter.await.unwrap();
    let grant = grant.unwrap();
    eprintln!("waiter granted {:?} after the release", at.saturating_duration_since(released));
    assert!(grant.token > held.token);

    // The holder's session dies (no more keep-alives): the lease expires, the waiter gets it
    // and the old holder learns it lost its session.
    let name2 = format!("{name}-2");
    let mine = b.acquire(&name2, Duration::from_secs(1)).await.unwrap();
    b.session.as_ref().unwrap().keep_alive.abort();
    let mut c = new();
    let theirs = c.acquire(&name2, Duration::from_secs(8)).await.unwrap();
    assert!(b.is_session_lost() && theirs.token > mine.token);
    let err = b.release(&name2, &mine).await.unwrap_err();
    assert!(matches!(err, LockError::Refused(_)), "{err}");
    c.release(&name2, &theirs).await.unwrap();
    b.release("", &grant).await.unwrap_err();
}
