//! Node control through the Docker API: the run's private network, its containers, commands
//! and signals inside them, and teardown by label.
//!
//! testcontainers 0.28 pins Docker API 1.53 and this machine's engine (20.10) answers only up to
//! 1.41, so we drive bollard (testcontainers' own client) directly with version negotiation.

pub mod cluster;
pub mod docker_api;
pub mod teardown;

pub use cluster::{Cluster, ContainerSpec, Role};

/// Label on every container and network a run creates; its value is the run id.
pub const RUN_LABEL: &str = "lockchaos.run";
