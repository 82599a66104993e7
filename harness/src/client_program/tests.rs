//! The protocol's cases against real programs: a small shell script (so the tests need
//! nothing beyond a POSIX shell) that answers the n-th request with its n-th argument: a line
//! in which `ID` becomes the request's id, `exit:N` (exit with N), `partial:TEXT` (write TEXT
//! with no newline and exit), `sleep:S:LINE` (answer LINE after S seconds), `deaf:LINE` (answer
//! LINE, then never read again), or, past the last argument, `{"id":ID,"type":"<request type>_ok"}`.

use super::*;

const SCRIPTED: &str = r#"
n=0
while IFS= read -r request; do
  n=$((n + 1))
  id=$(printf '%s\n' "$request" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  kind=$(printf '%s\n' "$request" | sed -n 's/.*"type":"\([a-z_]*\)".*/\1/p')
  if [ "$n" -le "$#" ]; then eval "step=\${$n}"; else step="{\"id\":ID,\"type\":\"${kind}_ok\"}"; fi
  case "$step" in
    exit:*) exit "${step#exit:}" ;;
    partial:*) printf '%s' "${step#partial:}"; exit 9 ;;
    deaf:*) printf '%s\n' "${step#deaf:}" | sed "s/ID/$id/g"; exec sleep 60 ;;
    sleep:*) rest=${step#sleep:}; sleep "${rest%%:*}"; step=${rest#*:} ;;
  esac
  printf '%s\n' "$step" | sed "s/ID/$id/g"
done
"#;

const INIT_OK: &str = r#"{"id":ID,"type":"init_ok"}"#;

/// The script's arguments: answers as JSON (with `ID` for the id) or the special steps.
fn steps(answers: &[&str]) -> Vec<String> {
    answers.iter().map(|a| a.to_string()).collect()
}

fn spec(script: Vec<String>, needs: Vec<Capability>) -> ProgramSpec {
    let mut command = vec!["sh".into(), "-c".into(), SCRIPTED.into(), "scripted".into()];
    command.extend(script);
    ProgramSpec {
        command,
        dir: std::env::temp_dir(),
        as_nobody: false,
        client: "client-1".into(),
        backend: "redis-single".into(),
        config: serde_json::json!({"host": "127.0.0.1", "port": 6379}),
        lock: serde_json::json!({"ttl_ms": 2000}),
        needs,
    }
}

async fn start(script: Vec<String>, needs: Vec<Capability>) -> Result<ProgramClient, ClientGone> {
    ProgramClient::start(&spec(script, needs), 1, Duration::from_millis(1500), Duration::from_millis(2000), INIT_WAIT).await
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
    let script = steps(&[
        r#"{"id":ID,"type":"init_ok","capabilities":["renew"]}"#,
        r#"{"id":ID,"type":"acquire_ok","token":34,"validity_ms":1999}"#,
        r#"{"id":ID,"type":"renew_ok","validity_ms":2000}"#,
        r#"{"id":ID,"type":"release_ok"}"#,
        r#"{"id":ID,"type":"acquire_ok","token":null}"#,
        r#"{"id":ID,"type":"fail","error":"held by another"}"#,
        r#"{"id":ID,"type":"info","error":"connection reset"}"#,
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
    let mut c = start(steps(&[INIT_OK, "granted!"]), vec![]).await.unwrap();
    let why = unusable(c.acquire("ledger", Duration::from_secs(1)).await);
    assert!(why.starts_with("client program `sh -c ") && why.contains("answered `granted!`, which is not JSON"), "{why}");
}

#[tokio::test]
async fn an_unknown_type_is_unusable() {
    let mut c = start(steps(&[INIT_OK, r#"{"id":ID,"type":"granted"}"#]), vec![]).await.unwrap();
    assert!(unusable(c.acquire("ledger", Duration::from_secs(1)).await).contains("unknown `type` \"granted\""));
}

#[tokio::test]
async fn an_answer_to_an_id_not_asked_is_unusable() {
    let mut c = start(steps(&[INIT_OK, r#"{"id":7,"type":"acquire_ok","token":1}"#]), vec![]).await.unwrap();
    assert!(unusable(c.acquire("ledger", Duration::from_secs(1)).await).contains("answered id 7, but request 1 was the one open"));
}

#[tokio::test]
async fn an_answer_of_the_wrong_type_is_unusable() {
    let mut c = start(steps(&[INIT_OK, r#"{"id":ID,"type":"release_ok"}"#]), vec![]).await.unwrap();
    assert!(unusable(c.acquire("ledger", Duration::from_secs(1)).await).contains("answered request 1 (acquire) with `release_ok`"));
}

#[tokio::test]
async fn a_missing_capability_is_unusable_at_init_naming_what_needs_it() {
    let Err(ClientGone::Unusable(why)) =
        start(steps(&[r#"{"id":ID,"type":"init_ok","capabilities":["session"]}"#]), vec![Capability::Renew]).await
    else {
        panic!("expected Unusable")
    };
    assert!(why.contains("does not offer `renew`") && why.contains("lock.renew_ms needs"), "{why}");
}

#[tokio::test]
async fn a_program_that_cannot_start_is_unusable_naming_the_command() {
    let mut s = spec(vec![], vec![]);
    s.command = vec!["clients/no-such-program".into(), "--flag".into()];
    let Err(ClientGone::Unusable(why)) = ProgramClient::start(&s, 1, Duration::from_secs(1), Duration::from_secs(2), INIT_WAIT).await
    else {
        panic!("expected Unusable")
    };
    assert!(why.starts_with("cannot start client program `clients/no-such-program --flag`"), "{why}");
}

#[tokio::test]
async fn a_program_that_exits_leaves_its_open_operation_to_a_new_process() {
    let mut c = start(steps(&[INIT_OK, "exit:3"]), vec![]).await.unwrap();
    match c.acquire("ledger", Duration::from_secs(1)).await {
        Err(LockError::Gone(ClientGone::Exited(why))) => assert!(why.contains("request 1 open") && why.contains("exit status: 3"), "{why}"),
        other => panic!("expected Exited, got {other:?}"),
    }
    // Asked again: still gone, without writing to it.
    assert!(matches!(c.release("ledger", &grant()).await, Err(LockError::Gone(ClientGone::Exited(_)))));
}

#[tokio::test]
async fn no_answer_in_time_is_unknown_and_the_late_answer_is_skipped() {
    let script = steps(&[INIT_OK, r#"sleep:2.5:{"id":ID,"type":"acquire_ok","token":1}"#, r#"{"id":ID,"type":"release_ok"}"#]);
    let mut c = start(script, vec![]).await.unwrap();
    // The acquire may take its timeout (0 here) plus op_timeout (1.5 s).
    assert!(matches!(c.acquire("ledger", Duration::ZERO).await, Err(LockError::Unknown(e)) if e.contains("no answer to request 1")));
    c.release("ledger", &grant()).await.unwrap();
}

#[tokio::test]
async fn a_program_that_dies_mid_answer_exited_rather_than_broke_the_protocol() {
    let mut c = start(steps(&[INIT_OK, r#"partial:{"id":1,"ty"#]), vec![]).await.unwrap();
    match c.acquire("ledger", Duration::from_secs(1)).await {
        Err(LockError::Gone(ClientGone::Exited(why))) => assert!(why.contains("in the middle of a line"), "{why}"),
        other => panic!("expected Exited, got {other:?}"),
    }
}

#[tokio::test]
async fn transactional_is_used_only_where_the_backend_needs_it() {
    let offers = r#"{"id":ID,"type":"init_ok","capabilities":["transactional"]}"#;
    let mut elsewhere = start(steps(&[offers]), vec![]).await.unwrap();
    assert!(elsewhere.transactional_resource().is_none());
    let mut xact = start(steps(&[offers]), vec![Capability::Transactional]).await.unwrap();
    assert!(xact.transactional_resource().is_some());
}

#[tokio::test]
async fn a_program_that_stops_reading_its_input_is_unusable() {
    let mut c = start(steps(&[INIT_OK, r#"deaf:{"id":ID,"type":"acquire_ok","token":1}"#]), vec![]).await.unwrap();
    c.acquire("ledger", Duration::ZERO).await.unwrap();
    let why = unusable(c.release("ledger", &grant()).await);
    assert!(why.contains("stopped reading its input: request 2 was still unread"), "{why}");
}

#[tokio::test]
async fn a_program_busy_with_a_request_given_up_is_slow_not_deaf() {
    // Request 1 is given up while the program sleeps in it; request 2 waits unread behind it.
    let script = steps(&[INIT_OK, r#"sleep:3.5:{"id":ID,"type":"acquire_ok","token":1}"#, r#"{"id":ID,"type":"release_ok"}"#]);
    let mut c = start(script, vec![]).await.unwrap();
    assert!(matches!(c.acquire("ledger", Duration::ZERO).await, Err(LockError::Unknown(_))));
    match c.release("ledger", &grant()).await {
        Ok(()) | Err(LockError::Unknown(_)) => {}
        other => panic!("a busy program is not unusable: {other:?}"),
    }
}

#[tokio::test]
async fn init_waits_no_longer_than_it_is_given() {
    let s = spec(steps(&[r#"sleep:5:{"id":ID,"type":"init_ok"}"#]), vec![]);
    let started = Instant::now();
    let Err(ClientGone::Unusable(why)) =
        ProgramClient::start(&s, 1, Duration::from_secs(1), Duration::from_secs(2), Duration::from_millis(700)).await
    else {
        panic!("expected Unusable")
    };
    assert!(why.contains("init failed: no answer to request 0 within 700 ms"), "{why}");
    assert!(started.elapsed() < Duration::from_secs(4), "it waited for the program's 5 s");
}
