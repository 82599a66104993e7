//! Scenario files: one TOML file per scenario, validated before anything starts.
//!
//! Every error is one line naming the file, the line and the field, so a typo in a scenario
//! never costs a container start.

pub use results::Expectation;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

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
}

/// How the backend's servers run.
#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct ServerParams {
    #[serde(default)]
    pub persistence: Persistence,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Persistence {
    /// Redis keeps everything in memory only: a restarted server has forgotten every lock.
    #[default]
    None,
    /// Redis appends every write to its AOF and fsyncs it before replying (appendfsync
    /// always): a restarted server replays it, locks (with their expiry times) included.
    Appendonly,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// One Redis server; SET key value NX PX ttl, release by Lua compare-and-delete.
    RedisSingle,
    /// Five independent Redis servers; Redlock's majority rule.
    Redlock,
    /// A master with an asynchronous replica, and three Sentinels that fail over.
    RedisSentinel,
    /// A 3-member etcd cluster: lease + lock key, token = the key's create_revision.
    Etcd,
    /// One Postgres server: session-level advisory lock on a direct connection.
    PostgresSession,
    /// The same session-level lock through PgBouncer in transaction pooling mode.
    PostgresSessionPooler,
    /// Transaction-level advisory lock; the counter is a table written in the same transaction.
    PostgresXact,
    /// The same, on a primary (n1) with a synchronous streaming standby (n2) that a
    /// `failover` promotes; clients connect to whichever accepts writes.
    PostgresXactReplicated,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::RedisSingle => "redis-single",
            BackendKind::Redlock => "redlock",
            BackendKind::RedisSentinel => "redis-sentinel",
            BackendKind::Etcd => "etcd",
            BackendKind::PostgresSession => "postgres-session",
            BackendKind::PostgresSessionPooler => "postgres-session-pooler",
            BackendKind::PostgresXact => "postgres-xact",
            BackendKind::PostgresXactReplicated => "postgres-xact-replicated",
        }
    }
}

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct LockParams {
    #[serde(default = "defaults::ttl_ms")]
    pub ttl_ms: u64,
    #[serde(default = "defaults::acquire_timeout_ms")]
    pub acquire_timeout_ms: u64,
    /// Delay between attempts while the lock is taken.
    #[serde(default = "defaults::retry_ms")]
    pub retry_ms: u64,
    /// Redlock: how long to wait for one node before counting it as a no.
    #[serde(default = "defaults::node_timeout_ms")]
    pub node_timeout_ms: u64,
    /// Redlock: clock drift allowance as a share of the TTL (plus 2 ms).
    #[serde(default = "defaults::drift_factor")]
    pub drift_factor: f64,
    /// Renew the grant every this many ms while holding it (0: never). A failed renew is
    /// recorded; the client carries on unless `workload.honour_session_loss` (Redis backends).
    #[serde(default)]
    pub renew_ms: u64,
}

impl Default for LockParams {
    fn default() -> Self {
        LockParams {
            ttl_ms: defaults::ttl_ms(),
            acquire_timeout_ms: defaults::acquire_timeout_ms(),
            retry_ms: defaults::retry_ms(),
            node_timeout_ms: defaults::node_timeout_ms(),
            drift_factor: defaults::drift_factor(),
            renew_ms: 0,
        }
    }
}

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// The lock name and the resource's counter key.
    #[serde(default = "defaults::key")]
    pub key: String,
    /// Time spent holding the lock between the read and the write.
    #[serde(default = "defaults::work_ms")]
    pub work_ms: u64,
    /// Pause between rounds.
    #[serde(default = "defaults::think_ms")]
    pub think_ms: u64,
    /// Timeout of one backend or resource request; past it the outcome is unknown (info).
    #[serde(default = "defaults::op_timeout_ms")]
    pub op_timeout_ms: u64,
    /// Just before the write, skip it (history: write fail, "session lost; write not sent")
    /// when the lock client knows its session is gone (etcd: lease expired or not renewed).
    #[serde(default)]
    pub honour_session_loss: bool,
    /// Just before the write, check that the grant is still valid (validity_ms from the
    /// acquire, and the session): record it as a `check` event; if not valid, do not write.
    #[serde(default)]
    pub check_before_write: bool,
    /// Time between that check and the write: the work a client does after checking.
    #[serde(default)]
    pub check_to_write_ms: u64,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            key: defaults::key(),
            work_ms: defaults::work_ms(),
            think_ms: defaults::think_ms(),
            op_timeout_ms: defaults::op_timeout_ms(),
            honour_session_loss: false,
            check_before_write: false,
            check_to_write_ms: 0,
        }
    }
}

#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct ResourceParams {
    #[serde(default)]
    pub kind: ResourceKind,
    #[serde(default)]
    pub mode: ResourceMode,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ResourceKind {
    /// The ledger service (`lockchaos resource`).
    #[default]
    Ledger,
    /// A Postgres table with a fence-token column and conditional updates, in its own server.
    Postgres,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ResourceMode {
    /// Accepts every write.
    #[default]
    Unfenced,
    /// Rejects a write whose token is lower than the highest it has accepted.
    Fenced,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct Nemesis {
    /// Faults at fixed times from the start of the workload.
    #[serde(default)]
    pub timeline: Vec<TimelineStep>,
    /// Faults drawn from the run's seed (same seed, same schedule).
    #[serde(default)]
    pub random: Option<RandomFaults>,
}

impl Nemesis {
    /// The name of every fault the scenario injects, timeline first, repeats kept.
    pub fn fault_names(&self) -> Vec<&'static str> {
        let timeline = self.timeline.iter().map(|s| s.fault.name());
        let random = self.random.iter().flat_map(|r| r.faults.iter().map(|f| f.name()));
        timeline.chain(random).collect()
    }

    /// Whether any step moves a clock: the backend then runs its servers under libfaketime.
    pub fn has_clock_faults(&self) -> bool {
        self.timeline.iter().any(|s| s.fault.moves_clocks())
    }
}

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct TimelineStep {
    pub at_ms: u64,
    pub fault: FaultKind,
    pub target: Target,
    pub duration_ms: u64,
    /// Fire at the first moment from `at_ms` on when this holds (waiting up to 5 s).
    #[serde(default)]
    pub when: Option<Trigger>,
    /// Only this client's events fire the trigger (`client-K`).
    #[serde(default)]
    pub by: Option<Target>,
    /// partition: the members the target is cut off from (`nK`, `client-K`).
    #[serde(default)]
    pub from: Vec<Target>,
    /// clock-jump, clock-strobe: how far the target node's clock jumps (negative: backwards).
    #[serde(default)]
    pub offset_ms: Option<i64>,
    /// clock-strobe: the clock flips between offset and true time every period_ms.
    #[serde(default)]
    pub period_ms: Option<u64>,
    /// latency: delay added to every packet the target node sends (netem).
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// partition: a shape over the nodes instead of `from` (isolate needs a node target;
    /// halves and majority-ring need `target = "nodes"`).
    #[serde(default)]
    pub shape: Option<PartitionShape>,
}

impl TimelineStep {
    pub fn params(&self) -> FaultParams {
        FaultParams { offset_ms: self.offset_ms, period_ms: self.period_ms, delay_ms: self.delay_ms, shape: self.shape }
    }
}

/// A fault's parameters besides its target (which ones apply depends on the fault).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultParams {
    pub offset_ms: Option<i64>,
    pub period_ms: Option<u64>,
    pub delay_ms: Option<u64>,
    pub shape: Option<PartitionShape>,
}

/// Jepsen's partition shapes over the backend's nodes (clients keep reaching every node).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionShape {
    /// The target node loses every other node.
    Isolate,
    /// n1..n⌈N/2⌉ and the rest lose each other.
    Halves,
    /// Every node keeps a majority (itself and its nearest neighbours on a ring), but no two
    /// nodes keep the same majority. Needs 5 or more nodes.
    MajorityRing,
}

impl PartitionShape {
    pub fn name(self) -> &'static str {
        match self {
            PartitionShape::Isolate => "isolate",
            PartitionShape::Halves => "halves",
            PartitionShape::MajorityRing => "majority-ring",
        }
    }
}

/// A condition on the clients' live history that a step waits for.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// Some client's acquire has just returned ok (it holds the lock, has not released it).
    Acquired,
    /// Some client is inside its critical section (read done, write not yet sent).
    InSection,
    /// Some client has just checked that its lock is still valid and is about to write
    /// (needs `workload.check_before_write`).
    AfterCheck,
}

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct RandomFaults {
    pub faults: Vec<FaultKind>,
    pub target: Target,
    /// First fault no earlier than this.
    #[serde(default = "defaults::random_start_ms")]
    pub start_ms: u64,
    /// [min, max] gap between the end of one fault and the start of the next.
    pub interval_ms: [u64; 2],
    /// [min, max] duration of each fault.
    pub duration_ms: [u64; 2],
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// SIGSTOP a worker (or a node's server process), SIGCONT it after the duration.
    Pause,
    /// SIGKILL a node's server process and start it again after the duration (state not
    /// persisted is lost); on a worker, kill its container for good.
    Kill,
    /// Cut the target off from the members in `from` (iptables in the nodes, TCP reset).
    Partition,
    /// Jump the clock of the server in the target node by `offset_ms` (libfaketime); back to
    /// the true time when the fault ends.
    ClockJump,
    /// Flip the target node's server clock between `offset_ms` and the true time every
    /// `period_ms` until the fault ends.
    ClockStrobe,
    /// Delay every packet the target node sends by `delay_ms` (netem); refused before the
    /// workload where the kernel has no netem.
    Latency,
    /// The backend's own failover, away from the target node (Postgres: the primary dies and
    /// the standby is promoted).
    Failover,
    /// End the target client's sessions on the server side (Postgres: pg_terminate_backend),
    /// as an administrator, a proxy or a server-side timeout would; its session locks go too.
    KillSession,
}

impl FaultKind {
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Pause => "pause",
            FaultKind::Kill => "kill",
            FaultKind::Partition => "partition",
            FaultKind::ClockJump => "clock-jump",
            FaultKind::ClockStrobe => "clock-strobe",
            FaultKind::Latency => "latency",
            FaultKind::Failover => "failover",
            FaultKind::KillSession => "kill-session",
        }
    }

    pub fn moves_clocks(self) -> bool {
        matches!(self, FaultKind::ClockJump | FaultKind::ClockStrobe)
    }

    /// Whether the fault needs parameters a random schedule cannot draw.
    fn needs_parameters(self) -> bool {
        !matches!(self, FaultKind::Pause | FaultKind::Kill | FaultKind::KillSession)
    }
}

/// Which party a fault hits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `client-K`: worker K (1-based).
    Client(u32),
    /// `holder`: the worker inside its critical section (read done, write not yet sent) when the
    /// step fires; the step waits for one. This is how a pause lands between check and write.
    Holder,
    /// `random-client`: a worker drawn from the seed.
    RandomClient,
    /// `nK`: node K (1-based): its server process.
    Node(u32),
    /// `random-node`: a node drawn from the seed.
    RandomNode,
    /// `leader`: the node whose server leads when the step fires (etcd).
    Leader,
    /// `nodes`: all the backend's nodes (partition shapes halves and majority-ring).
    AllNodes,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Client(k) => write!(f, "client-{k}"),
            Target::Holder => f.write_str("holder"),
            Target::RandomClient => f.write_str("random-client"),
            Target::Node(k) => write!(f, "n{k}"),
            Target::RandomNode => f.write_str("random-node"),
            Target::Leader => f.write_str("leader"),
            Target::AllNodes => f.write_str("nodes"),
        }
    }
}

impl std::str::FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "holder" => return Ok(Target::Holder),
            "random-client" => return Ok(Target::RandomClient),
            "random-node" => return Ok(Target::RandomNode),
            "leader" => return Ok(Target::Leader),
            "nodes" => return Ok(Target::AllNodes),
            _ => {}
        }
        let number = |prefix: &str| s.strip_prefix(prefix).and_then(|k| k.parse::<u32>().ok()).filter(|k| *k >= 1);
        number("client-").map(Target::Client).or_else(|| number("n").map(Target::Node)).ok_or_else(|| {
            format!(
                "unknown target `{s}`, expected `client-K`, `nK` (K from 1), `holder`, `leader`, `nodes`, `random-client` or `random-node`"
            )
        })
    }
}

impl Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

mod defaults {
    pub fn clients() -> u32 {
        2
    }
    pub fn time_limit_secs() -> u64 {
        30
    }
    pub fn ttl_ms() -> u64 {
        2000
    }
    pub fn acquire_timeout_ms() -> u64 {
        5000
    }
    pub fn retry_ms() -> u64 {
        50
    }
    pub fn node_timeout_ms() -> u64 {
        100
    }
    pub fn drift_factor() -> f64 {
        0.01
    }
    pub fn key() -> String {
        "ledger".into()
    }
    pub fn work_ms() -> u64 {
        300
    }
    pub fn think_ms() -> u64 {
        50
    }
    pub fn op_timeout_ms() -> u64 {
        2000
    }
    pub fn random_start_ms() -> u64 {
        3000
    }
}

/// A scenario file that could not be used: `file:line: field 'a.b': what is wrong`.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {}{message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default(), field.as_ref().map(|f| format!("field '{f}': ")).unwrap_or_default())]
pub struct ScenarioError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

/// A loaded scenario with where it came from.
#[derive(Clone, Debug)]
pub struct LoadedScenario {
    pub name: String,
    pub path: PathBuf,
    pub text: String,
    pub scenario: Scenario,
}

pub fn load_file(path: &Path) -> Result<LoadedScenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: path.to_path_buf(),
        line: None,
        field: None,
        message: format!("cannot read: {e}"),
    })?;
    let scenario = parse(&text, path)?;
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(LoadedScenario { name, path: path.to_path_buf(), text, scenario })
}

pub fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
    let err =
        |line: Option<usize>, field: Option<String>, message: String| ScenarioError { file: path.to_path_buf(), line, field, message };
    let de = toml::Deserializer::new(text);
    let scenario: Scenario = serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        let line = inner.span().map(|s| line_of_offset(text, s.start)).or_else(|| line_of_field(text, &field));
        let field = (field != ".").then_some(field);
        err(line, field, inner.message().trim().to_string())
    })?;
    validate(&scenario, true).map_err(|(field, message)| err(line_of_field(text, &field), Some(field), message))?;
    Ok(scenario)
}

fn line_of_offset(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The line where a dotted field path (`nemesis.timeline[0].target`) is written, if it is.
/// Falls back to the nearest enclosing table that exists (a missing field is reported at its table).
fn line_of_field(text: &str, field: &str) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let mut item: &toml_edit::Item = doc.as_item();
    let mut best = None;
    for seg in field.split('.').filter(|s| !s.is_empty()) {
        let (name, index) = match seg.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (seg, None),
        };
        let Some(next) = item.get(name) else { break };
        item = next;
        if let Some(i) = index {
            let Some(next) = item.get(i) else { break };
            item = next;
        }
        best = item.span().or(best);
    }
    best.map(|s| line_of_offset(text, s.start))
}

mod validate;
use validate::validate;
pub use validate::validate_overrides;

#[cfg(test)]
mod tests;
