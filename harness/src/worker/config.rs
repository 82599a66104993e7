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
    /// What this process proves it is a worker of the run with (resource/proof.rs): the ledger:
    /// its proof, sent with each request; a Postgres resource: the workers' password. This file
    /// is root's alone to read: a client program runs as nobody and must not learn it.
    #[serde(default)]
    pub resource_proof: String,
    pub events: PathBuf,
    /// Draws of the run (work times): the run's seed mixed with the process number.
    #[serde(default)]
    pub seed: u64,
    /// The client's number (client-K: K), the same for every process of it: the workloads
    /// that keep something per client (a partition's key, an outbox) find it by this.
    #[serde(default)]
    pub client: u32,
    /// Where this worker's container may send, set up by the worker before anything else
    /// (containers/egress.rs); None outside a run's container (tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<crate::containers::egress::Egress>,
    /// A client program to drive instead of the built-in client (`[client] command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramSpec>,
}

impl WorkerConfig {
    /// Whether a new round may start at run time `now_ns`: before the stop time, and unless the
    /// run asked the worker to end (`super::END_SIGNAL`).
    pub fn running(&self, now_ns: u64) -> bool {
        now_ns < self.stop_at && !super::end_asked()
    }
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
    /// The conditional write spread over this many keys (`{key}-1` … `{key}-N`), one drawn
    /// per round: no hot key.
    #[serde(default = "defaults::keys")]
    pub keys: u32,
    /// The idempotency key is stored in the transaction that applies the effect (`false`: the
    /// broken variant: checked before, stored after, each on its own).
    #[serde(default = "defaults::yes")]
    pub key_in_same_transaction: bool,
    /// The idempotency key's client sends the operation again when no answer came within this
    /// time (a duplicate delivery while the first is still being handled).
    #[serde(default = "defaults::resend_after_ms")]
    pub resend_after_ms: u64,
    /// A job is claimed by inserting its id under a unique constraint (`false`: the broken
    /// variant: the client checks that nobody has done the job, does it, then records it).
    #[serde(default = "defaults::yes")]
    pub claim_by_insert: bool,
    /// The unique claim's jobs: one falls due every this many ms of the run, for every client
    /// at once (a scheduled job that each replica's timer fires).
    #[serde(default = "defaults::job_every_ms")]
    pub job_every_ms: u64,
    /// Partitioning: each client owns the key `{key}-{K}` (`false`: the broken variant: they
    /// all share `key`).
    #[serde(default = "defaults::yes")]
    pub one_owner_per_key: bool,
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
    /// No lock: each operation carries a key stored with its effect in one transaction; a
    /// duplicate delivery gets the stored result (worker/idempotency_key.rs).
    IdempotencyKey,
    /// No lock: jobs claimed by inserting their id; a second claim fails at once
    /// (worker/unique_claim.rs).
    UniqueClaim,
    /// No lock: each key has one owner, the only client that touches it
    /// (worker/conditional_write.rs, without the condition).
    Partitioned,
}

impl WorkloadKind {
    /// The article's alternatives: no lock, the counter in the run's own Postgres.
    pub fn takes_lock(self) -> bool {
        self == WorkloadKind::Lock
    }

    /// What the scenario calls it (`[workload] kind`).
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Lock => "lock",
            WorkloadKind::ConditionalWrite => "conditional-write",
            WorkloadKind::IdempotencyKey => "idempotency-key",
            WorkloadKind::UniqueClaim => "unique-claim",
            WorkloadKind::Partitioned => "partitioned",
        }
    }
}

impl Workload {
    /// Each workload's switch to its broken variant: (field, whether it is switched, the kind
    /// it belongs to). A switch on another kind is refused.
    pub fn broken_switches(&self) -> [(&'static str, bool, WorkloadKind); 4] {
        [
            ("check_version", !self.check_version, WorkloadKind::ConditionalWrite),
            ("key_in_same_transaction", !self.key_in_same_transaction, WorkloadKind::IdempotencyKey),
            ("claim_by_insert", !self.claim_by_insert, WorkloadKind::UniqueClaim),
            ("one_owner_per_key", !self.one_owner_per_key, WorkloadKind::Partitioned),
        ]
    }

    /// Some switch to a broken variant is on.
    pub fn broken(&self) -> bool {
        self.broken_switches().iter().any(|(_, on, _)| *on)
    }
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
            keys: 1,
            key_in_same_transaction: true,
            resend_after_ms: defaults::resend_after_ms(),
            claim_by_insert: true,
            job_every_ms: defaults::job_every_ms(),
            one_owner_per_key: true,
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
    pub fn keys() -> u32 {
        1
    }
    pub fn resend_after_ms() -> u64 {
        500
    }
    pub fn job_every_ms() -> u64 {
        500
    }
}
