//! The nemesis: applies the planned faults while the workload runs, reacting to the clients'
//! live phases for triggered steps, and heals everything still active at the end.
//!
//! A run never claims more than it saw: a planned fault that did not take effect (its injection
//! failed, its trigger never held while the workload lasted, its target could not be found, the
//! same fault was already on) is recorded in the history (`skipped`, or `start` with its error)
//! and named in [`Nemesis::not_applied`], and the run's outcome is then unknown.
//!
//! Over 400 lines with its tests: a step's life (wait, fire, heal, skip) is one state machine
//! whose tests read its private state (`not_applied`, the active faults), so they stay here.

use crate::clock::RunClock;
use crate::event_log::EventLog;
use crate::events::FaultChange;
use crate::faults::{Fault, FaultContext, Injection, NotInEffect};
use crate::live_history::{LiveHistory, Phase};
use crate::scenario::Trigger;
use crate::schedule::PlannedFault;
use crate::target::Target;
use checker::{Event, EventType, Process};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use results::FaultPhase;
use std::collections::VecDeque;

/// How long a `leader` step waits for the servers to have one (an election may be under way).
const LEADER_WAIT_MS: u64 = 5000;

struct Active {
    injection: Injection,
    heal_at_ms: u64,
    /// Its step, to name it if its heal finds it never took effect.
    step: PlannedFault,
}

pub struct Nemesis {
    pending: VecDeque<PlannedFault>,
    /// Run time (ns) at which the workload started: steps' at_ms count from there.
    workload_start_ns: u64,
    /// at_ms of the last triggered step that fired, and the client processes in section then.
    fired_group: Option<u64>,
    group_holders: Vec<u64>,
    active: Vec<Active>,
    /// Draws a live target again when the one drawn at plan time is down.
    rng: StdRng,
    clients: u32,
    nodes: u32,
    not_applied: Vec<String>,
    /// Whether any step of the random schedule was injected.
    random_fired: bool,
    log: EventLog,
    clock: RunClock,
}

/// Why a step could not fire yet, or at all.
enum Resolve {
    Target(String),
    /// Not yet: a trigger that has not held, a leader being elected.
    Wait,
    /// Never: the reason.
    Give(String),
}

impl Nemesis {
    pub fn new(plan: Vec<PlannedFault>, log: EventLog, clock: RunClock, seed: u64, clients: u32, nodes: u32) -> Self {
        Nemesis {
            pending: plan.into(),
            workload_start_ns: 0,
            fired_group: None,
            group_holders: vec![],
            active: vec![],
            // Its own stream, so redraws do not shift the plan's draws.
            rng: StdRng::seed_from_u64(seed ^ 0x6e65_6d65_7369_7321),
            clients,
            nodes,
            not_applied: vec![],
            random_fired: false,
            log,
            clock,
        }
    }

    pub fn set_workload_start(&mut self, run_time_ns: u64) {
        self.workload_start_ns = run_time_ns;
    }

    /// The planned faults that did not take effect, each naming its step and why.
    /// A kill fault is on `member` now: its death is the fault's doing.
    pub fn is_killing(&self, member: &str) -> bool {
        self.active.iter().any(|a| a.injection.target == member && matches!(a.injection.fault, Fault::Kill(_)))
    }

    pub fn not_applied(&self) -> &[String] {
        &self.not_applied
    }

    /// Starts due faults and heals expired ones; `now_ms` counts from the workload's start.
    pub async fn tick(&mut self, ctx: &FaultContext<'_>, live: &LiveHistory, now_ms: u64) -> anyhow::Result<Vec<FaultChange>> {
        let mut changes = vec![];
        let mut still_active = vec![];
        for a in std::mem::take(&mut self.active) {
            if a.heal_at_ms <= now_ms {
                changes.push(self.heal(ctx, &a).await?);
            } else {
                still_active.push(a);
            }
        }
        self.active = still_active;
        while let Some(step) = self.pending.front().cloned() {
            if step.at_ms > now_ms || self.behind_a_random_fault(&step) {
                break;
            }
            let (trigger, section) = self.section(&step, live);
            let target = match self.resolve(ctx, &step, trigger, &section, live, now_ms).await? {
                Resolve::Wait => break, // later steps wait behind this one
                Resolve::Give(why) => {
                    self.pending.pop_front();
                    self.skip(&step, "none", why)?;
                    continue;
                }
                Resolve::Target(target) => target,
            };
            self.pending.pop_front();
            if trigger.is_some() {
                self.fired_group = Some(step.at_ms);
                self.group_holders = section;
            }
            let injection = Injection { fault: step.fault.clone(), target };
            if self.active.iter().any(|a| a.injection == injection) {
                self.skip(&step, &injection.target, "the same fault is already on".into())?;
                continue;
            }
            let change = self.inject(ctx, &injection).await?;
            self.random_fired |= step.from_random_schedule() && change.error.is_none();
            if let Some(e) = &change.error {
                self.not_applied.push(describe(&step, &injection.target, &format!("its injection failed: {e}")));
            }
            changes.push(change);
            self.active.push(Active { injection, heal_at_ms: now_ms + step.duration_ms, step });
        }
        Ok(changes)
    }

    /// A random schedule's faults follow one another: the next is due `interval` after the
    /// previous one's planned end. On a loaded machine the previous one may have been injected,
    /// and so heal, late; the next then waits for that heal instead of finding its fault still
    /// on (and being skipped, which would make the run unknown for the machine's slowness).
    /// Steps queued behind it wait too, by as much, as behind any step not yet fired.
    fn behind_a_random_fault(&self, step: &PlannedFault) -> bool {
        step.from_random_schedule() && self.active.iter().any(|a| a.step.from_random_schedule())
    }

    /// The step's trigger (a `holder` target waits for a client in its section) and the client
    /// processes that fire it now. A section-triggered step fires when a client *enters* its
    /// critical section after the step fell due, so the fault gets the whole section (work_ms),
    /// not its tail. Steps due at the same time share one trigger: they fire together.
    fn section(&self, step: &PlannedFault, live: &LiveHistory) -> (Option<Trigger>, Vec<u64>) {
        let trigger = match step.when {
            None if step.target.waits_for_holder() => Some(Trigger::InSection),
            when => when,
        };
        let since = self.workload_start_ns + step.at_ms * 1_000_000;
        let section = match trigger {
            None => vec![],
            Some(_) if self.fired_group == Some(step.at_ms) => self.group_holders.clone(),
            Some(Trigger::Acquired) => live.acquired_since(since),
            Some(Trigger::InSection) => live.entered_since(Phase::InSection, since),
            Some(Trigger::AfterCheck) => live.entered_since(Phase::Checked, since),
        };
        let by = step.by.map(|k| format!("client-{k}"));
        let section = section.into_iter().filter(|c| by.is_none() || live.member(*c) == by.as_deref()).collect();
        (trigger, section)
    }

    /// The member the step hits now, or why it cannot (yet).
    async fn resolve(
        &mut self,
        ctx: &FaultContext<'_>,
        step: &PlannedFault,
        trigger: Option<Trigger>,
        section: &[u64],
        live: &LiveHistory,
        now_ms: u64,
    ) -> anyhow::Result<Resolve> {
        if trigger.is_some() && section.is_empty() {
            // A trigger waits as long as the workload lasts: a busy machine must not turn a
            // late grant into a skipped fault. At the end, heal_all names it.
            return Ok(Resolve::Wait);
        }
        let target = match &step.target {
            Target::Client(k) => format!("client-{k}"),
            Target::Node(k) => format!("n{k}"),
            Target::AllNodes => "nodes".into(),
            Target::Holder | Target::HolderMember => {
                let Some(holder) = section.first().and_then(|c| live.member(*c)) else {
                    return Ok(Resolve::Give("the client in its section is not one of the run's".into()));
                };
                match (&step.target, ctx.clients.member_of(holder)) {
                    (Target::Holder, _) => holder.to_string(),
                    (_, Some(node)) => node,
                    (_, None) => return Ok(Resolve::Give(format!("{holder} does not talk to one member only (lock.one_member_each)"))),
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
                Some(other) => Resolve::Target(other),
                None => Resolve::Give(format!("{target} was drawn but is down, and so is every other candidate")),
            });
        }
        Ok(Resolve::Target(target))
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

    /// Heals every active fault (end of the workload, error or interruption) and drops the
    /// steps not yet fired: those that fell due before the workload ended (`ended_ms`) never took
    /// effect; those due at or after its end were past the end of this run. The random schedule
    /// is a stream, not a list of promises: its steps the nemesis had not reached when the
    /// workload ended (late on a busy machine) are past the end like the rest of the stream,
    /// unless none of its steps took effect at all.
    pub async fn heal_all(&mut self, ctx: &FaultContext<'_>, ended_ms: u64) -> anyhow::Result<Vec<FaultChange>> {
        self.drop_unfired(ended_ms)?;
        let mut changes = vec![];
        for a in std::mem::take(&mut self.active) {
            changes.push(self.heal(ctx, &a).await?);
        }
        Ok(changes)
    }

    /// The pending steps at the end (see [`Nemesis::heal_all`]): each one due before `ended_ms`
    /// is recorded as skipped, with why, unless it is part of a random stream that did fire.
    fn drop_unfired(&mut self, ended_ms: u64) -> anyhow::Result<()> {
        const NO_SECTION: &str = "no client entered its critical section after it fell due";
        let mut behind_a_trigger = false;
        for step in std::mem::take(&mut self.pending) {
            if step.at_ms >= ended_ms || (step.from_random_schedule() && step.when.is_none() && self.random_fired) {
                continue;
            }
            let why = match (step.when, &step.target, step.by) {
                (Some(Trigger::Acquired), _, Some(k)) => format!("client-{k} was never granted the lock after it fell due"),
                (Some(Trigger::Acquired), _, None) => "no client was granted the lock after it fell due".into(),
                (Some(Trigger::AfterCheck), ..) => "no client checked its lock before a write after it fell due".into(),
                (Some(Trigger::InSection), ..) => NO_SECTION.into(),
                (None, target, _) if target.waits_for_holder() => NO_SECTION.into(),
                _ if behind_a_trigger => "it waited behind an earlier step that never fired".into(),
                _ => "the nemesis had not reached it when the workload ended".into(),
            };
            behind_a_trigger |= step.when.is_some() || step.target.waits_for_holder() || step.target == Target::Leader;
            self.skip(&step, "none", format!("{why} (the workload ended at {ended_ms} ms)"))?;
        }
        Ok(())
    }

    /// Records a step that did not take effect.
    fn skip(&mut self, step: &PlannedFault, target: &str, why: String) -> anyhow::Result<()> {
        self.not_applied.push(describe(step, target, &why));
        let injection = Injection { fault: step.fault.clone(), target: target.to_string() };
        self.record(&injection, injection.detail(), FaultPhase::Skipped, Some(why))
    }

    async fn inject(&mut self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<FaultChange> {
        // Stamped when it was sent, as Jepsen stamps a nemesis op's invoke: the fault may take
        // effect anywhere within the call (a killed client dies, and its lock may be granted to
        // another, before `docker kill` returns). With the stop stamped when the heal is done,
        // a fault's band covers every moment it may have been in effect.
        let sent = self.clock.now();
        let (measured, error) = match inj.fault.action().inject_measured(ctx, &inj.target).await {
            Ok(measured) => (measured, None),
            Err(e) => (None, Some(format!("{e:#}"))),
        };
        let detail = with_measured(inj.detail(), measured);
        self.record_at(sent, inj, detail.clone(), FaultPhase::Start, error.clone())?;
        Ok(FaultChange { fault: inj.fault.name(), target: inj.target.clone(), detail, phase: FaultPhase::Start, error })
    }

    async fn heal(&mut self, ctx: &FaultContext<'_>, a: &Active) -> anyhow::Result<FaultChange> {
        let inj = &a.injection;
        let result = inj.fault.action().heal_measured(ctx, &inj.target).await;
        let (measured, error) = self.heal_outcome(a, result);
        let detail = with_measured(inj.detail(), measured);
        self.record(inj, detail.clone(), FaultPhase::Stop, error.clone())?;
        Ok(FaultChange { fault: inj.fault.name(), target: inj.target.clone(), detail, phase: FaultPhase::Stop, error })
    }

    /// What a heal measured, or its error; a heal that found its fault never took effect
    /// ([`NotInEffect`]) names the step in `not_applied`.
    fn heal_outcome(&mut self, a: &Active, result: anyhow::Result<Option<String>>) -> (Option<String>, Option<String>) {
        match result {
            Ok(measured) => (measured, None),
            Err(e) => {
                if let Some(not) = e.downcast_ref::<NotInEffect>() {
                    self.not_applied.push(describe(&a.step, &a.injection.target, &not.0));
                }
                (None, Some(format!("{e:#}")))
            }
        }
    }

    fn record(&mut self, inj: &Injection, detail: Option<String>, phase: FaultPhase, error: Option<String>) -> anyhow::Result<()> {
        self.record_at(self.clock.now(), inj, detail, phase, error)
    }

    fn record_at(
        &mut self,
        time: u64,
        inj: &Injection,
        detail: Option<String>,
        phase: FaultPhase,
        error: Option<String>,
    ) -> anyhow::Result<()> {
        let mut ev = Event::new(time, Process::Named(Process::NEMESIS.into()), EventType::Info, inj.fault.name());
        ev.node = Some(inj.target.clone());
        ev.detail = detail;
        ev.value = phase.into();
        ev.error = error;
        self.log.append(ev)?;
        Ok(())
    }
}

/// A fault's parameters in words and what was measured of it: `x1.05; gained +1000.2 ms …`.
fn with_measured(detail: Option<String>, measured: Option<String>) -> Option<String> {
    match (detail, measured) {
        (Some(d), Some(m)) => Some(format!("{d}; {m}")),
        (d, m) => d.or(m),
    }
}

/// `nemesis.timeline[1] (clock-strobe on n1, due at 3000 ms) did not take effect: …`
fn describe(step: &PlannedFault, target: &str, why: &str) -> String {
    let on = if target == "none" { step.target.to_string() } else { target.to_string() };
    format!("{} ({} on {on}, due at {} ms) did not take effect: {why}", step.origin, step.fault.name(), step.at_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::pause::Pause;
    use crate::schedule;

    fn step(at_ms: u64, origin: &str, target: Target, when: Option<Trigger>) -> PlannedFault {
        PlannedFault {
            at_ms,
            fault: Fault::Pause(Pause {}),
            target,
            duration_ms: 100,
            when,
            by: None,
            origin: origin.into(),
            drawn_from: None,
        }
    }

    fn nemesis(dir: &std::path::Path, plan: Vec<PlannedFault>) -> Nemesis {
        let log = EventLog::create(&dir.join("nemesis.jsonl")).unwrap();
        Nemesis::new(plan, log, RunClock::start_now(), 1, 3, 1)
    }

    #[test]
    fn a_heal_that_finds_its_fault_never_took_effect_names_it_and_a_measured_one_is_recorded() {
        use crate::faults::clock_slew::ClockSlew;
        let dir = tempfile::tempdir().unwrap();
        let mut n = nemesis(dir.path(), vec![]);
        let mut planned = step(2000, "nemesis.timeline[2]", Target::Node(3), None);
        planned.fault = Fault::ClockSlew(ClockSlew { rate: 1.05 });
        let active = Active { injection: Injection { fault: planned.fault.clone(), target: "n3".into() }, heal_at_ms: 9000, step: planned };

        // A heal that failed for another reason is an error of the heal, not a claim about the fault.
        let (_, error) = n.heal_outcome(&active, Err(anyhow::anyhow!("docker exec failed")));
        assert_eq!(error.as_deref(), Some("docker exec failed"));
        assert!(n.not_applied().is_empty());

        let (measured, _) = n.heal_outcome(&active, Ok(Some("gained +350.0 ms".into())));
        assert_eq!(with_measured(active.injection.detail(), measured).as_deref(), Some("x1.05; gained +350.0 ms"));
        assert!(n.not_applied().is_empty());

        let never = NotInEffect("gained +0.2 ms (the rate says +350.0 ms): the server's clock did not run at the slew's rate".into());
        let (measured, error) = n.heal_outcome(&active, Err(never.into()));
        assert_eq!(measured, None);
        assert!(error.unwrap().contains("did not run at the slew's rate"));
        assert_eq!(
            n.not_applied(),
            ["nemesis.timeline[2] (clock-slew on n3, due at 2000 ms) did not take effect: gained +0.2 ms (the rate says +350.0 ms): the server's clock did not run at the slew's rate"]
        );
    }

    #[test]
    fn steps_left_at_the_end_are_named_with_why_and_a_fired_random_stream_ends_quietly() {
        let dir = tempfile::tempdir().unwrap();
        let random = |at| step(at, schedule::RANDOM_ORIGIN, Target::Client(2), None);
        let plan = vec![
            step(9000, "nemesis.timeline[0]", Target::Client(1), None),
            step(9100, "nemesis.timeline[1]", Target::Holder, None),
            step(9200, "nemesis.timeline[2]", Target::Client(1), None),
            random(9990),
            step(10_000, "nemesis.timeline[3]", Target::Client(1), None),
        ];
        let mut n = nemesis(dir.path(), plan.clone());
        n.random_fired = true;
        n.drop_unfired(10_000).unwrap();
        let why: Vec<&str> = n.not_applied().iter().map(|w| w.split_once(": ").map_or(w.as_str(), |(_, why)| why)).collect();
        assert_eq!(
            why,
            [
                "the nemesis had not reached it when the workload ended (the workload ended at 10000 ms)",
                "no client entered its critical section after it fell due (the workload ended at 10000 ms)",
                "it waited behind an earlier step that never fired (the workload ended at 10000 ms)",
            ],
            "{:?}",
            n.not_applied()
        );

        // A random step waits while the random fault before it is still on (healed late), and
        // only then: timeline faults do not hold it back.
        let mut n = nemesis(dir.path(), vec![]);
        let on = |step| Active { injection: Injection { fault: Fault::Pause(Pause {}), target: "client-2".into() }, heal_at_ms: 600, step };
        n.active = vec![on(step(100, "nemesis.timeline[0]", Target::Client(2), None))];
        assert!(!n.behind_a_random_fault(&random(500)));
        n.active.push(on(random(100)));
        assert!(n.behind_a_random_fault(&random(500)));
        assert!(!n.behind_a_random_fault(&step(500, "nemesis.timeline[0]", Target::Client(2), None)));

        // A random stream none of whose steps took effect claims nothing it did.
        let mut n = nemesis(dir.path(), vec![random(500), random(9990)]);
        n.drop_unfired(10_000).unwrap();
        assert_eq!(n.not_applied().len(), 2, "{:?}", n.not_applied());
    }
}
