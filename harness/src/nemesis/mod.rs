//! The nemesis: applies the planned faults while the workload runs, reacting to the clients'
//! live phases for triggered steps, runs the episodes one after another (episodes.rs), and heals
//! everything still active at the end.
//!
//! A run never claims more than it saw: a planned fault that did not take effect (its injection
//! failed, its trigger never held while the workload lasted, its target could not be found, the
//! same fault was already on, its episode was never reached) is recorded in the history
//! (`skipped`, or `start` with its error) and named in [`Nemesis::not_applied`], and the run's
//! outcome is then unknown.

mod episodes;
mod targets;

pub use episodes::EpisodeTimings;
use targets::Resolve;

use crate::clock::RunClock;
use crate::event_log::EventLog;
use crate::events::FaultChange;
use crate::faults::{Fault, FaultContext, Injection, NotInEffect};
use crate::live_history::LiveHistory;
use crate::scenario::Trigger;
use crate::schedule::{Plan, PlannedFault};
use crate::target::Target;
use checker::{Event, EventType, Process};
use rand::rngs::StdRng;
use rand::SeedableRng;
use results::FaultPhase;
use std::collections::VecDeque;

struct Active {
    injection: Injection,
    heal_at_ms: u64,
    /// Its step, to name it if its heal finds it never took effect.
    step: PlannedFault,
}

/// A step whose trigger held, waiting out its delay.
struct Delayed {
    step: PlannedFault,
    target: String,
    fire_at_ms: u64,
}

pub struct Nemesis {
    /// Timeline and random steps by time.
    pending: VecDeque<PlannedFault>,
    /// The running episode's steps not yet fired.
    episode_pending: VecDeque<PlannedFault>,
    episodes: episodes::Episodes,
    delayed: Vec<Delayed>,
    /// Run time (ns) at which the workload started: steps' at_ms count from there.
    workload_start_ns: u64,
    /// The (at_ms, episode) of the last triggered step that fired, and the clients (with their
    /// events' times) that fired it: steps due together fire together.
    fired_group: Option<(u64, Option<u32>)>,
    group_firing: Vec<(u64, u64)>,
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

impl Nemesis {
    pub fn new(plan: Plan, timings: EpisodeTimings, log: EventLog, clock: RunClock, seed: u64, clients: u32, nodes: u32) -> Self {
        Nemesis {
            pending: plan.steps.into(),
            episode_pending: VecDeque::new(),
            episodes: episodes::Episodes::new(plan.episodes, timings),
            delayed: vec![],
            workload_start_ns: 0,
            fired_group: None,
            group_firing: vec![],
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

    /// A kill fault is on `member` now: its death is the fault's doing.
    pub fn is_killing(&self, member: &str) -> bool {
        self.active.iter().any(|a| a.injection.target == member && matches!(a.injection.fault, Fault::Kill(_)))
    }

    /// The planned faults that did not take effect, each naming its step and why.
    pub fn not_applied(&self) -> &[String] {
        &self.not_applied
    }

    /// The scenario's episodes are all over (settled, or the rest given up) and nothing else is
    /// planned or on: the workload has nothing left to show and can end before its time limit.
    pub fn is_done(&self) -> bool {
        self.episodes.any
            && self.episodes.finished()
            && self.pending.is_empty()
            && self.episode_pending.is_empty()
            && self.delayed.is_empty()
            && self.active.is_empty()
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
        for d in std::mem::take(&mut self.delayed) {
            if d.fire_at_ms <= now_ms {
                changes.extend(self.fire(ctx, d.step, d.target, now_ms).await?);
            } else {
                self.delayed.push(d);
            }
        }
        let mut pending = std::mem::take(&mut self.pending);
        let fired = self.fire_due(ctx, live, now_ms, &mut pending).await;
        self.pending = pending;
        changes.extend(fired?);
        changes.extend(self.tick_episodes(ctx, live, now_ms).await?);
        Ok(changes)
    }

    /// Moves the episodes along (episodes.rs) and fires the running one's steps.
    async fn tick_episodes(&mut self, ctx: &FaultContext<'_>, live: &LiveHistory, now_ms: u64) -> anyhow::Result<Vec<FaultChange>> {
        let mut changes = vec![];
        loop {
            let mut pending = std::mem::take(&mut self.episode_pending);
            let fired = self.fire_due(ctx, live, now_ms, &mut pending).await;
            self.episode_pending = pending;
            changes.extend(fired?);
            let running = self.episodes.running();
            let in_effect = running.is_some_and(|i| {
                self.delayed.iter().any(|d| d.step.episode == Some(i)) || self.active.iter().any(|a| a.step.episode == Some(i))
            });
            let unfired = !self.episode_pending.is_empty();
            match self.episodes.next(now_ms, self.clock.now(), unfired, in_effect, |since| live.granted_since(since)) {
                episodes::Next::Wait => return Ok(changes),
                episodes::Next::Start(steps) => self.episode_pending.extend(steps),
                episodes::Next::GiveUp { why, rest } => {
                    for step in std::mem::take(&mut self.episode_pending).into_iter().chain(rest) {
                        self.skip(&step, "none", why.clone())?;
                    }
                    return Ok(changes);
                }
            }
        }
    }

    /// Fires the steps of `queue` that are due and whose trigger holds, in order; a step that
    /// must wait holds back the ones behind it.
    async fn fire_due(
        &mut self,
        ctx: &FaultContext<'_>,
        live: &LiveHistory,
        now_ms: u64,
        queue: &mut VecDeque<PlannedFault>,
    ) -> anyhow::Result<Vec<FaultChange>> {
        let mut changes = vec![];
        while let Some(step) = queue.front().cloned() {
            if step.at_ms > now_ms || self.behind_a_random_fault(&step) {
                break;
            }
            let (trigger, firing) = self.firing(&step, live);
            let (target, trigger_ns) = match self.resolve(ctx, &step, trigger, &firing, live, now_ms).await? {
                Resolve::Wait => break, // later steps wait behind this one
                Resolve::Give(why) => {
                    queue.pop_front();
                    self.skip(&step, "none", why)?;
                    continue;
                }
                Resolve::Target(target, trigger_ns) => (target, trigger_ns),
            };
            queue.pop_front();
            if trigger.is_some() {
                self.fired_group = Some((step.at_ms, step.episode));
                self.group_firing = firing;
            }
            // A delay counts from the trigger's own event, or from when the step fell due.
            let from_ms = trigger_ns.map_or(step.at_ms, |ns| ns.saturating_sub(self.workload_start_ns) / 1_000_000);
            let fire_at_ms = from_ms + step.delay_ms;
            if fire_at_ms > now_ms {
                self.delayed.push(Delayed { step, target, fire_at_ms });
                continue;
            }
            changes.extend(self.fire(ctx, step, target, now_ms).await?);
        }
        Ok(changes)
    }

    /// Injects `step` on `target` now, unless the same fault is already on there.
    async fn fire(
        &mut self,
        ctx: &FaultContext<'_>,
        step: PlannedFault,
        target: String,
        now_ms: u64,
    ) -> anyhow::Result<Option<FaultChange>> {
        let injection = Injection { fault: step.fault.clone(), target };
        if self.active.iter().any(|a| a.injection == injection) {
            self.skip(&step, &injection.target, "the same fault is already on".into())?;
            return Ok(None);
        }
        let change = self.inject(ctx, &injection, step.episode).await?;
        self.random_fired |= step.from_random_schedule() && change.error.is_none();
        if let Some(e) = &change.error {
            self.not_applied.push(describe(&step, &injection.target, &format!("its injection failed: {e}")));
        }
        self.active.push(Active { injection, heal_at_ms: now_ms + step.duration_ms, step });
        Ok(Some(change))
    }

    /// A random schedule's faults follow one another: the next is due `interval` after the
    /// previous one's planned end. On a loaded machine the previous one may have been injected,
    /// and so heal, late; the next then waits for that heal instead of finding its fault still
    /// on (and being skipped, which would make the run unknown for the machine's slowness).
    /// Steps queued behind it wait too, by as much, as behind any step not yet fired.
    fn behind_a_random_fault(&self, step: &PlannedFault) -> bool {
        step.from_random_schedule() && self.active.iter().any(|a| a.step.from_random_schedule())
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

    /// The steps not fired at the end (see [`Nemesis::heal_all`]): each one due before
    /// `ended_ms` is recorded as skipped, with why, unless it is part of a random stream that
    /// did fire; so are the episodes not reached and the steps still waiting out their delay.
    fn drop_unfired(&mut self, ended_ms: u64) -> anyhow::Result<()> {
        let mut behind_a_trigger = false;
        let ended = format!("(the workload ended at {ended_ms} ms)");
        for step in std::mem::take(&mut self.pending) {
            if step.at_ms >= ended_ms || (step.from_random_schedule() && step.when.is_none() && self.random_fired) {
                continue;
            }
            let why = match unfired_trigger(&step) {
                Some(why) => why,
                None if behind_a_trigger => "it waited behind an earlier step that never fired".into(),
                None => "the nemesis had not reached it when the workload ended".into(),
            };
            behind_a_trigger |= step.when.is_some() || step.target.implied_trigger().is_some() || step.target == Target::Leader;
            self.skip(&step, "none", format!("{why} {ended}"))?;
        }
        for d in std::mem::take(&mut self.delayed) {
            self.skip(&d.step, &d.target, format!("its trigger held but its delay of {} ms had not passed {ended}", d.step.delay_ms))?;
        }
        for step in std::mem::take(&mut self.episode_pending) {
            let why = unfired_trigger(&step).unwrap_or_else(|| "the nemesis had not reached it when the workload ended".into());
            self.skip(&step, "none", format!("{why} {ended}"))?;
        }
        for step in self.episodes.take_unstarted() {
            self.skip(&step, "none", format!("not reached: the episodes before it had not settled {ended}"))?;
        }
        Ok(())
    }

    /// Records a step that did not take effect.
    fn skip(&mut self, step: &PlannedFault, target: &str, why: String) -> anyhow::Result<()> {
        self.not_applied.push(describe(step, target, &why));
        let injection = Injection { fault: step.fault.clone(), target: target.to_string() };
        self.record(&injection, step.episode, injection.detail(), FaultPhase::Skipped, Some(why))
    }

    async fn inject(&mut self, ctx: &FaultContext<'_>, inj: &Injection, episode: Option<u32>) -> anyhow::Result<FaultChange> {
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
        self.record_at(sent, inj, episode, detail.clone(), FaultPhase::Start, error.clone())?;
        Ok(FaultChange { fault: inj.fault.name(), target: inj.target.clone(), detail, phase: FaultPhase::Start, error })
    }

    async fn heal(&mut self, ctx: &FaultContext<'_>, a: &Active) -> anyhow::Result<FaultChange> {
        let inj = &a.injection;
        let result = inj.fault.action().heal_measured(ctx, &inj.target).await;
        let (measured, error) = self.heal_outcome(a, result);
        let detail = with_measured(inj.detail(), measured);
        self.record(inj, a.step.episode, detail.clone(), FaultPhase::Stop, error.clone())?;
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

    fn record(
        &mut self,
        inj: &Injection,
        episode: Option<u32>,
        detail: Option<String>,
        phase: FaultPhase,
        error: Option<String>,
    ) -> anyhow::Result<()> {
        self.record_at(self.clock.now(), inj, episode, detail, phase, error)
    }

    fn record_at(
        &mut self,
        time: u64,
        inj: &Injection,
        episode: Option<u32>,
        detail: Option<String>,
        phase: FaultPhase,
        error: Option<String>,
    ) -> anyhow::Result<()> {
        let mut ev = Event::new(time, Process::Named(Process::NEMESIS.into()), EventType::Info, inj.fault.name());
        ev.node = Some(inj.target.clone());
        ev.detail = detail;
        ev.value = phase.into();
        ev.error = error;
        ev.episode = episode;
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

/// Why a step waiting for its trigger at the end never fired, if it waits for one.
fn unfired_trigger(step: &PlannedFault) -> Option<String> {
    let after = "after it fell due";
    let (who, never) = match step.by {
        Some(k) => (format!("client-{k}"), " never"),
        None => ("no client".to_string(), ""),
    };
    Some(match step.when.or_else(|| step.target.implied_trigger())? {
        Trigger::Waiting => format!("{who}{never} waited for the lock while another held it {after}"),
        Trigger::Acquired if step.by.is_some() => format!("{who} was never granted the lock {after}"),
        Trigger::Acquired => format!("{who} was granted the lock {after}"),
        Trigger::InSection => format!("{who}{never} entered its critical section {after}"),
        Trigger::AfterCheck => format!("{who}{never} checked its lock before a write {after}"),
        Trigger::RenewSent => format!("{who}{never} sent a renewal {after}"),
        Trigger::WriteSent => format!("{who}{never} sent a write {after}"),
        Trigger::ReleaseSent => format!("{who}{never} sent a release {after}"),
    })
}

/// `nemesis.timeline[1] (clock-strobe on n1, due at 3000 ms) did not take effect: …`
fn describe(step: &PlannedFault, target: &str, why: &str) -> String {
    let on = if target == "none" { step.target.to_string() } else { target.to_string() };
    format!("{} ({} on {on}, due at {} ms) did not take effect: {why}", step.origin, step.fault.name(), step.at_ms)
}

#[cfg(test)]
mod tests;
