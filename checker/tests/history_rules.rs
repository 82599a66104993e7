//! The history rules (parse.rs, "The history rules"): events are taken in index order whatever
//! their line order, an index names one event, and a client's completion follows its invoke.
//! The nemesis's and the resource's records are single events and stay valid.

use checker::{check, parse_edn, parse_jsonl, CheckOptions, Event, HistoryError, Verdict};

/// One lock round per client, with the resource's records, in history order (indexes 0..).
fn rounds(clients: u64) -> Vec<String> {
    let mut lines = vec![];
    let mut push = |process: String, kind: &str, f: &str, extra: &str| {
        let i = lines.len();
        let time = (i + 1) * 1000;
        lines.push(format!(r#"{{"index":{i},"time":{time},"process":{process},"type":"{kind}","f":"{f}","key":"k"{extra}}}"#));
    };
    push("\"nemesis\"".into(), "info", "pause", r#","node":"n1""#);
    for c in 1..=clients {
        let me = c.to_string();
        push(me.clone(), "invoke", "acquire", "");
        push(me.clone(), "ok", "acquire", &format!(r#","token":{c}"#));
        push("\"resource\"".into(), "ok", "read", &format!(r#","client":{c},"value":{}"#, c - 1));
        push("\"resource\"".into(), "ok", "write", &format!(r#","client":{c},"value":{c},"token":{c}"#));
        push("\"resource\"".into(), "fail", "write", &format!(r#","client":{c},"value":0,"token":0"#));
        push(me.clone(), "invoke", "release", "");
        push(me, "ok", "release", "");
    }
    push("\"nemesis\"".into(), "info", "resume", r#","node":"n1""#);
    lines
}

fn jsonl(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// A fixed shuffle (no randomness in tests): every 7th line from each start.
fn shuffled(lines: &[String]) -> Vec<String> {
    (0..7).flat_map(|start| lines.iter().skip(start).step_by(7).cloned()).collect()
}

fn line_error(result: Result<checker::ParsedHistory, HistoryError>) -> (usize, String) {
    match result {
        Err(HistoryError::Line { line, message, .. }) => (line, message),
        other => panic!("expected a line error, got {other:?}"),
    }
}

#[test]
fn events_are_taken_in_index_order_whatever_their_line_order() {
    let lines = rounds(40);
    let ordered = parse_jsonl(jsonl(&lines)).unwrap();
    let verdict = check(&ordered.events, &CheckOptions::default());
    assert_eq!(verdict.outcome, Verdict::Valid);
    let shuffled_lines = shuffled(&lines);
    assert_ne!(shuffled_lines, lines);
    let from_shuffled = parse_jsonl(jsonl(&shuffled_lines)).unwrap();
    let indexes = |events: &[Event]| events.iter().map(|e| e.index).collect::<Vec<_>>();
    assert_eq!(indexes(&from_shuffled.events), indexes(&ordered.events));
    assert!(from_shuffled.events == ordered.events);
    assert_eq!(check(&from_shuffled.events, &CheckOptions::default()), verdict);
}

#[test]
fn edn_stand_in_times_follow_the_index_order() {
    // Without :time the line number stands in for the time; in index order it must still grow.
    let edn = "{:index 2, :process 1, :type :ok, :f :acquire}\n\
               {:index 0, :process :nemesis, :type :info, :f :start}\n\
               {:index 1, :process 1, :type :invoke, :f :acquire}\n";
    let events = parse_edn(edn).unwrap().events;
    let order: Vec<(u64, u64)> = events.iter().map(|e| (e.index, e.time)).collect();
    assert_eq!(order, [(0, 1), (1, 2), (2, 3)]);
}

#[test]
fn without_indexes_events_are_numbered_in_line_order() {
    let text = r#"{"time":5,"process":1,"type":"invoke","f":"acquire"}
{"time":6,"process":"nemesis","type":"info","f":"pause"}
{"time":7,"process":1,"type":"ok","f":"acquire"}
"#;
    let events = parse_jsonl(text).unwrap().events;
    assert_eq!(events.iter().map(|e| (e.index, e.time)).collect::<Vec<_>>(), [(0, 5), (1, 6), (2, 7)]);
}

#[test]
fn a_repeated_index_is_an_error_naming_its_second_line() {
    let mut lines = rounds(2);
    lines[5] = lines[5].replacen("\"index\":5", "\"index\":2", 1);
    let (line, message) = line_error(parse_jsonl(jsonl(&lines)));
    assert_eq!(line, 6);
    assert!(message.contains("index 2 is also at line 3"), "{message}");
}

#[test]
fn a_client_completion_without_its_invoke_is_an_error_naming_the_line() {
    let mut lines = rounds(2);
    // Client 2's acquire invoke goes: its ok (now line 9 of the file) completes nothing.
    lines.remove(8);
    let (line, message) = line_error(parse_jsonl(jsonl(&lines)));
    assert_eq!(line, 9);
    assert!(message.contains("ok of process 2 (acquire) without an open invoke"), "{message}");

    let edn = "{:index 0, :process 0, :type :invoke, :f :read, :value nil}\n\
               {:index 1, :process 0, :type :ok, :f :read, :value 1}\n\
               \n\
               {:index 2, :process 1, :type :info, :f :write, :value 2}\n";
    let (line, message) = line_error(parse_edn(edn));
    assert_eq!(line, 4);
    assert!(message.contains("info of process 1 (write) without an open invoke"), "{message}");
}

#[test]
fn named_processes_have_single_events() {
    // The nemesis's info and the resource's ok/fail records have no invoke, and need none;
    // Jepsen's nemesis also writes invoke + info pairs.
    let edn = "{:index 0, :process :nemesis, :type :info, :f :start-partition, :value :majority}\n\
               {:index 1, :process :nemesis, :type :invoke, :f :stop-partition}\n\
               {:index 2, :process :nemesis, :type :info, :f :stop-partition}\n\
               {:index 3, :process :resource, :type :fail, :f :write, :client 3}\n";
    assert_eq!(parse_edn(edn).unwrap().events.len(), 4);
}

#[test]
fn the_events_of_one_file_as_written_are_not_a_history() {
    // A party's own event log (what the run's merge reads) keeps its lines as written.
    let dir = std::env::temp_dir().join(format!("checker-rules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("client-1.jsonl");
    std::fs::write(&path, "{\"index\":1,\"time\":9,\"process\":1,\"type\":\"ok\",\"f\":\"acquire\"}\n{\"index\":0,\"time\":3,\"process\":1,\"type\":\"ok\",\"f\":\"release\"}\n").unwrap();
    let as_written = checker::read_history_file(&path);
    let as_history = checker::parse_jsonl(std::fs::read(&path).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(as_written.unwrap().events.iter().map(|e| e.index).collect::<Vec<_>>(), [1, 0]);
    assert!(as_history.is_err());
}
