//! The nemesis: applies the planned faults while the workload runs, reacting to live client
//! phases for `holder` targets, and heals everything still active at the end.

use crate::clock::RunClock;
use crate::containers::Cluster;
use crate::event_log::EventLog;
use crate::faults::fault_for;
use crate::live_history::LiveHistory;
use crate::schedule::PlannedFault;
use crate::scenario::{FaultKind, Target};
use checker::{Event, EventType, Process};
use std::collections::VecDeque;

/// How long a `holder` step waits for a client to enter its critical section.
const HOLDER_WAIT_MS: u64 = 5000;

struct Active {
    fault: FaultKind,
    target: String,
    heal_at_ms: u64,
}

/// A fault that started or ended, for the run's reporter.
#[derive(Clone, Debug)]
pub struct FaultChange {
    pub fault: FaultKind,
    pub target: String,
    pub started: bool,
    pub error: Option<String>,
}

pub struct Nemesis {
    pending: VecDeque<PlannedFault>,
    active: Vec<Active>,
    log: EventLog,
    clock: RunClock,
}

impl Nemesis {
    pub fn new(plan: Vec<PlannedFault>, log: EventLog, clock: RunClock) -> Self {
        Nemesis { pending: plan.into(), active: vec![], log, clock }
    }

    /// Starts due faults and heals expired ones; `now_ms` counts from the workload's start.
    pub async fn tick(&mut self, cluster: &Cluster, live: &LiveHistory, now_ms: u64) -> anyhow::Result<Vec<FaultChange>> {
        let mut changes = vec![];
        let mut still_active = vec![];
        for a in std::mem::take(&mut self.active) {
            if a.heal_at_ms <= now_ms {
                changes.push(self.heal(cluster, a.fault, &a.target).await?);
            } else {
                still_active.push(a);
            }
        }
        self.active = still_active;
        while let Some(step) = self.pending.front().cloned() {
            if step.at_ms > now_ms {
                break;
            }
            let target = match &step.target {
                Target::Client(k) => Some(format!("client-{k}")),
                Target::Holder => live.in_section().first().map(|c| format!("client-{c}")),
                Target::RandomClient => unreachable!("schedule::plan draws random targets"),
            };
            let Some(target) = target else {
                if now_ms < step.at_ms + HOLDER_WAIT_MS {
                    break; // wait for a holder; later steps wait behind this one
                }
                self.pending.pop_front();
                self.record(step.fault, "none", "skipped", Some(format!("no client entered its critical section within {HOLDER_WAIT_MS} ms")))?;
                continue;
            };
            self.pending.pop_front();
            if self.active.iter().any(|a| a.target == target && a.fault == step.fault) {
                self.record(step.fault, &target, "skipped", Some("already active on this target".into()))?;
                continue;
            }
            changes.push(self.inject(cluster, step.fault, &target).await?);
            self.active.push(Active { fault: step.fault, target, heal_at_ms: now_ms + step.duration_ms });
        }
        Ok(changes)
    }

    /// Heals every active fault (end of the workload, error or abort) and drops pending ones.
    pub async fn heal_all(&mut self, cluster: &Cluster) -> anyhow::Result<Vec<FaultChange>> {
        self.pending.clear();
        let mut changes = vec![];
        for a in std::mem::take(&mut self.active) {
            changes.push(self.heal(cluster, a.fault, &a.target).await?);
        }
        Ok(changes)
    }

    async fn inject(&mut self, cluster: &Cluster, fault: FaultKind, target: &str) -> anyhow::Result<FaultChange> {
        let result = fault_for(fault).inject(cluster, target).await;
        let error = result.err().map(|e| format!("{e:#}"));
        self.record(fault, target, "start", error.clone())?;
        Ok(FaultChange { fault, target: target.into(), started: true, error })
    }

    async fn heal(&mut self, cluster: &Cluster, fault: FaultKind, target: &str) -> anyhow::Result<FaultChange> {
        let result = fault_for(fault).heal(cluster, target).await;
        let error = result.err().map(|e| format!("{e:#}"));
        self.record(fault, target, "stop", error.clone())?;
        Ok(FaultChange { fault, target: target.into(), started: false, error })
    }

    fn record(&mut self, fault: FaultKind, target: &str, phase: &str, error: Option<String>) -> anyhow::Result<()> {
        let mut ev = Event::new(self.clock.now(), Process::Named(Process::NEMESIS.into()), EventType::Info, fault.name());
        ev.node = Some(target.to_string());
        ev.value = phase.into();
        ev.error = error;
        self.log.append(ev)?;
        Ok(())
    }
}
