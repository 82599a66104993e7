//! The protected resource: a ledger of counters whose own request log is the ground truth.
//!
//! Split by role: `ledger` holds the rules (fenced / unfenced), `protocol` the wire format,
//! `server` the TCP service (`lockchaos resource`), `client` what workers use.

pub mod client;
pub mod ledger;
pub mod protocol;
pub mod server;
