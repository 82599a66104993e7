//! etcd, a 3-member Raft cluster, locked as Go's `concurrency.Mutex` does it: one session lease
//! kept alive over one keep-alive stream, a lock key per waiter under a prefix, the owner is the
//! oldest key, waiters watch the deletion of the key just ahead of theirs; token = the lock
//! key's create_revision; release deletes the key. The client talks to etcd's gRPC API with the
//! etcd-client crate, as Go's clientv3 does (members.rs), and fails over between the three
//! members.

pub mod client;
pub mod members;
pub mod setup;

pub use client::Client;
pub use setup::Setup;
