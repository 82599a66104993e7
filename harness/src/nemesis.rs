//! The nemesis: applies the planned faults while the workload runs, reacting to live client
//! phases for `holder` targets, and heals everything still active at the end.

use crate::clock::RunClock;
use crate::event_log::EventLog;
use crate::events::FaultChange;
use crate::faults::{FaultContext, Injection};
use crate::live_history::{LiveHistory, Phase};
use crate::scenario::Trigger;
use crate::schedule::PlannedFault;
use crate::target::Target;
use checker::{Event, EventType, Process};
use results::FaultPhase;
use std::collections::VecDeque;

/// How long a `holder` or `when = "in-section"` step waits for a client to enter its section.
const HOLDER_WAIT_MS: u64 = 5000;

struct Active {
    injection: Injection,
    heal_at_ms: u64,
}

pub struct Nemesis {
    pending: VecDeque<PlannedFault>,
    /// Run time (ns) at which the workload started: steps' at_ms count from there.
    workload_start_ns: u64,
    /// at_ms of the last triggered step that fired, and the clients in section then.
    fired_group: Option<u64>,
    group_holders: Vec<u64>,
    active: Vec<Active>,
    log: EventLog,
    clock: RunClock,
}

impl Nemesis {
    pub fn new(plan: Vec<PlannedFault>, log: EventLog, clock: RunClock) -> Self {
        Nemesis { pending: plan.into(), workload_start_ns: 0, fired_group: None, group_holders: vec![], active: vec![], log, clock }
    }

    pub fn set_workload_start(&mut self, run_time_ns: u64) {
        self.workload_start_ns = run_time_ns;
    }

    /// Starts due faults and heals expired ones; `now_ms` counts from the workload's start.
    pub async fn tick(&mut self, ctx: &FaultContext<'_>, live: &LiveHistory, now_ms: u64) -> anyhow::Result<Vec<FaultChange>> {
        let mut changes = vec![];
        let mut still_active = vec![];
        for a in std::mem::take(&mut self.active) {
            if a.heal_at_ms <= now_ms {
                changes.push(self.heal(ctx, &a.injection).await?);
            } else {
                still_active.push(a);
            }
        }
        self.active = still_active;
        while let Some(step) = self.pending.front().cloned() {
            if step.at_ms > now_ms {
                break;
            }
            // A section-triggered step fires when a client *enters* its critical section after
            // the step fell due, so the fault gets the whole section (work_ms), not its tail.
            // Steps due at the same time share one trigger: they fire together.
            let trigger = match step.when {
                None if step.target == Target::Holder => Some(Trigger::InSection),
                when => when,
            };
            let triggered = trigger.is_some();
            let since = self.workload_start_ns + step.at_ms * 1_000_000;
            let section: Vec<u64> = match trigger {
                None => vec![],
                Some(_) if self.fired_group == Some(step.at_ms) => self.group_holders.clone(),
                Some(Trigger::Acquired) => live.acquired_since(since),
                Some(Trigger::InSection) => live.entered_since(Phase::InSection, since),
                Some(Trigger::AfterCheck) => live.entered_since(Phase::Checked, since),
            };
            let section: Vec<u64> = section.into_iter().filter(|c| step.by.is_none_or(|b| b == *c)).collect();
            let waiting = triggered && section.is_empty();
            let target = match &step.target {
                _ if waiting => None,
                Target::Client(k) => Some(format!("client-{k}")),
                Target::Node(k) => Some(format!("n{k}")),
                Target::Leader => match ctx.backend.leader() {
                    Ok(leader) => leader.leader(ctx.cluster).await?,
                    Err(why) => anyhow::bail!("target leader: {why}"),
                },
                Target::Holder => section.first().map(|c| format!("client-{c}")),
                Target::AllNodes => Some("nodes".into()),
                Target::RandomClient | Target::RandomNode => unreachable!("schedule::plan draws random targets"),
            };
            let Some(target) = target else {
                if now_ms < step.at_ms + HOLDER_WAIT_MS {
                    break; // wait for a holder; later steps wait behind this one
                }
                self.pending.pop_front();
                let injection = Injection { fault: step.fault.clone(), target: "none".into() };
                let why = if triggered {
                    let who = step.by.map_or("no client".to_string(), |b| format!("client-{b} never"));
                    let what = match trigger {
                        Some(Trigger::Acquired) => "was granted the lock",
                        Some(Trigger::AfterCheck) => "checked its lock before a write",
                        _ => "entered its critical section",
                    };
                    format!("{who} {what} within {HOLDER_WAIT_MS} ms")
                } else {
                    format!("no {} found within {HOLDER_WAIT_MS} ms", step.target)
                };
                self.record(&injection, FaultPhase::Skipped, Some(why))?;
                continue;
            };
            self.pending.pop_front();
            if triggered {
                self.fired_group = Some(step.at_ms);
                self.group_holders = section;
            }
            let injection = Injection { fault: step.fault, target };
            if self.active.iter().any(|a| a.injection == injection) {
                self.record(&injection, FaultPhase::Skipped, Some("already active".into()))?;
                continue;
            }
            changes.push(self.inject(ctx, &injection).await?);
            self.active.push(Active { injection, heal_at_ms: now_ms + step.duration_ms });
        }
        Ok(changes)
    }

    /// Heals every active fault (end of the workload, error or abort) and drops pending ones.
    pub async fn heal_all(&mut self, ctx: &FaultContext<'_>) -> anyhow::Result<Vec<FaultChange>> {
        self.pending.clear();
        let mut changes = vec![];
        for a in std::mem::take(&mut self.active) {
            changes.push(self.heal(ctx, &a.injection).await?);
        }
        Ok(changes)
    }

    async fn inject(&mut self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<FaultChange> {
        let result = inj.fault.action().inject(ctx, &inj.target).await;
        let error = result.err().map(|e| format!("{e:#}"));
        self.record(inj, FaultPhase::Start, error.clone())?;
        Ok(FaultChange { fault: inj.fault.name(), target: inj.target.clone(), detail: inj.detail(), phase: FaultPhase::Start, error })
    }

    async fn heal(&mut self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<FaultChange> {
        let result = inj.fault.action().heal(ctx, &inj.target).await;
        let error = result.err().map(|e| format!("{e:#}"));
        self.record(inj, FaultPhase::Stop, error.clone())?;
        Ok(FaultChange { fault: inj.fault.name(), target: inj.target.clone(), detail: inj.detail(), phase: FaultPhase::Stop, error })
    }

    fn record(&mut self, inj: &Injection, phase: FaultPhase, error: Option<String>) -> anyhow::Result<()> {
        let mut ev = Event::new(self.clock.now(), Process::Named(Process::NEMESIS.into()), EventType::Info, inj.fault.name());
        ev.node = Some(inj.target.clone());
        ev.detail = inj.detail();
        ev.value = phase.into();
        ev.error = error;
        self.log.append(ev)?;
        Ok(())
    }
}
