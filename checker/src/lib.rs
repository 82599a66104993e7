//! lockchaos checker: reads a lock history and says, with evidence, whether the lock and the
//! resource behaved. No Docker, no network: usable on histories from any tool.

pub mod history;

pub use history::{Event, EventType, Process};
