//! The built-in models. Each reads Jepsen-shaped events (see each module for the `f` names
//! and value conventions it accepts) and partitions by the event's `key`: different keys are
//! different objects (different locks, registers, kv entries), so each is checked alone.

pub mod cas_register;
pub mod kv;
pub mod mutex;
pub mod register;

pub use cas_register::CasRegister;
pub use kv::Kv;
pub use mutex::Mutex;
pub use register::Register;
