//! Scenario files: one TOML file per scenario, validated before anything starts.
//!
//! A scenario composes each part's own parameters (`[lock]` and `[server]` from
//! lock_backends, `[workload]` from worker, `[resource]` from resource) with the nemesis
//! (nemesis.rs: the timeline of typed faults and the random schedule). load.rs reads a file and
//! names the file, line and field of every error; validate.rs holds the rules serde cannot
//! express that need nothing but the file. Rules that need the backend are the preflight's.

mod load;
mod nemesis;
mod validate;
pub mod versions;

pub use load::{load_file, load_text, parse, LoadedScenario, ScenarioError};
pub use nemesis::{Episode, Nemesis, RandomFaults, TimelineStep, Trigger};
pub use validate::validate_overrides;

use crate::client_program::ClientParams;
use crate::lock_backends::{self, BackendKind, BackendSetup, LockParams, ServerOptions, ServerParams};
use crate::resource::ResourceParams;
use crate::worker::Workload;
pub use results::{Claims, Expectation};
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// One line: what the scenario shows.
    pub description: String,
    pub expect: Expectation,
    /// The failure this scenario stands for in the matrix ("pause", "failover"); by default
    /// the faults it injects (partitions that only set the stage left out), or "baseline".
    #[serde(default)]
    pub failure: Option<String>,
    pub backend: BackendKind,
    #[serde(default = "defaults::clients")]
    pub clients: u32,
    #[serde(default = "defaults::time_limit_secs")]
    pub time_limit_secs: u64,
    /// Seed for random schedules and worker jitter; a run without one draws one and records it.
    #[serde(default)]
    pub seed: Option<u64>,
    /// How long (ms, at least 1000) the lock may stay free without a grant while clients ask
    /// before the checker calls it stuck; by default [`stuck_bound`] of the TTL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_after_ms: Option<u64>,
    #[serde(default)]
    pub lock: LockParams,
    #[serde(default)]
    pub workload: Workload,
    #[serde(default)]
    pub resource: ResourceParams,
    #[serde(default)]
    pub server: ServerParams,
    #[serde(default)]
    pub nemesis: Nemesis,
    /// `[client]`: a lock client program instead of the built-in client.
    #[serde(default, skip_serializing_if = "is_default")]
    pub client: ClientParams,
    /// Figures the run must measure to match, beside `expect` (a killed holder's lock freed
    /// within a range, the lock still taken at the end).
    #[serde(default, skip_serializing_if = "is_default")]
    pub claims: Claims,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl Scenario {
    /// The backend as this scenario runs it: under libfaketime when a fault moves clocks, with
    /// the scenario's persistence and server settings.
    pub fn backend_setup(&self) -> Box<dyn BackendSetup> {
        let options = ServerOptions {
            faketime: self.nemesis.moves_clocks(),
            persistence: self.server.persistence,
            postgres: self.server.postgres.unwrap_or_default(),
        };
        lock_backends::setup_for(self.backend, options)
    }

    /// The bound of the checker's stuck property for this scenario's runs.
    pub fn stuck_bound(&self) -> Duration {
        stuck_bound(self.stuck_after_ms, self.lock.ttl_ms)
    }
}

/// The stuck bound of a scenario with these fields (also read back from a run's run.json):
/// `stuck_after_ms` when given, else three TTLs and at least 10 s, so a lock freed only when a
/// leftover key expires is not called stuck.
pub fn stuck_bound(stuck_after_ms: Option<u64>, ttl_ms: u64) -> Duration {
    Duration::from_millis(stuck_after_ms.unwrap_or_else(|| ttl_ms.saturating_mul(3).max(DEFAULT_STUCK_AFTER_MS)))
}

/// The least stuck bound a scenario takes.
pub const MIN_STUCK_AFTER_MS: u64 = 1000;
/// The least bound [`stuck_bound`] derives from a TTL: the checker's default.
pub const DEFAULT_STUCK_AFTER_MS: u64 = checker::stuck::DEFAULT_BOUND.as_millis() as u64;

mod defaults {
    pub fn clients() -> u32 {
        2
    }
    pub fn time_limit_secs() -> u64 {
        30
    }
}

#[cfg(test)]
mod tests;
