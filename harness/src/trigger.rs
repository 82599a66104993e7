//! When a step fires: the lock's events, as the clients' live history shows them. A leaf, so
//! that targets (which imply a trigger) and scenarios (which name one) both use it.

use serde::{Deserialize, Serialize};

/// A condition on the clients' live history that a step waits for: the lock's events, in the
/// order a round meets them. The client whose event fires the trigger is the step's `holder`
/// (or, for `waiting`, its `waiter`).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, strum::EnumIter, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Trigger {
    /// Some client has sent its acquire and waits while another client holds the lock.
    Waiting,
    /// Some client's acquire has just returned ok (it holds the lock, has not released it).
    Acquired,
    /// Some client is inside its critical section (read done, write not yet sent).
    InSection,
    /// Some client has just checked that its lock is still valid and is about to write
    /// (needs `workload.check_before_write`).
    AfterCheck,
    /// Some holder has just sent a renewal (needs `lock.renew_ms`).
    RenewSent,
    /// Some holder has just sent its write to the resource.
    WriteSent,
    /// Some holder has just sent its release.
    ReleaseSent,
}

impl Trigger {
    pub fn name(self) -> &'static str {
        self.into()
    }
}
