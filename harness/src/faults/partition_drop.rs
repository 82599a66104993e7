//! Partition that drops packets instead of answering them with a reset: the cut-off side hears
//! nothing, as behind a dead link or a firewall that drops, so every party waits for its own
//! timeouts (the client's request timeout, TCP retransmission and keepalive) instead of
//! failing at once. The same cut as `partition` (same `from` and `shape`), refused by DROP.

use super::partition::{Cut, CutFault, Partition};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// The parameters of a `partition`: `from` or `shape`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(transparent)]
pub struct PartitionDrop(pub Partition);

/// The INPUT rule (after -A/-D) that drops everything from `src` without an answer.
fn drop_from(src: Ipv4Addr) -> Vec<String> {
    ["INPUT", "-s", &src.to_string(), "-j", "DROP"].map(String::from).to_vec()
}

impl CutFault for PartitionDrop {
    fn cut(&self) -> Cut<'_> {
        Cut { partition: &self.0, refuse: drop_from }
    }

    fn partition_mut(&mut self) -> &mut Partition {
        &mut self.0
    }
}
