//! The lockchaos harness as a library: scenarios, containers, lock backends, faults, the
//! nemesis, workers, the protected resource, runs, series and matrices, and the reporters that
//! consume their events. The `lockchaos` binary (src/main.rs, src/cli/) is a thin command line
//! over it. docs/architecture.md describes the parts and how a run flows through them.

#[macro_use]
pub mod output;

pub mod baseline;
pub mod bounded_lines;
pub mod client_env;
pub mod client_program;
pub mod clock;
pub mod containers;
pub mod event_log;
pub mod events;
pub mod explore;
pub mod faults;
pub mod history;
pub mod hosts;
pub mod libfaketime;
pub mod live_history;
pub mod lock_backends;
pub mod matrix;
pub mod nemesis;
pub mod node_image;
pub mod node_source;
pub mod orphans;
pub mod orphans_on_hosts;
pub mod paths;
pub mod preflight;
pub mod recheck;
pub mod reporters;
pub mod resource;
pub mod run;
pub mod run_store;
pub mod run_verdict;
pub mod scenario;
pub mod scenario_catalog;
pub mod scenario_name;
pub mod schedule;
pub mod series;
pub mod sweep;
pub mod target;
pub mod toml_lines;
pub mod trigger;
pub mod wait;
pub mod worker;
