//! Wire format: one JSON object per line each way over TCP.

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    Read { key: String, client: u64, token: Option<u64> },
    Write { key: String, client: u64, token: Option<u64>, value: i64 },
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
