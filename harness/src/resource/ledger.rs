//! The ledger's rules, free of I/O so they can be tested directly.

use super::protocol::{Request, Response};
use crate::resource::ResourceMode;
use checker::{Event, EventType, Process};
use std::collections::HashMap;

pub struct Ledger {
    mode: ResourceMode,
    counters: HashMap<String, i64>,
    /// Highest token seen on an accepted request so far, per key (fenced mode). Reads count:
    /// a storage that fences must remember the newest holder from its first request, or a
    /// stale holder's write that lands between the new holder's read and write gets in.
    highest_token: HashMap<String, u64>,
}

impl Ledger {
    pub fn new(mode: ResourceMode) -> Self {
        Ledger { mode, counters: HashMap::new(), highest_token: HashMap::new() }
    }

    /// Applies one request and returns the reply plus the record for the resource's log.
    pub fn apply(&mut self, req: &Request, time: u64) -> (Response, Event) {
        match req {
            Request::Read { key, client, token } => {
                if let Some(reason) = self.rejection(key, *token) {
                    let resp = Response { ok: false, value: None, error: Some(reason.clone()) };
                    return (resp, record(time, EventType::Fail, "read", key, *client, *token, 0, Some(reason)));
                }
                self.raise(key, *token);
                let value = *self.counters.get(key).unwrap_or(&0);
                let resp = Response { ok: true, value: Some(value), error: None };
                (resp, record(time, EventType::Ok, "read", key, *client, *token, value, None))
            }
            Request::Write { key, client, token, value } => {
                if let Some(reason) = self.rejection(key, *token) {
                    let resp = Response { ok: false, value: None, error: Some(reason.clone()) };
                    let ev = record(time, EventType::Fail, "write", key, *client, *token, *value, Some(reason));
                    return (resp, ev);
                }
                self.counters.insert(key.clone(), *value);
                self.raise(key, *token);
                let resp = Response { ok: true, value: Some(*value), error: None };
                (resp, record(time, EventType::Ok, "write", key, *client, *token, *value, None))
            }
        }
    }

    fn raise(&mut self, key: &str, token: Option<u64>) {
        if let Some(t) = token {
            let h = self.highest_token.entry(key.to_string()).or_insert(0);
            *h = (*h).max(t);
        }
    }

    fn rejection(&self, key: &str, token: Option<u64>) -> Option<String> {
        if self.mode == ResourceMode::Unfenced {
            return None;
        }
        let highest = self.highest_token.get(key).copied();
        match (token, highest) {
            (None, _) => Some("fenced resource: request carries no token".into()),
            (Some(t), Some(h)) if t < h => Some(format!("stale token {t} < highest seen {h}")),
            _ => None,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn record(time: u64, kind: EventType, f: &str, key: &str, client: u64, token: Option<u64>, value: i64, error: Option<String>) -> Event {
    let mut ev = Event::new(time, Process::Named(Process::RESOURCE.into()), kind, f);
    ev.key = Some(key.to_string());
    ev.client = Some(client);
    ev.token = token;
    ev.value = value.into();
    ev.error = error;
    ev
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(client: u64, token: Option<u64>, value: i64) -> Request {
        Request::Write { key: "k".into(), client, token, value }
    }
    fn read_with(client: u64, token: u64) -> Request {
        Request::Read { key: "k".into(), client, token: Some(token) }
    }

    /// (what, mode, requests, expected ok flags, expected final read)
    type Case = (&'static str, ResourceMode, Vec<Request>, Vec<bool>, i64);

    #[test]
    fn fenced_and_unfenced_rules() {
        use ResourceMode::*;
        let cases: &[Case] = &[
            ("unfenced accepts a stale token", Unfenced, vec![write(1, Some(5), 1), write(2, Some(3), 2)], vec![true, true], 2),
            ("unfenced accepts no token", Unfenced, vec![write(1, None, 7)], vec![true], 7),
            ("fenced rejects a lower token", Fenced, vec![write(1, Some(5), 1), write(2, Some(3), 2)], vec![true, false], 1),
            ("fenced accepts an equal token", Fenced, vec![write(1, Some(5), 1), write(1, Some(5), 2)], vec![true, true], 2),
            (
                "fenced accepts a higher token",
                Fenced,
                vec![write(1, Some(5), 1), write(2, Some(9), 2), write(1, Some(5), 3)],
                vec![true, true, false],
                2,
            ),
            ("fenced rejects no token", Fenced, vec![write(1, None, 1)], vec![false], 0),
            (
                "fenced: a newer holder's read fences out the older holder's write",
                Fenced,
                vec![write(1, Some(5), 1), read_with(2, 9), write(1, Some(5), 2)],
                vec![true, true, false],
                1,
            ),
            ("fenced rejects a stale read", Fenced, vec![write(2, Some(9), 1), read_with(1, 5)], vec![true, false], 1),
            (
                "fenced keys are independent",
                Fenced,
                vec![write(1, Some(9), 1), Request::Write { key: "other".into(), client: 2, token: Some(1), value: 1 }],
                vec![true, true],
                1,
            ),
        ];
        for (what, mode, reqs, oks, final_value) in cases {
            let mut ledger = Ledger::new(*mode);
            let got: Vec<bool> = reqs.iter().map(|r| ledger.apply(r, 0).0.ok).collect();
            assert_eq!(&got, oks, "{what}");
            assert_eq!(ledger.counters.get("k").copied().unwrap_or(0), *final_value, "{what}");
        }
    }

    #[test]
    fn every_request_is_logged_with_client_token_and_outcome() {
        let mut ledger = Ledger::new(ResourceMode::Fenced);
        ledger.apply(&write(1, Some(5), 1), 10);
        let (_, ev) = ledger.apply(&write(2, Some(3), 2), 20);
        assert_eq!(ev.kind, EventType::Fail);
        assert_eq!((ev.client, ev.token, ev.time), (Some(2), Some(3), 20));
        assert_eq!(ev.value, serde_json::json!(2));
        assert!(ev.error.unwrap().contains("stale token 3 < highest seen 5"));
        let line = serde_json::to_string(&ledger.apply(&read_with(1, 5), 30).1).unwrap();
        assert_eq!(line, r#"{"index":0,"time":30,"process":"resource","type":"ok","f":"read","key":"k","value":1,"token":5,"client":1}"#);
    }
}
