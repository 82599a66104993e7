//! Wire format: one JSON object per line each way over TCP. Each request carries its sender's
//! proof (`proof.rs`) beside the request's own fields.

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    Read { key: String, client: u64, token: Option<u64> },
    Write { key: String, client: u64, token: Option<u64>, value: i64 },
}

impl Request {
    /// The process the request says it comes from.
    pub fn client(&self) -> u64 {
        match self {
            Request::Read { client, .. } | Request::Write { client, .. } => *client,
        }
    }
}

/// A request as sent: the request and the proof that its `client` sent it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Signed {
    #[serde(flatten)]
    pub request: Request,
    pub proof: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Response {
    pub ok: bool,
    /// The counter's value (read) or the value now stored (accepted write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
