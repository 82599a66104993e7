//! Whom a step hits and when: the clients whose events fire its trigger, and the member its
//! target names at that moment (the holder, a waiter, the holder's member, the leader, a
//! drawn client or node that is still live).

use super::Nemesis;
use crate::faults::FaultContext;
use crate::live_history::LiveHistory;
use crate::schedule::PlannedFault;
use crate::target::Target;
use crate::trigger::Trigger;
use rand::Rng;

/// How long a `leader` step waits for the servers to have one (an election may be under way).
const LEADER_WAIT_MS: u64 = 5000;

/// Why a step could not fire yet, or at all.
pub(super) enum Resolve {
    /// The member it hits, and when its trigger's event happened (run ns), if it has one.
    Target(String, Option<u64>),
    /// Not yet: a trigger that has not held, a leader being elected.
    Wait,
    /// Never: the reason.
    Give(String),
}

impl Nemesis {
    /// The step's trigger (a `holder` target waits for a client in its section, a `waiter` for
    /// a waiting client) and the clients that fire it now, each with its event's time. A
    /// section-triggered step fires when a client *enters* its critical section after the step
    /// fell due, so the fault gets the whole section (work_ms), not its tail. Steps due at the
    /// same time share one trigger: they fire together.
    pub(super) fn firing(&self, step: &PlannedFault, live: &LiveHistory) -> (Option<Trigger>, Vec<(u64, u64)>) {
        let trigger = step.when.or_else(|| step.target.implied_trigger());
        let since = self.workload_start_ns + step.at_ms * 1_000_000;
        let firing = match trigger {
            None => vec![],
            Some(_) if self.fired_group == Some((step.at_ms, step.episode)) => self.group_firing.clone(),
            Some(trigger) => live.fired(trigger, since),
        };
        let by = step.by.map(|k| format!("client-{k}"));
        let firing = firing.into_iter().filter(|(c, _)| by.is_none() || live.member(*c) == by.as_deref()).collect();
        (trigger, firing)
    }

    /// The member the step hits now, or why it cannot (yet).
    pub(super) async fn resolve(
        &mut self,
        ctx: &FaultContext<'_>,
        step: &PlannedFault,
        trigger: Option<Trigger>,
        firing: &[(u64, u64)],
        live: &LiveHistory,
        now_ms: u64,
    ) -> anyhow::Result<Resolve> {
        if trigger.is_some() && firing.is_empty() {
            // A trigger waits as long as the workload lasts: a busy machine must not turn a
            // late grant into a skipped fault. At the end, heal_all names it.
            return Ok(Resolve::Wait);
        }
        // Several clients may have fired it since it fell due (sends seen in one poll): the
        // latest is the one whose event is "just now".
        let latest = firing.iter().max_by_key(|(c, t)| (*t, std::cmp::Reverse(*c))).copied();
        let trigger_ns = latest.map(|(_, t)| t);
        let target = match &step.target {
            Target::Client(k) => format!("client-{k}"),
            Target::Node(k) => format!("n{k}"),
            Target::AllNodes => "nodes".into(),
            Target::Holder | Target::HolderMember | Target::Waiter => {
                // The client whose event fired the trigger; but while a client waits, the
                // holder is the one it waits for.
                let client = match (&step.target, trigger) {
                    (Target::Holder | Target::HolderMember, Some(Trigger::Waiting)) => live.holders().first().copied(),
                    _ => latest.map(|(c, _)| c),
                };
                let Some(client) = client.and_then(|c| live.member(c)) else {
                    return Ok(Resolve::Wait);
                };
                match (&step.target, ctx.clients.member_of(client)) {
                    (Target::Holder | Target::Waiter, _) => client.to_string(),
                    (_, Some(node)) => node,
                    (_, None) => return Ok(Resolve::Give(format!("{client} does not talk to one member only (lock.one_member_each)"))),
                }
            }
            Target::Leader => {
                let leader = match ctx.backend.leader() {
                    Ok(leader) => leader.leader(ctx.cluster).await?,
                    Err(why) => return Ok(Resolve::Give(format!("no leader: {why}"))),
                };
                match leader {
                    Some(node) => node,
                    None if now_ms < step.at_ms + LEADER_WAIT_MS => return Ok(Resolve::Wait),
                    None => return Ok(Resolve::Give(format!("no node led within {LEADER_WAIT_MS} ms"))),
                }
            }
            Target::RandomClient | Target::RandomNode => unreachable!("schedule::plan draws random targets"),
        };
        if step.drawn_from.is_some() && !self.is_live(ctx, &target).await {
            return Ok(match self.draw_live(ctx, &target).await {
                Some(other) => Resolve::Target(other, trigger_ns),
                None => Resolve::Give(format!("{target} was drawn but is down, and so is every other candidate")),
            });
        }
        Ok(Resolve::Target(target, trigger_ns))
    }

    /// A client is live when its process runs; a node when no kill is on it.
    async fn is_live(&self, ctx: &FaultContext<'_>, member: &str) -> bool {
        if member.starts_with("client-") {
            ctx.clients.is_live(member).await
        } else {
            !self.is_killing(member)
        }
    }

    /// Another member of the same kind as `down`, drawn among the live ones.
    async fn draw_live(&mut self, ctx: &FaultContext<'_>, down: &str) -> Option<String> {
        let candidates: Vec<String> = if down.starts_with("client-") {
            (1..=self.clients).map(|k| format!("client-{k}")).collect()
        } else {
            (1..=self.nodes).map(|k| format!("n{k}")).collect()
        };
        let mut live = vec![];
        for c in candidates {
            if self.is_live(ctx, &c).await {
                live.push(c);
            }
        }
        (!live.is_empty()).then(|| live.swap_remove(self.rng.random_range(0..live.len())))
    }
}
