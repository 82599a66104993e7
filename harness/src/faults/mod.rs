//! Faults: one file each, one line each in [`fault_kinds!`] below. A fault is its parameter
//! struct (what a scenario step may set for it, and nothing else: serde refuses any other field)
//! implementing [`FaultAction`]: its load-time rules, what it needs of the backend, and how it
//! is injected and healed. The nemesis records every inject and heal as events of process
//! "nemesis", and heals whatever is still active at the end and on abort.
//!
//! Adding a fault: write `faults/<name>.rs` with `pub struct <Name>` (serde `Deserialize`,
//! `deny_unknown_fields`) and `impl FaultAction for <Name>`, and add one line to the list.

use crate::containers::{Cluster, Role};
use crate::lock_backends::BackendSetup;
use crate::target::Target;
use serde::Serialize;

/// A problem with one step: the field (relative to the step: `target`, `offset_ms`) and what is
/// wrong with it.
pub type StepError = (&'static str, String);

/// The backend as the load-time checks see it.
pub struct BackendView<'a> {
    /// For messages: `redis-single`.
    pub name: &'a str,
    /// Its node count and capabilities.
    pub setup: &'a dyn BackendSetup,
}

/// What a fault may act on at run time: the containers, the backend (to find or restart its
/// servers, and for its capabilities), and the run's clients (to start a killed one again).
pub struct FaultContext<'a> {
    pub cluster: &'a Cluster,
    pub backend: &'a dyn BackendSetup,
    pub clients: &'a dyn Clients,
}

/// The run's clients, as faults see them.
#[async_trait::async_trait]
pub trait Clients: Send + Sync {
    /// Starts client `name` (`client-K`) again, as a new process in a new container at the same
    /// address; returns the new process number.
    async fn restart(&self, name: &str) -> anyhow::Result<u64>;
    /// Whether client `name` has a process running now.
    async fn is_live(&self, name: &str) -> bool;
    /// The node (`nK`) whose member client `name` talks to, when each client talks to one
    /// member only.
    fn member_of(&self, name: &str) -> Option<String>;
}

impl FaultContext<'_> {
    /// Whether `target` names a node (its server process is the target) or a worker.
    pub fn is_node(&self, target: &str) -> anyhow::Result<bool> {
        match self.cluster.member(target) {
            Ok(m) => Ok(m.role == Role::Node),
            // Workers may not have started yet (faults laid at 0 ms); nodes always have.
            Err(_) if target.starts_with("client-") => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Sends a signal to the backend's server process inside a node.
    pub async fn signal_server(&self, node: &str, signal: &str) -> anyhow::Result<()> {
        let process = self.backend.server_process();
        self.cluster.exec_ok(node, &["pkill", &format!("-{signal}"), "-x", process]).await.map(|_| ())
    }
}

/// What one kind of fault does. Implemented by the fault's parameter struct.
#[async_trait::async_trait]
pub trait FaultAction: Send + Sync {
    /// The parameters in words, for the history's `detail` and the progress lines.
    fn detail(&self) -> Option<String> {
        None
    }
    /// The rules a scenario file can be held to without knowing the backend: which targets the
    /// fault takes, parameter ranges. By default any single client or node.
    fn check(&self, target: &Target) -> Result<(), StepError> {
        not_all_nodes(target)
    }
    /// The rules that need the backend: capabilities and node counts (the preflight).
    fn check_backend(&self, _target: &Target, _backend: &BackendView<'_>) -> Result<(), StepError> {
        Ok(())
    }
    /// Whether the backend's servers must run under libfaketime for this fault.
    fn moves_clocks(&self) -> bool {
        false
    }
    /// The rules of this fault when the nodes are hosts reached over SSH (hosts/): the field
    /// and why not, when it cannot be done there. `shared_client_address`: the hosts see every
    /// client at this machine's one address (the nodes-file names no workers' network).
    fn check_on_hosts(&self, _target: &Target, _shared_client_address: bool) -> Result<(), StepError> {
        Ok(())
    }
    /// Members the parameters name besides the target (a partition's `from`), checked like
    /// targets.
    fn members(&self) -> Vec<&Target> {
        vec![]
    }
    /// The same, to draw random ones from the seed.
    fn members_mut(&mut self) -> Vec<&mut Target> {
        vec![]
    }
    /// Checks, once the nodes run and before any client starts, that the fault can work here;
    /// an error refuses the run (latency on a kernel without netem) instead of a run that only
    /// pretends to inject it.
    async fn preflight(&self, _ctx: &FaultContext<'_>) -> anyhow::Result<()> {
        Ok(())
    }
    /// Starts the fault on `target` (a node `nK`, a worker `client-K`, or `nodes`).
    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()>;
    /// Undoes it. Must be safe to call on a target that has already been healed or has exited.
    async fn heal(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()>;
    /// What the nemesis calls: [`FaultAction::inject`], plus what was measured of the fault as
    /// it started (a clock slew: the jump its start made), for the history's start record.
    async fn inject_measured(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<Option<String>> {
        self.inject(ctx, target).await.map(|()| None)
    }
    /// What the nemesis calls: [`FaultAction::heal`], plus what was measured of the fault over
    /// its life, for the stop record. A fault that finds it never took effect (a clock slew
    /// whose clock did not run fast) returns [`NotInEffect`]: the run then ends unknown.
    async fn heal_measured(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<Option<String>> {
        self.heal(ctx, target).await.map(|()| None)
    }
}

/// A heal's finding that its fault never took effect, with why: the nemesis names the step in
/// the run's `not_applied`, so the run cannot end safe.
#[derive(Debug)]
pub struct NotInEffect(pub String);

impl std::fmt::Display for NotInEffect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotInEffect {}

/// The default target rule: `nodes` is only for the partition shapes that split all nodes.
pub fn not_all_nodes(target: &Target) -> Result<(), StepError> {
    match target {
        Target::AllNodes => Err(("target", "`nodes` is the target of a partition with shape halves or majority-ring".into())),
        _ => Ok(()),
    }
}

/// The rule of faults that act on a node's server: the target must be a node.
pub fn node_target(fault: &str, target: &Target) -> Result<(), StepError> {
    if target.is_node() {
        Ok(())
    } else {
        Err(("target", format!("a {fault} needs a node target (nK, random-node or leader)")))
    }
}

/// A step's parameters that do not make a fault: the field (relative to the step) and why.
#[derive(Debug, PartialEq, Eq)]
pub struct ParamError {
    pub field: String,
    pub message: String,
}

/// Reads one fault's parameter struct from the rest of its step's table.
fn parse_params<P: serde::de::DeserializeOwned>(name: &str, params: toml::Table) -> Result<P, ParamError> {
    serde_path_to_error::deserialize(toml::Value::Table(params)).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().message().trim().to_string();
        if message.starts_with("unknown field") {
            ParamError { field: path, message: format!("does not apply to a {name} fault ({message})") }
        } else if path == "." {
            // A missing parameter has no place of its own: point at the fault.
            ParamError { field: "fault".into(), message: format!("{name}: {message}") }
        } else {
            ParamError { field: path, message }
        }
    })
}

/// Declares the fault kinds: one line each, `"name" => Variant(module::Params)`, with the
/// fault's documentation. Generates the modules, the [`Fault`] enum and its dispatch.
macro_rules! fault_kinds {
    ($( $(#[$doc:meta])* $name:literal => $variant:ident($module:ident::$params:ident), )*) => {
        $(pub mod $module;)*

        /// One fault with its parameters, as a scenario step gives it.
        #[derive(Clone, Debug, PartialEq, Serialize)]
        #[serde(tag = "fault")]
        pub enum Fault {
            $( $(#[$doc])* #[serde(rename = $name)] $variant($module::$params), )*
        }

        impl Fault {
            /// Every fault's name, as scenarios write it.
            pub const NAMES: &'static [&'static str] = &[$($name),*];

            pub fn name(&self) -> &'static str {
                match self { $(Fault::$variant(_) => $name,)* }
            }

            pub fn action(&self) -> &dyn FaultAction {
                match self { $(Fault::$variant(p) => p,)* }
            }

            pub fn action_mut(&mut self) -> &mut dyn FaultAction {
                match self { $(Fault::$variant(p) => p,)* }
            }

            /// The fault `name` with the parameters in `params` (the step's other fields).
            pub fn from_params(name: &str, params: toml::Table) -> Result<Fault, ParamError> {
                match name {
                    $($name => parse_params(name, params).map(Fault::$variant),)*
                    _ => Err(ParamError {
                        field: "fault".into(),
                        message: format!("unknown fault `{name}`, expected one of: {}", Self::NAMES.join(", ")),
                    }),
                }
            }
        }
    };
}

fault_kinds! {
    /// Freeze a client's container, every process of it (or SIGSTOP a node's server process);
    /// thaw it (SIGCONT) after the duration.
    "pause" => Pause(pause::Pause),
    /// SIGKILL a node's server process and start it again after the duration (state not
    /// persisted is lost); on a client, SIGKILL its container's PID 1 (all of it dies) and
    /// start it again as a new process after the duration.
    "kill" => Kill(kill::Kill),
    /// Cut the target off from the members in `from`, or split the nodes by a `shape`
    /// (iptables in the nodes, TCP reset).
    "partition" => Partition(partition::Partition),
    /// The same cut, but packets from the cut-off side are dropped without an answer: every
    /// party waits for its own timeouts.
    "partition-drop" => PartitionDrop(partition_drop::PartitionDrop),
    /// Jump the clock of the server in the target node by `offset_ms` (libfaketime); back to
    /// the true time when the fault ends.
    "clock-jump" => ClockJump(clock_jump::ClockJump),
    /// Flip the target node's server clock between `offset_ms` and the true time every
    /// `period_ms` until the fault ends.
    "clock-strobe" => ClockStrobe(clock_strobe::ClockStrobe),
    /// Run the target node's server clock `rate` times as fast as true time while the fault
    /// lasts (libfaketime's rate), continuous when it starts and stops; measured, and the run
    /// ends unknown when the clock did not gain what the rate says.
    "clock-slew" => ClockSlew(clock_slew::ClockSlew),
    /// Delay every packet the target node sends by `delay_ms` (netem); refused before the
    /// workload where the kernel has no netem.
    "latency" => Latency(latency::Latency),
    /// The backend's own failover, away from the target node (Postgres: the primary dies and
    /// the standby is promoted).
    "failover" => Failover(failover::Failover),
    /// End the target client's sessions on the server side (Postgres: pg_terminate_backend),
    /// as an administrator, a proxy or a server-side timeout would; its session locks go too.
    "kill-session" => KillSession(kill_session::KillSession),
}

/// One fault as applied: what, with which parameters, on which member.
#[derive(Clone, Debug, PartialEq)]
pub struct Injection {
    pub fault: Fault,
    /// A node `nK`, a worker `client-K`, or `nodes` (partition shapes over all nodes).
    pub target: String,
}

impl Injection {
    pub fn detail(&self) -> Option<String> {
        self.fault.action().detail()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_fault_takes_its_own_parameters_and_no_other() {
        let jump = Fault::from_params("clock-jump", params("offset_ms = 30000")).unwrap();
        assert_eq!(jump.name(), "clock-jump");
        assert_eq!(jump.action().detail().as_deref(), Some("+30s"));
        assert!(jump.action().moves_clocks());

        let err = Fault::from_params("pause", params("offset_ms = 5")).unwrap_err();
        assert_eq!(err.field, "offset_ms");
        assert!(err.message.starts_with("does not apply to a pause fault"), "{}", err.message);

        let err = Fault::from_params("clock-strobe", params("offset_ms = 5\nperiod_ms = 'x'")).unwrap_err();
        assert_eq!(err.field, "period_ms");
        assert!(err.message.contains("invalid type"), "{}", err.message);

        let err = Fault::from_params("clock-jump", params("")).unwrap_err();
        assert_eq!((err.field.as_str(), err.message.as_str()), ("fault", "clock-jump: missing field `offset_ms`"));

        let err = Fault::from_params("clock-jmp", params("")).unwrap_err();
        assert_eq!(err.field, "fault");
        assert!(err.message.starts_with("unknown fault `clock-jmp`, expected one of: pause, kill, partition"), "{}", err.message);
    }

    #[test]
    fn every_named_fault_parses_and_serialises_with_its_name() {
        let examples = [
            ("pause", ""),
            ("kill", ""),
            ("partition", "from = ['n2']"),
            ("partition-drop", "shape = 'halves'"),
            ("clock-jump", "offset_ms = -3000"),
            ("clock-strobe", "offset_ms = 1000\nperiod_ms = 100"),
            ("clock-slew", "rate = 1.05"),
            ("latency", "delay_ms = 50"),
            ("failover", ""),
            ("kill-session", ""),
        ];
        let named: Vec<&str> = examples.iter().map(|(n, _)| *n).collect();
        assert_eq!(named, Fault::NAMES, "an example for every fault, in order");
        for (name, text) in examples {
            let fault = Fault::from_params(name, params(text)).unwrap();
            assert_eq!(fault.name(), name);
            let json = serde_json::to_value(&fault).unwrap();
            assert_eq!(json["fault"], name);
            for key in params(text).keys() {
                assert!(json.get(key).is_some(), "{name}: {key} is written back: {json}");
            }
        }
    }
}
