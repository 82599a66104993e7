//! etcd, a 3-member Raft cluster: lease + lock key under a prefix, token = the lock key's
//! create_revision, release by revoking the lease. The client talks to etcd's JSON gRPC gateway
//! (no protoc needed to build) and fails over between the three members.

pub mod client;
pub mod gateway;
pub mod setup;

pub use client::Client;
pub use setup::Setup;
