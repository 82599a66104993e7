//! Unit tests of client.rs, and one against a real server.
use super::*;

fn names(children: &[&str]) -> Vec<String> {
    children.iter().map(|c| c.to_string()).collect()
}

#[test]
fn the_lowest_sequence_holds_the_lock_and_each_other_watches_the_one_just_ahead() {
    let children = names(&["00000000000000b2-0000000007", "00000000000000a1-0000000003", "00000000000000c3-0000000012"]);
    assert_eq!(turn(&children, "00000000000000a1-0000000003"), Turn::Ours);
    assert_eq!(turn(&children, "00000000000000b2-0000000007"), Turn::Behind("00000000000000a1-0000000003".into()));
    // Ahead by sequence number, not by name: c3's session id sorts last, its znode too.
    assert_eq!(turn(&children, "00000000000000c3-0000000012"), Turn::Behind("00000000000000b2-0000000007".into()));
    assert_eq!(turn(&children, "00000000000000d4-0000000013"), Turn::Gone);
}

#[test]
fn sequences_are_the_digits_after_the_last_dash_and_other_children_are_left_out() {
    assert_eq!(sequence("00000000000000a1-0000000003"), Some(3));
    // Past 2^31 ZooKeeper writes nineteen digits.
    assert_eq!(sequence("00000000000000a1-0000000002147483648"), Some(2_147_483_648));
    assert_eq!(sequence("readme"), None);
    assert_eq!(sequence("a-"), None);
    assert_eq!(sequence("a-12x"), None);
    let children = names(&["readme", "00000000000000a1-0000000003", "00000000000000b2-0000000001"]);
    assert_eq!(turn(&children, "00000000000000a1-0000000003"), Turn::Behind("00000000000000b2-0000000001".into()));
    assert_eq!(child_name("/lockchaos/lock/ledger/00000000000000a1-0000000003"), "00000000000000a1-0000000003");
}

#[test]
fn only_refusals_and_an_ended_session_say_a_request_was_not_applied() {
    assert!(Failure::Answer(zk::Error::NodeExists).not_applied());
    assert!(Failure::Answer(zk::Error::SessionExpired).not_applied() && Failure::Answer(zk::Error::SessionExpired).session_ended());
    assert!(!Failure::Answer(zk::Error::ConnectionLoss).not_applied());
    assert!(!Failure::NoAnswer(Duration::from_secs(1)).not_applied());
    assert!(!Failure::Answer(zk::Error::NoNode).session_ended());
}

#[tokio::test]
async fn without_a_server_an_acquire_is_refused_and_no_session_is_lost() {
    // A port nobody listens on: connections are refused, the crate gives up on every host.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let lock = LockParams { ttl_ms: 2000, ..LockParams::default() };
    let mut client = Client::new(&[addr], lock, Duration::from_millis(500));
    let err = client.acquire("ledger", Duration::from_secs(1)).await.unwrap_err();
    assert!(matches!(err, LockError::Refused(ref why) if why.contains("no ZooKeeper session")), "{err}");
    assert!(!client.session_lost().await.unwrap());
}

/// Against a real ZooKeeper: `LOCKCHAOS_TEST_ZOOKEEPER=127.0.0.1:2181 cargo test -p harness
/// --lib -- --ignored against_a_real_zookeeper` (the container scenarios cover it otherwise).
#[tokio::test]
#[ignore]
async fn against_a_real_zookeeper() {
    let server = std::env::var("LOCKCHAOS_TEST_ZOOKEEPER").expect("LOCKCHAOS_TEST_ZOOKEEPER=host:port");
    let lock = LockParams { ttl_ms: 2000, retry_ms: 20, ..LockParams::default() };
    let new = || Client::new(std::slice::from_ref(&server), lock.clone(), Duration::from_secs(1));
    let name = format!("test-{}", std::process::id());
    let (mut a, mut b) = (new(), new());

    // Uncontended: granted; again after release, on the same session, with a higher czxid.
    let first = a.acquire(&name, Duration::from_secs(5)).await.unwrap();
    a.release(&name, &first).await.unwrap();
    let started = Instant::now();
    let held = a.acquire(&name, Duration::from_secs(1)).await.unwrap();
    eprintln!("uncontended acquire on a live session: {:?}, validity {:?}", started.elapsed(), held.validity);
    assert!(held.token > first.token, "{first:?} {held:?}");
    assert_eq!(child_name(&held.secret)[..16], child_name(&first.secret)[..16], "the same session");

    // A waiter that times out leaves no znode behind.
    let err = b.acquire(&name, Duration::from_millis(300)).await.unwrap_err();
    assert!(matches!(err, LockError::Refused(_)), "{err}");
    let parent = format!("{ROOT}/{name}");
    let zk = &a.session.as_ref().unwrap().zk;
    assert_eq!(zk.list_children(&parent).await.unwrap().len(), 1, "only the holder's znode");

    // Held past the session timeout: the session lives on.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!a.session_lost().await.unwrap());

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

    // b's session ended from outside (another connection with its id and password closes
    // it, as an expiry would): its znode goes, a is granted, and b learns its session is lost.
    let waiter = tokio::spawn({
        let name = name.clone();
        async move { (a.acquire(&name, Duration::from_secs(8)).await, a) }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let b_session = b.session.as_ref().unwrap().zk.session().clone();
    let closer = zk::Client::connector().with_session(b_session).connect(&server).await.unwrap();
    drop(closer);
    let (after, mut a) = waiter.await.unwrap();
    let after = after.unwrap();
    assert!(after.token > grant.token);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(b.session_lost().await.unwrap(), "b's session ended");
    let err = b.release(&name, &grant).await.unwrap_err();
    assert!(matches!(err, LockError::Refused(_)), "{err}");
    a.release(&name, &after).await.unwrap();
    // b comes back with a new session.
    let again = b.acquire(&name, Duration::from_secs(5)).await.unwrap();
    assert!(again.token > after.token && child_name(&again.secret)[..16] != child_name(&grant.secret)[..16]);
    b.release(&name, &again).await.unwrap();
}
