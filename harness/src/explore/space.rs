//! What the search searches: the actions a base scenario's lock can be hit with (every fault
//! the backend and the client can take, each on its targets), the triggers (the lock's own
//! events), and durations placed around the lock's own clocks. And the encoding of a candidate
//! as a choice sequence (Hypothesis's design): strategies draw or write sequences, the shrinker
//! lowers and deletes their values, and [`Space::decode`] turns any sequence into a valid
//! candidate, so one shrinker serves every strategy.
//!
//! The sequence: `[clients - min, work_ms, then per episode: more (1), action, trigger,
//! after_trigger_ms, duration_ms, and a final 0]`. Values past the end read as 0; a value past
//! its menu reads as the menu's last. Lower is simpler: fewer clients, less work, an earlier
//! trigger (none first), a shorter delay and duration; deleting an episode's five values drops
//! it.

use super::candidate::{Candidate, EpisodePlan};
use crate::faults::Fault;
use crate::lock_backends::BackendKind;
use crate::nemesis::EpisodeTimings;
use crate::scenario::{LoadedScenario, Trigger};
use crate::target::Target;
use strum::IntoEnumIterator;

/// A fault with its parameters on its targets: one thing an episode can do.
#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    pub fault: Fault,
    pub targets: Vec<Target>,
    /// Its targets follow the lock (holder, waiter, the holder's member): it needs a trigger.
    pub follows_the_lock: bool,
    /// The fault and its targets in words: `partition-drop holder from n1, n2, n3`.
    pub label: String,
}

/// A clock of the lock: a duration the lock's behaviour turns on.
#[derive(Clone, Debug, PartialEq)]
pub struct Clock {
    pub name: &'static str,
    pub ms: u64,
}

#[derive(Clone)]
pub struct Space {
    pub actions: Vec<Action>,
    /// Index 0 is no trigger; the rest in the order a round meets them.
    pub triggers: Vec<Option<Trigger>>,
    pub clocks: Vec<Clock>,
    /// Fault durations around the clocks, ascending.
    pub durations: Vec<u64>,
    pub min_clients: u32,
    pub base_clients: u32,
    /// The base's longest work time: a candidate's own below it is lowered work.
    pub base_work_ms: u64,
    /// How long an episode waits for its trigger and for the lock after its heal.
    pub timings: EpisodeTimings,
}

/// Values one episode takes in the choice sequence.
pub const EPISODE_VALUES: usize = 5;
/// The most episodes a candidate holds.
pub const MAX_EPISODES: usize = 8;
/// The shortest fault: shorter ones are over before anything notices them.
pub const MIN_DURATION_MS: u64 = 50;
/// The longest fault the durations go to.
pub const MAX_DURATION_MS: u64 = 30_000;

impl Space {
    /// The space of `base`: its actions are those whose one-episode scenario passes the
    /// scenario's rules and the preflight against its backend.
    pub fn of(base: &LoadedScenario) -> anyhow::Result<Space> {
        let s = &base.scenario;
        anyhow::ensure!(s.workload.kind.takes_lock(), "explore searches a lock: the {} workload takes none", s.workload.kind.name());
        let nodes = s.backend_setup().node_count() as u32;
        let clocks = clocks(base);
        let round_ms = s.workload.work_ms.max + s.workload.think_ms + 2 * s.workload.op_timeout_ms;
        let min_clients = s.clients.min(2);
        let mut space = Space {
            actions: vec![],
            triggers: std::iter::once(None).chain(Trigger::iter().map(Some)).collect(),
            durations: durations(&clocks),
            clocks,
            min_clients,
            base_clients: s.clients,
            base_work_ms: s.workload.work_ms.max,
            timings: EpisodeTimings::from_stuck_bound(s.stuck_bound().as_millis() as u64, round_ms),
        };
        // Keep only what this scenario can take: each action and trigger, tried alone.
        for action in actions(s.clients, nodes, s.lock.one_member_each, s.lock.ttl_ms) {
            let probe = Candidate { clients: s.clients, work_ms: None, episodes: vec![] };
            let trigger = if action.targets.contains(&Target::Waiter) { Some(Trigger::Waiting) } else { Some(Trigger::InSection) };
            space.actions.push(action);
            let mut probe = probe;
            probe.episodes.push(EpisodePlan { action: space.actions.len() - 1, trigger, after_trigger_ms: 0, duration_ms: 1000 });
            if probe.load(&space, base, "probe").is_err() {
                space.actions.pop();
            }
        }
        let triggers = std::mem::take(&mut space.triggers);
        for trigger in triggers {
            let Some(node) = space.actions.iter().position(|a| !a.follows_the_lock) else {
                space.triggers.push(trigger);
                continue;
            };
            let probe = Candidate {
                clients: s.clients,
                work_ms: None,
                episodes: vec![EpisodePlan { action: node, trigger, after_trigger_ms: 0, duration_ms: 1000 }],
            };
            let saved = space.triggers.clone();
            space.triggers.push(trigger);
            if probe.load(&space, base, "probe").is_err() {
                space.triggers = saved;
            }
        }
        anyhow::ensure!(!space.actions.is_empty(), "no fault applies to {}", base.name);
        Ok(space)
    }

    /// The candidate a choice sequence stands for (any sequence stands for a valid one).
    pub fn decode(&self, choices: &[u64]) -> Candidate {
        let mut at = 0;
        let mut next = || {
            let v = choices.get(at).copied().unwrap_or(0);
            at += 1;
            v
        };
        let clients = (self.min_clients as u64 + next()).min(self.base_clients.max(self.min_clients) as u64) as u32;
        let work = next();
        let work_ms = (work < self.base_work_ms).then_some(work);
        let mut episodes = vec![];
        while episodes.len() < MAX_EPISODES && next() != 0 {
            let action = (next() as usize).min(self.actions.len() - 1);
            let trigger = self.triggers[(next() as usize).min(self.triggers.len() - 1)];
            let after_trigger_ms = next().min(MAX_DURATION_MS);
            let duration_ms = next().clamp(MIN_DURATION_MS, MAX_DURATION_MS);
            episodes.push(EpisodePlan { action, trigger: self.fit_trigger(action, trigger), after_trigger_ms, duration_ms });
        }
        Candidate { clients, work_ms, episodes }
    }

    /// The choice sequence of a candidate ([`Space::decode`]'s inverse on what it decodes).
    pub fn encode(&self, c: &Candidate) -> Vec<u64> {
        let mut v = vec![(c.clients - self.min_clients) as u64, c.work_ms.unwrap_or(self.base_work_ms)];
        for e in &c.episodes {
            let trigger = self.triggers.iter().position(|t| *t == e.trigger).unwrap_or(0) as u64;
            v.extend([1, e.action as u64, trigger, e.after_trigger_ms, e.duration_ms]);
        }
        v.push(0);
        v
    }

    /// The trigger an action can take: a waiter only `waiting`; a target that follows the
    /// lock some trigger (the holder in its section when none is given, as the nemesis reads
    /// it, written out).
    fn fit_trigger(&self, action: usize, trigger: Option<Trigger>) -> Option<Trigger> {
        let a = &self.actions[action];
        if a.targets.contains(&Target::Waiter) {
            return Some(Trigger::Waiting);
        }
        match trigger {
            None if a.follows_the_lock => Some(Trigger::InSection),
            t => t,
        }
    }

    /// Where in a choice sequence each episode's values are: (start, end) of each, in order.
    pub fn episode_spans(&self, choices: &[u64]) -> Vec<(usize, usize)> {
        let mut spans = vec![];
        let mut at = 2;
        while spans.len() < MAX_EPISODES && choices.get(at).copied().unwrap_or(0) != 0 {
            spans.push((at, at + 1 + EPISODE_VALUES - 1));
            at += EPISODE_VALUES;
        }
        spans
    }

    /// Simpler values for the value at `position` of `choices`, smallest first: what the
    /// shrinker tries in its place. The action is not lowered (another fault is another
    /// finding, not a smaller one).
    pub fn simpler(&self, choices: &[u64], position: usize) -> Vec<u64> {
        let v = choices.get(position).copied().unwrap_or(0);
        let below = |mut xs: Vec<u64>| {
            xs.retain(|x| *x < v);
            xs.sort_unstable();
            xs.dedup();
            xs
        };
        match position {
            0 => (0..v).collect(),
            1 => below(vec![0, v / 4, v / 2]),
            _ => match (position - 2) % EPISODE_VALUES {
                // `more`: nothing simpler that keeps the episode (deleting it is a pass of its own).
                0 => vec![],
                1 => vec![],
                // Earlier triggers, as the action reads them (none reads as in-section for a
                // target that follows the lock: not earlier than acquired).
                2 => {
                    let action = (choices.get(position - 1).copied().unwrap_or(0) as usize).min(self.actions.len() - 1);
                    let index = |t: u64| {
                        let t = self.fit_trigger(action, self.triggers[(t as usize).min(self.triggers.len() - 1)]);
                        self.triggers.iter().position(|x| *x == t).unwrap_or(0) as u64
                    };
                    let now = index(v);
                    let mut earlier: Vec<u64> = [0, v.saturating_sub(1)].into_iter().filter(|t| index(*t) < now).collect();
                    earlier.dedup();
                    earlier
                }
                3 => below(vec![0, v / 2]),
                _ => below(self.durations.iter().copied().chain([v / 2]).filter(|d| *d >= MIN_DURATION_MS).collect()),
            },
        }
    }

    /// The order to lower values in (the shrinker's): each episode's duration and delay, which
    /// keep a failure's timing, then its trigger, which moves the fault within the round (the
    /// riskiest: a step back undoes it first), then the run's clients and work.
    pub fn lowering_order(&self, choices: &[u64]) -> Vec<usize> {
        let spans = self.episode_spans(choices);
        let timing = spans.iter().flat_map(|(start, _)| [start + 4, start + 3]);
        let triggers = spans.iter().map(|(start, _)| start + 2);
        timing.chain(triggers).chain([0, 1]).filter(|i| *i < choices.len()).collect()
    }

    /// One episode in the scenario's words: `pause holder for 3000 ms, when in-section + 200 ms`.
    pub fn describe_episode(&self, e: &EpisodePlan) -> String {
        let mut words = format!("{} for {} ms", self.actions[e.action].label, e.duration_ms);
        match e.trigger {
            Some(t) => words.push_str(&format!(", when {}", t.name())),
            None => words.push_str(", at once"),
        }
        if e.after_trigger_ms > 0 {
            words.push_str(&format!(" + {} ms", e.after_trigger_ms));
        }
        words
    }

    /// The lock's clocks in words: `ttl 2000 ms, op timeout 1000 ms`.
    pub fn clocks_in_words(&self) -> String {
        self.clocks.iter().map(|c| format!("{} {} ms", c.name, c.ms)).collect::<Vec<_>>().join(", ")
    }
}

/// The lock's clocks: what its behaviour under a fault turns on.
fn clocks(base: &LoadedScenario) -> Vec<Clock> {
    let s = &base.scenario;
    let mut clocks = vec![];
    let session = matches!(s.backend, BackendKind::PostgresSession | BackendKind::PostgresSessionPooler);
    if !session {
        // Postgres session locks have no TTL: they last as long as the session.
        clocks.push(Clock { name: "ttl", ms: s.lock.ttl_ms });
    }
    if s.lock.renew_ms > 0 {
        clocks.push(Clock { name: "renew period", ms: s.lock.renew_ms });
    }
    clocks.push(Clock { name: "op timeout", ms: s.workload.op_timeout_ms });
    clocks.push(Clock { name: "acquire timeout", ms: s.lock.acquire_timeout_ms });
    clocks.push(Clock { name: "work", ms: s.workload.work_ms.max });
    if let Some(pg) = s.server.postgres {
        if let (Some(idle), Some(interval), Some(count)) = (pg.tcp_keepalives_idle, pg.tcp_keepalives_interval, pg.tcp_keepalives_count) {
            clocks.push(Clock { name: "keep-alive", ms: 1000 * (idle + interval * count) as u64 });
        }
    }
    clocks.retain(|c| c.ms > 0);
    clocks
}

/// Durations that straddle each clock (half and one and a half of it, and three TTLs, well past
/// a lease), and a short blip; ascending, without near repeats.
fn durations(clocks: &[Clock]) -> Vec<u64> {
    let mut d: Vec<u64> = vec![200];
    for c in clocks {
        d.extend([c.ms / 2, c.ms * 3 / 2]);
        if c.name == "ttl" {
            d.push(c.ms * 3);
        }
    }
    d.retain(|ms| (MIN_DURATION_MS..=MAX_DURATION_MS).contains(ms));
    d.sort_unstable();
    let mut kept: Vec<u64> = vec![];
    for ms in d {
        if kept.last().is_none_or(|last| ms * 10 > last * 11) {
            kept.push(ms);
        }
    }
    kept
}

/// Every action worth trying on `clients` clients and `nodes` nodes, before the backend's
/// rules pick those it can take. Ordered simplest first: the clients' faults, then one node's,
/// then several nodes'.
fn actions(clients: u32, nodes: u32, one_member_each: bool, ttl_ms: u64) -> Vec<Action> {
    let fault = |name: &str, params: &str| Fault::from_params(name, toml::from_str(params).expect("action parameters")).expect("action");
    let node_list = |k: u32| (1..=k).map(|i| format!("\"n{i}\"")).collect::<Vec<_>>().join(", ");
    let majority = nodes / 2 + 1;
    let minority = (nodes - 1) / 2;
    let mut out = vec![];
    let mut push = |fault: Fault, targets: Vec<Target>, label: String| {
        let follows_the_lock = targets.iter().any(|t| t.implied_trigger().is_some());
        out.push(Action { fault, targets, follows_the_lock, label });
    };
    let mut cuts = vec![(format!("from = [{}]", node_list(nodes)), if nodes == 1 { "n1".to_string() } else { format!("n1-n{nodes}") })];
    if nodes >= 3 {
        cuts.push((format!("from = [{}]", node_list(majority)), format!("n1-n{majority} (a majority)")));
    }
    if minority >= 1 && nodes >= 3 {
        let words = if minority == 1 { "n1 (a minority)".to_string() } else { format!("n1-n{minority} (a minority)") };
        cuts.push((format!("from = [{}]", node_list(minority)), words));
    }
    let mut lock_targets = vec![(Target::Holder, "holder")];
    if clients >= 2 {
        lock_targets.push((Target::Waiter, "waiter"));
    }
    for (target, who) in &lock_targets {
        for name in ["pause", "kill"] {
            push(fault(name, ""), vec![target.clone()], format!("{name} {who}"));
        }
        for name in ["partition", "partition-drop"] {
            for (from, words) in &cuts {
                push(fault(name, from), vec![target.clone()], format!("{name} {who} from {words}"));
            }
        }
        push(fault("kill-session", ""), vec![target.clone()], format!("kill-session {who}"));
    }
    // The same client faults on a fixed client, as a random nemesis picks them.
    for k in 1..=clients.min(3) {
        for name in ["pause", "kill"] {
            push(fault(name, ""), vec![Target::Client(k)], format!("{name} client-{k}"));
        }
        for name in ["partition", "partition-drop"] {
            let (from, words) = &cuts[0];
            push(fault(name, from), vec![Target::Client(k)], format!("{name} client-{k} from {words}"));
        }
    }
    let jump = ttl_ms.saturating_mul(2).max(1000);
    let one_node: Vec<(Target, String)> = std::iter::once((Target::Node(1), "n1".to_string()))
        .chain((nodes >= 3).then(|| (Target::Leader, "leader".to_string())))
        .chain(one_member_each.then(|| (Target::HolderMember, "holder-member".to_string())))
        .collect();
    for (target, who) in &one_node {
        push(fault("pause", ""), vec![target.clone()], format!("pause {who}"));
        push(fault("kill", ""), vec![target.clone()], format!("kill {who} (restart)"));
        if nodes >= 2 {
            for name in ["partition", "partition-drop"] {
                push(fault(name, "shape = \"isolate\""), vec![target.clone()], format!("{name} isolate {who}"));
            }
        }
        push(fault("clock-jump", &format!("offset_ms = {jump}")), vec![target.clone()], format!("clock-jump {who} +{jump} ms"));
        push(
            fault("clock-strobe", &format!("offset_ms = {jump}\nperiod_ms = 200")),
            vec![target.clone()],
            format!("clock-strobe {who} +{jump} ms every 200 ms"),
        );
        push(fault("clock-slew", "rate = 1.05"), vec![target.clone()], format!("clock-slew {who} x1.05"));
        push(fault("failover", ""), vec![target.clone()], format!("failover from {who}"));
    }
    if nodes >= 3 {
        let majority_targets: Vec<Target> = (1..=majority).map(Target::Node).collect();
        let words = format!("n1-n{majority} (a majority)");
        push(fault("pause", ""), majority_targets.clone(), format!("pause {words}"));
        push(fault("kill", ""), majority_targets.clone(), format!("kill {words} (restart)"));
        push(fault("clock-jump", &format!("offset_ms = {jump}")), majority_targets, format!("clock-jump {words} +{jump} ms"));
        let all: Vec<Target> = (1..=nodes).map(Target::Node).collect();
        push(fault("kill", ""), all, format!("kill n1-n{nodes} (every node restarts)"));
    }
    if nodes >= 2 {
        for name in ["partition", "partition-drop"] {
            push(fault(name, "shape = \"halves\""), vec![Target::AllNodes], format!("{name} the nodes in halves"));
        }
    }
    if nodes >= 5 {
        push(fault("partition", "shape = \"majority-ring\""), vec![Target::AllNodes], "partition the nodes in a majority ring".into());
    }
    out
}

#[cfg(test)]
mod tests;
