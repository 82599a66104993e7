//! What a worker is told: its configuration (written by the run as JSON) and the scenario's
//! `[workload]` table.

use super::WorkMs;
use crate::client_program::ProgramSpec;
use crate::lock_backends::{ClientConfig, LockParams};
use crate::resource::ResourceParams;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;

/// Everything a worker needs, written by the controller as JSON into the run folder.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct WorkerConfig {
    /// History process number (client-K has process K).
    pub process: u64,
    pub t0_ns: u64,
    /// Run time (ns) after which no new round starts; the round in progress finishes.
    pub stop_at: u64,
    pub backend: ClientConfig,
    pub lock: LockParams,
    pub workload: Workload,
    pub resource: SocketAddr,
    /// Which resource is at that address, and its mode.
    #[serde(default)]
    pub resource_params: ResourceParams,
    pub events: PathBuf,
    /// Draws of the run (work times): the run's seed mixed with the process number.
    #[serde(default)]
    pub seed: u64,
    /// A client program to drive instead of the built-in client (`[client] command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramSpec>,
}

/// The `[workload]` table: what each client does in a round.
#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// The lock name and the resource's counter key.
    #[serde(default = "defaults::key")]
    pub key: String,
    /// Time spent holding the lock between the read and the write: a number, or a range
    /// `[min, max]` drawn uniformly each round.
    #[serde(default = "defaults::work_ms")]
    pub work_ms: WorkMs,
    /// Pause between rounds.
    #[serde(default = "defaults::think_ms")]
    pub think_ms: u64,
    /// Timeout of one backend or resource request; past it the outcome is unknown (info).
    #[serde(default = "defaults::op_timeout_ms")]
    pub op_timeout_ms: u64,
    /// Just before the write, skip it (history: write fail, "session lost; write not sent")
    /// when the lock client knows its session is gone (etcd: lease expired or not renewed).
    #[serde(default)]
    pub honour_session_loss: bool,
    /// Just before the write, check that the grant is still valid (validity_ms from the
    /// acquire, and the session): record it as a `check` event; if not valid, do not write.
    #[serde(default)]
    pub check_before_write: bool,
    /// Time between that check and the write: the work a client does after checking.
    #[serde(default)]
    pub check_to_write_ms: u64,
    /// What a round does: take the lock (the default), or no lock at all.
    #[serde(default)]
    pub kind: WorkloadKind,
    /// The conditional write's `WHERE version = n` (`false`: the broken variant).
    #[serde(default = "defaults::yes")]
    pub check_version: bool,
}

/// What protects the counter.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// acquire → read → work → write → release.
    #[default]
    Lock,
    /// No lock: read the value and its version → work → write only if the version is unchanged
    /// (worker/conditional_write.rs).
    ConditionalWrite,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            key: defaults::key(),
            work_ms: defaults::work_ms(),
            think_ms: defaults::think_ms(),
            op_timeout_ms: defaults::op_timeout_ms(),
            honour_session_loss: false,
            check_before_write: false,
            check_to_write_ms: 0,
            kind: WorkloadKind::Lock,
            check_version: true,
        }
    }
}

mod defaults {
    pub fn key() -> String {
        "ledger".into()
    }
    pub fn work_ms() -> super::WorkMs {
        super::WorkMs::fixed(300)
    }
    pub fn think_ms() -> u64 {
        50
    }
    pub fn op_timeout_ms() -> u64 {
        2000
    }
    pub fn yes() -> bool {
        true
    }
}
