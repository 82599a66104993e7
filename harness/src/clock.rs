//! Run time: nanoseconds since the run started, from CLOCK_MONOTONIC.
//!
//! Containers on one host share CLOCK_MONOTONIC (and libfaketime does not touch the harness's own
//! processes), so the controller, the resource and every worker stamp events on one time axis.

use nix::time::{clock_gettime, ClockId};

/// Absolute CLOCK_MONOTONIC reading in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let ts = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always readable");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// A run's time origin, shared with workers and the resource as an absolute monotonic reading.
#[derive(Clone, Copy, Debug)]
pub struct RunClock {
    pub t0_ns: u64,
}

impl RunClock {
    pub fn start_now() -> Self {
        RunClock { t0_ns: monotonic_ns() }
    }
    pub fn now(&self) -> u64 {
        monotonic_ns().saturating_sub(self.t0_ns)
    }
}
