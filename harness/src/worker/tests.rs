//! The worker's history lines, against a real resource server on loopback. The lock is the
//! worker's neighbour here, so a scripted stand-in plays it.

use super::*;
use crate::lock_backends::{ClientConfig, LockParams};
use crate::resource::proof::RunKey;
use crate::resource::server::{serve_on, Logs};
use crate::resource::{ResourceMode, ResourceParams};
use checker::Event;
use std::collections::VecDeque;
use std::net::SocketAddr;

/// Answers acquire, release and renew from a script, then grants everything.
#[derive(Default)]
struct ScriptedLock {
    acquires: VecDeque<Result<Grant, LockError>>,
    releases: VecDeque<Result<(), LockError>>,
    renews: VecDeque<Result<Duration, LockError>>,
}

#[async_trait::async_trait]
impl LockClient for ScriptedLock {
    async fn acquire(&mut self, _key: &str, _timeout: Duration) -> Result<Grant, LockError> {
        self.acquires.pop_front().unwrap_or_else(|| Ok(grant(Some(9))))
    }
    async fn release(&mut self, _key: &str, _grant: &Grant) -> Result<(), LockError> {
        self.releases.pop_front().unwrap_or(Ok(()))
    }
    async fn renew(&mut self, _key: &str, _grant: &Grant) -> Result<Duration, LockError> {
        self.renews.pop_front().unwrap_or(Ok(Duration::from_millis(1500)))
    }
}

fn grant(token: Option<u64>) -> Grant {
    Grant { token, validity: Duration::from_millis(1500), secret: "s".into() }
}

fn config(dir: &std::path::Path, resource: SocketAddr, run_ms: u64) -> WorkerConfig {
    let t0_ns = crate::clock::monotonic_ns();
    WorkerConfig {
        process: 3,
        client: 3,
        t0_ns,
        stop_at: run_ms * 1_000_000,
        backend: ClientConfig::RedisSingle { addr: "unused:0".into() },
        lock: LockParams { ttl_ms: 1500, acquire_timeout_ms: 100, retry_ms: 10, ..LockParams::default() },
        workload: Workload { key: "ledger".into(), work_ms: WorkMs::fixed(5), think_ms: 5, op_timeout_ms: 500, ..Workload::default() },
        resource,
        resource_params: ResourceParams::default(),
        resource_proof: String::new(),
        egress: None,
        events: dir.join("client-3.jsonl"),
        seed: 1,
        program: None,
    }
}

/// The key of the tests' resource.
fn test_key() -> RunKey {
    RunKey::from_hex(&"5a".repeat(32)).unwrap()
}

async fn start_resource(dir: &std::path::Path) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (log, refused) = (dir.join("resource.jsonl"), dir.join("refused.jsonl"));
    let clock = crate::clock::RunClock::start_now();
    tokio::spawn(async move { serve_on(listener, ResourceMode::Unfenced, test_key(), Logs { log: &log, refused: &refused }, clock).await });
    addr
}

/// Process 3's connection to the tests' resource.
fn resource_client(addr: SocketAddr, timeout_ms: u64) -> ResourceClient {
    ResourceClient::new(addr, Duration::from_millis(timeout_ms), test_key().proof(3))
}

fn events(path: &std::path::Path) -> Vec<Event> {
    checker::read_history_file(path).unwrap().events
}

/// (type, f) of each line, for comparing with the expected shape of a round.
fn shape(events: &[Event]) -> Vec<String> {
    events.iter().map(|e| format!("{:?} {}", e.kind, e.f).to_lowercase()).collect()
}

#[tokio::test]
async fn a_round_is_acquire_read_write_release_with_values_tokens_and_times() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start_resource(dir.path()).await;
    let cfg = config(dir.path(), addr, 150);
    let lock = Box::new(ScriptedLock::default());
    run_with(&cfg, lock, Box::new(resource_client(addr, 500))).await.unwrap();
    let evs = events(&cfg.events);
    assert!(evs.len() >= 16, "at least two rounds in 150 ms: {}", evs.len());
    let round = ["invoke acquire", "ok acquire", "invoke read", "ok read", "invoke write", "ok write", "invoke release", "ok release"];
    for (i, chunk) in shape(&evs).chunks(8).filter(|c| c.len() == 8).enumerate() {
        assert_eq!(chunk, round, "round {i}");
    }
    for (i, e) in evs.iter().enumerate() {
        assert_eq!(e.index, i as u64, "indices count up from 0");
        assert_eq!(e.process, Process::Client(3));
        assert_eq!(e.key.as_deref(), Some("ledger"));
    }
    assert!(evs.windows(2).all(|w| w[0].time <= w[1].time), "times never go back");
    assert_eq!(evs[1].token, Some(9));
    assert_eq!(evs[1].validity_ms, Some(1500));
    // Round n reads n-1 and writes n: the worker is alone on the counter.
    let reads: Vec<_> = evs.iter().filter(|e| e.f == "read" && e.kind == EventType::Ok).map(|e| e.value.clone()).collect();
    let writes: Vec<_> = evs.iter().filter(|e| e.f == "write" && e.kind == EventType::Ok).map(|e| e.value.clone()).collect();
    for (i, (r, w)) in reads.iter().zip(&writes).enumerate() {
        assert_eq!((r.as_i64(), w.as_i64()), (Some(i as i64), Some(i as i64 + 1)));
    }
    assert!(evs.iter().filter(|e| e.f == "write").all(|e| e.token == Some(9)));
}

#[tokio::test]
async fn refusals_are_fail_and_unknown_outcomes_are_info() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start_resource(dir.path()).await;
    let cfg = config(dir.path(), addr, 100);
    let lock = Box::new(ScriptedLock {
        acquires: VecDeque::from([Err(LockError::Refused("taken".into())), Ok(grant(None))]),
        releases: VecDeque::from([Err(LockError::Unknown("timed out".into()))]),
        ..ScriptedLock::default()
    });
    run_with(&cfg, lock, Box::new(resource_client(addr, 500))).await.unwrap();
    let evs = events(&cfg.events);
    let first_two_rounds: Vec<_> = shape(&evs).into_iter().take(10).collect();
    assert_eq!(
        first_two_rounds,
        [
            "invoke acquire",
            "fail acquire",
            "invoke acquire",
            "ok acquire",
            "invoke read",
            "ok read",
            "invoke write",
            "ok write",
            "invoke release",
            "info release"
        ]
    );
    assert_eq!(evs[1].error.as_deref(), Some("taken"));
    assert_eq!(evs[9].error.as_deref(), Some("timed out"));
    assert!(evs[2..10].iter().all(|e| e.token.is_none()), "a grant without a token records none");
}

#[tokio::test]
async fn an_unreachable_resource_makes_the_read_info_and_skips_the_write() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: bind, note it, drop the listener; on an address no other test
    // binds, so that nobody takes the port in between.
    let addr = std::net::TcpListener::bind("127.0.0.3:0").unwrap().local_addr().unwrap();
    let cfg = config(dir.path(), addr, 1);
    let lock = Box::new(ScriptedLock::default());
    run_with(&cfg, lock, Box::new(resource_client(addr, 200))).await.unwrap();
    let evs = events(&cfg.events);
    assert_eq!(shape(&evs), ["invoke acquire", "ok acquire", "invoke read", "info read", "invoke release", "ok release"]);
    assert!(evs[3].error.is_some());
}

/// A lock whose session is always reported lost (an etcd lease that expired while paused).
struct LostSession;

#[async_trait::async_trait]
impl LockClient for LostSession {
    async fn acquire(&mut self, _key: &str, _timeout: Duration) -> Result<Grant, LockError> {
        Ok(grant(Some(4)))
    }
    async fn release(&mut self, _key: &str, _grant: &Grant) -> Result<(), LockError> {
        Ok(())
    }
    async fn session_lost(&mut self) -> Result<bool, LockError> {
        Ok(true)
    }
}

#[tokio::test]
async fn a_lost_session_skips_the_write_only_when_the_worker_honours_it() {
    for honour in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let addr = start_resource(dir.path()).await;
        let mut cfg = config(dir.path(), addr, 1);
        cfg.workload.honour_session_loss = honour;
        run_with(&cfg, Box::new(LostSession), Box::new(resource_client(addr, 500))).await.unwrap();
        let evs = events(&cfg.events);
        let written = if honour { "fail write" } else { "ok write" };
        assert_eq!(
            shape(&evs),
            ["invoke acquire", "ok acquire", "invoke read", "ok read", "invoke write", written, "invoke release", "ok release"]
        );
        let resource_writes = events(&dir.path().join("resource.jsonl")).iter().filter(|e| e.f == "write").count();
        if honour {
            assert_eq!(evs[5].error.as_deref(), Some("session lost; write not sent"));
            assert_eq!((evs[5].token, evs[5].value.as_i64()), (Some(4), Some(1)));
            assert_eq!(resource_writes, 0, "the write never reached the resource");
        } else {
            assert_eq!(resource_writes, 1);
        }
    }
}

#[tokio::test]
async fn check_before_write_records_the_validity_left_and_skips_the_write_when_none_is() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start_resource(dir.path()).await;
    let mut cfg = config(dir.path(), addr, 60);
    cfg.workload.check_before_write = true;
    cfg.workload.check_to_write_ms = 1;
    let expired = Grant { token: Some(4), validity: Duration::ZERO, secret: "s".into() };
    let lock = Box::new(ScriptedLock { acquires: VecDeque::from([Ok(expired)]), ..ScriptedLock::default() });
    run_with(&cfg, lock, Box::new(resource_client(addr, 500))).await.unwrap();
    let evs = events(&cfg.events);
    let shapes = shape(&evs);
    // Round 1: the grant has no validity left, so the check fails and nothing is written.
    assert_eq!(
        shapes[..8],
        ["invoke acquire", "ok acquire", "invoke read", "ok read", "invoke check", "fail check", "invoke release", "ok release"]
    );
    // Round 2: validity left (1500 ms minus a few), then the write.
    assert_eq!(shapes[10..14], ["invoke read", "ok read", "invoke check", "ok check"]);
    assert_eq!(shapes[14], "invoke write");
    let left = evs[13].validity_ms.unwrap();
    assert!((1000..1500).contains(&left), "validity left {left}");
}

#[tokio::test]
async fn renewals_run_during_the_work_and_a_failed_one_stops_the_write_only_when_honoured() {
    for honour in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let addr = start_resource(dir.path()).await;
        let mut cfg = config(dir.path(), addr, 1);
        cfg.lock.renew_ms = 20;
        cfg.workload.work_ms = WorkMs::fixed(70);
        cfg.workload.honour_session_loss = honour;
        let lock = Box::new(ScriptedLock {
            renews: VecDeque::from([Ok(Duration::from_millis(1400)), Err(LockError::Refused("not ours".into()))]),
            ..ScriptedLock::default()
        });
        run_with(&cfg, lock, Box::new(resource_client(addr, 500))).await.unwrap();
        let evs = events(&cfg.events);
        let written = if honour { "fail write" } else { "ok write" };
        assert_eq!(
            shape(&evs),
            [
                "invoke acquire",
                "ok acquire",
                "invoke read",
                "ok read",
                "invoke renew",
                "ok renew",
                "invoke renew",
                "fail renew",
                "invoke renew",
                "ok renew",
                "invoke write",
                written,
                "invoke release",
                "ok release"
            ],
            "honour {honour}"
        );
        assert_eq!((evs[5].validity_ms, evs[5].token), (Some(1400), Some(9)));
        assert_eq!(evs[7].error.as_deref(), Some("not ours"));
        // Renewals are spread over the work time, renew_ms apart.
        let gap_ms = (evs[6].time - evs[4].time) / 1_000_000;
        assert!((15..60).contains(&gap_ms), "renewals {gap_ms} ms apart");
    }
}

/// A client whose program exits while releasing.
struct ExitsOnRelease;

#[async_trait::async_trait]
impl LockClient for ExitsOnRelease {
    async fn acquire(&mut self, _key: &str, _timeout: Duration) -> Result<Grant, LockError> {
        Ok(grant(None))
    }
    async fn release(&mut self, _key: &str, _grant: &Grant) -> Result<(), LockError> {
        Err(LockError::Gone(crate::lock_backends::ClientGone::Exited("client program `x` exited".into())))
    }
}

#[tokio::test]
async fn a_client_that_is_gone_leaves_its_operation_info_and_stops_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start_resource(dir.path()).await;
    let cfg = config(dir.path(), addr, 5000);
    let err = run_with(&cfg, Box::new(ExitsOnRelease), Box::new(resource_client(addr, 500))).await.unwrap_err();
    assert!(matches!(err.downcast_ref(), Some(crate::lock_backends::ClientGone::Exited(_))), "{err:#}");
    let evs = events(&cfg.events);
    assert_eq!(
        shape(&evs),
        ["invoke acquire", "ok acquire", "invoke read", "ok read", "invoke write", "ok write", "invoke release", "info release"]
    );
}

/// A client whose program turns out unusable when asked whether its session is lost.
struct UnusableOnSessionCheck;

#[async_trait::async_trait]
impl LockClient for UnusableOnSessionCheck {
    async fn acquire(&mut self, _key: &str, _timeout: Duration) -> Result<Grant, LockError> {
        // Already run out: the check must still ask, and stop on the answer.
        Ok(Grant { token: None, validity: Duration::ZERO, secret: String::new() })
    }
    async fn release(&mut self, _key: &str, _grant: &Grant) -> Result<(), LockError> {
        Ok(())
    }
    async fn session_lost(&mut self) -> Result<bool, LockError> {
        Err(LockError::Gone(crate::lock_backends::ClientGone::Unusable("client program `x` answered `?`".into())))
    }
}

#[tokio::test]
async fn a_client_gone_at_the_check_before_the_write_stops_the_worker_with_one_completion() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start_resource(dir.path()).await;
    let mut cfg = config(dir.path(), addr, 5000);
    cfg.workload.check_before_write = true;
    let err = run_with(&cfg, Box::new(UnusableOnSessionCheck), Box::new(resource_client(addr, 500))).await.unwrap_err();
    assert!(matches!(err.downcast_ref(), Some(crate::lock_backends::ClientGone::Unusable(_))), "{err:#}");
    assert_eq!(shape(&events(&cfg.events)), ["invoke acquire", "ok acquire", "invoke read", "ok read", "invoke check", "info check"]);
}
