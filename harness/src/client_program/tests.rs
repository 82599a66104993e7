//! The protocol's cases against real programs: a small Python script that answers each request
//! with the next entry of its script (an object: that answer with the request's id unless it
//! names one; a string: that raw line; {"exit": N}: exit; {"sleep_ms": N, ...}: answer late).

use super::*;

const SCRIPTED: &str = r#"
import json, sys, time
script = json.loads(sys.argv[1])
for n, line in enumerate(sys.stdin):
    req = json.loads(line)
    step = script[n] if n < len(script) else {"type": req["type"] + "_ok"}
    if isinstance(step, str):
        print(step, flush=True); continue
    if "exit" in step:
        sys.exit(step["exit"])
    time.sleep(step.pop("sleep_ms", 0) / 1000)
    print(json.dumps({"id": req["id"], **step}), flush=True)
"#;

fn spec(script: serde_json::Value, needs: Vec<Capability>) -> ProgramSpec {
    ProgramSpec {
        command: vec!["python3".into(), "-c".into(), SCRIPTED.into(), script.to_string()],
        dir: std::env::temp_dir(),
        as_nobody: false,
        client: "client-1".into(),
        backend: "redis-single".into(),
        config: serde_json::json!({"host": "127.0.0.1", "port": 6379}),
        lock: serde_json::json!({"ttl_ms": 2000}),
        needs,
    }
}

async fn start(script: serde_json::Value, needs: Vec<Capability>) -> Result<ProgramClient, ClientGone> {
    ProgramClient::start(&spec(script, needs), 1, Duration::from_millis(1500), Duration::from_millis(2000)).await
}

fn grant() -> Grant {
    Grant { token: None, validity: Duration::ZERO, secret: String::new() }
}

fn unusable(result: Result<impl std::fmt::Debug, LockError>) -> String {
    match result {
        Err(LockError::Gone(ClientGone::Unusable(why))) => why,
        other => panic!("expected Unusable, got {other:?}"),
    }
}

#[tokio::test]
async fn answers_become_grants_refusals_and_unknowns() {
    let script = serde_json::json!([
        {"type": "init_ok", "capabilities": ["renew"]},
        {"type": "acquire_ok", "token": 34, "validity_ms": 1999},
        {"type": "renew_ok", "validity_ms": 2000},
        {"type": "release_ok"},
        {"type": "acquire_ok", "token": null},
        {"type": "fail", "error": "held by another"},
        {"type": "info", "error": "connection reset"},
    ]);
    let mut c = start(script, vec![Capability::Renew]).await.unwrap();
    let g = c.acquire("ledger", Duration::from_secs(1)).await.unwrap();
    assert_eq!((g.token, g.validity), (Some(34), Duration::from_millis(1999)));
    assert_eq!(c.renew("ledger", &g).await.unwrap(), Duration::from_millis(2000));
    c.release("ledger", &g).await.unwrap();
    // No validity given: the lock's TTL.
    let g = c.acquire("ledger", Duration::from_secs(1)).await.unwrap();
    assert_eq!((g.token, g.validity), (None, Duration::from_millis(2000)));
    assert!(matches!(c.release("ledger", &g).await, Err(LockError::Refused(e)) if e == "held by another"));
    assert!(matches!(c.acquire("ledger", Duration::from_secs(1)).await, Err(LockError::Unknown(e)) if e == "connection reset"));
    // Without `session` the program is never asked; without `transactional` no resource.
    assert!(!c.session_lost().await.unwrap());
    assert!(c.transactional_resource().is_none());
}

#[tokio::test]
async fn a_line_that_is_not_json_is_unusable_naming_the_command_and_the_line() {
    let mut c = start(serde_json::json!([{"type": "init_ok"}, "granted!"]), vec![]).await.unwrap();
    let why = unusable(c.acquire("ledger", Duration::from_secs(1)).await);
    assert!(why.starts_with("client program `python3 -c ") && why.contains("answered `granted!`, which is not JSON"), "{why}");
}

#[tokio::test]
async fn an_unknown_type_is_unusable() {
    let mut c = start(serde_json::json!([{"type": "init_ok"}, {"type": "granted"}]), vec![]).await.unwrap();
    assert!(unusable(c.acquire("ledger", Duration::from_secs(1)).await).contains("unknown `type` \"granted\""));
}

#[tokio::test]
async fn an_answer_to_an_id_not_asked_is_unusable() {
    let mut c = start(serde_json::json!([{"type": "init_ok"}, {"id": 7, "type": "acquire_ok", "token": 1}]), vec![]).await.unwrap();
    assert!(unusable(c.acquire("ledger", Duration::from_secs(1)).await).contains("answered id 7, but request 1 was the one open"));
}

#[tokio::test]
async fn an_answer_of_the_wrong_type_is_unusable() {
    let mut c = start(serde_json::json!([{"type": "init_ok"}, {"type": "release_ok"}]), vec![]).await.unwrap();
    assert!(unusable(c.acquire("ledger", Duration::from_secs(1)).await).contains("answered request 1 (acquire) with `release_ok`"));
}

#[tokio::test]
async fn a_missing_capability_is_unusable_at_init_naming_what_needs_it() {
    let Err(ClientGone::Unusable(why)) =
        start(serde_json::json!([{"type": "init_ok", "capabilities": ["session"]}]), vec![Capability::Renew]).await
    else {
        panic!("expected Unusable")
    };
    assert!(why.contains("does not offer `renew`") && why.contains("lock.renew_ms needs"), "{why}");
}

#[tokio::test]
async fn a_program_that_cannot_start_is_unusable_naming_the_command() {
    let mut s = spec(serde_json::json!([]), vec![]);
    s.command = vec!["clients/no-such-program".into(), "--flag".into()];
    let Err(ClientGone::Unusable(why)) = ProgramClient::start(&s, 1, Duration::from_secs(1), Duration::from_secs(2)).await else {
        panic!("expected Unusable")
    };
    assert!(why.starts_with("cannot start client program `clients/no-such-program --flag`"), "{why}");
}

#[tokio::test]
async fn a_program_that_exits_leaves_its_open_operation_to_a_new_process() {
    let mut c = start(serde_json::json!([{"type": "init_ok"}, {"exit": 3}]), vec![]).await.unwrap();
    match c.acquire("ledger", Duration::from_secs(1)).await {
        Err(LockError::Gone(ClientGone::Exited(why))) => assert!(why.contains("request 1 open") && why.contains("exit status: 3"), "{why}"),
        other => panic!("expected Exited, got {other:?}"),
    }
    // Asked again: still gone, without writing to it.
    assert!(matches!(c.release("ledger", &grant()).await, Err(LockError::Gone(ClientGone::Exited(_)))));
}

#[tokio::test]
async fn no_answer_in_time_is_unknown_and_the_late_answer_is_skipped() {
    let script = serde_json::json!([{"type": "init_ok"}, {"type": "acquire_ok", "token": 1, "sleep_ms": 2500}, {"type": "release_ok"}]);
    let mut c = start(script, vec![]).await.unwrap();
    // The acquire may take its timeout (0 here) plus op_timeout (1.5 s).
    assert!(matches!(c.acquire("ledger", Duration::ZERO).await, Err(LockError::Unknown(e)) if e.contains("no answer to request 1")));
    c.release("ledger", &grant()).await.unwrap();
}
