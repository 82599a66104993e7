//! The protected resource: a ledger of counters whose own request log is the ground truth.
//!
//! Split by role: `ledger` holds the rules (fenced / unfenced), `protocol` the wire format,
//! `server` the TCP service (`lockchaos resource`), `client` what workers use. `postgres_table`
//! is the other kind of resource: a Postgres table with a fence-token column.

pub mod client;
pub mod ledger;
pub mod postgres_table;
pub mod protocol;
pub mod server;

/// What a worker's critical section reads and writes: one request, one response.
#[async_trait::async_trait]
pub trait ResourceCall: Send {
    async fn call(&mut self, req: &protocol::Request) -> Result<protocol::Response, client::CallError>;
}
