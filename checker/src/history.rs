//! History events: Jepsen's op shape, one JSON object per line (the README's "What a run leaves in the store").
//!
//! `{"index":41,"time":1234567,"process":3,"type":"invoke","f":"acquire","key":"ledger","value":null}`
//!
//! Clients are numbered processes; the nemesis and the resource are named processes.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Who did the operation: a client (numbered from 1) or a named party ("nemesis", "resource").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(untagged)]
pub enum Process {
    Client(u64),
    Named(String),
}

impl Process {
    pub const NEMESIS: &'static str = "nemesis";
    pub const RESOURCE: &'static str = "resource";
    /// A client's transport: each time it sends an operation again (`resend`, with `client`
    /// and `op`), a single event, so the client's own operation stays one invoke and one
    /// completion however often it is sent.
    pub const DELIVERY: &'static str = "delivery";

    pub fn is_named(&self, name: &str) -> bool {
        matches!(self, Process::Named(n) if n == name)
    }
    pub fn client(&self) -> Option<u64> {
        match self {
            Process::Client(c) => Some(*c),
            Process::Named(_) => None,
        }
    }
}

impl fmt::Display for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Process::Client(c) => write!(f, "{c}"),
            Process::Named(n) => f.write_str(n),
        }
    }
}

/// invoke | ok | fail | info (info = outcome unknown, e.g. a timeout).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum EventType {
    Invoke,
    Ok,
    Fail,
    Info,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Event {
    /// Position in the merged history; reassigned when per-party logs are merged.
    #[serde(default)]
    pub index: u64,
    /// Nanoseconds since the run started (CLOCK_MONOTONIC, shared by all containers on one host).
    pub time: u64,
    pub process: Process,
    #[serde(rename = "type")]
    pub kind: EventType,
    /// acquire, release, renew, read, write for clients; fault names for the nemesis;
    /// read, write for the resource's own records.
    pub f: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default)]
    pub value: serde_json::Value,
    /// Fencing token of the grant (null when the backend has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<u64>,
    /// Node a fault or an operation concerns ("n1", "client-2").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long the client believes its grant is valid, from the acquire's completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity_ms: Option<u64>,
    /// On resource records: the client (process number) that sent the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<u64>,
    /// On nemesis records: the fault's parameters in words ("from n4, n5", "+20s").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The logical operation an event belongs to, on the workloads that name theirs (an
    /// idempotency key, a job's id): the same operation may be delivered, and so appear, more
    /// than once; the exactly-once property counts by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// On nemesis records: the episode (its index in the scenario's `[[nemesis.episode]]`) the
    /// fault belongs to, so a finding can be laid at the episode it happened in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode: Option<u32>,
}

impl Event {
    /// A bare event; callers fill in the optional fields they need.
    pub fn new(time: u64, process: Process, kind: EventType, f: impl Into<String>) -> Self {
        Event {
            index: 0,
            time,
            process,
            kind,
            f: f.into(),
            key: None,
            value: serde_json::Value::Null,
            token: None,
            node: None,
            error: None,
            validity_ms: None,
            client: None,
            detail: None,
            op: None,
            episode: None,
        }
    }
}
