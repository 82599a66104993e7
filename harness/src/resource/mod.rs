//! The protected resource: a ledger of counters whose own request log is the ground truth.
//!
//! Split by role: `ledger` holds the rules (fenced / unfenced), `protocol` the wire format,
//! `server` the TCP service (`lockchaos resource`), `client` what workers use. `postgres_table`
//! is the other kind of resource: a Postgres table with a fence-token column.

pub mod client;
pub mod ledger;
pub mod postgres_table;
pub mod proof;
pub mod protocol;
pub mod refusals;
pub mod server;

use serde::{Deserialize, Serialize};

/// What a worker's critical section reads and writes: one request, one response.
#[async_trait::async_trait]
pub trait ResourceCall: Send {
    async fn call(&mut self, req: &protocol::Request) -> Result<protocol::Response, client::CallError>;
}

/// The `[resource]` table of a scenario: which resource the clients protect, and its mode.
#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct ResourceParams {
    #[serde(default)]
    pub kind: ResourceKind,
    #[serde(default)]
    pub mode: ResourceMode,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ResourceKind {
    /// The ledger service (`lockchaos resource`).
    #[default]
    Ledger,
    /// A Postgres table with a fence-token column and conditional updates, in its own server.
    Postgres,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ResourceMode {
    /// Accepts every write.
    #[default]
    Unfenced,
    /// Rejects a write whose token is lower than the highest it has accepted.
    Fenced,
}
