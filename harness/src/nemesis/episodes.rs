//! Episodes, one after another, as Jepsen's nemesis cycles: an episode falls due, waits for its
//! trigger, is injected (its steps, one per target, fire together), healed, and settles; then
//! the next falls due. This file is the sequence's state; the nemesis (mod.rs) fires and heals
//! the steps as it does any other.
//!
//! Settling: the episode is over once some client is granted the lock on an acquire it sent
//! after the heal (the lock works again), or, when none is, after `settle_bound_ms`: the lock
//! did not come back, and no later episode could learn more, so the rest are given up (and the
//! stuck stretch the checker then sees is the finding). An episode whose trigger does not hold
//! within `trigger_wait_ms` of falling due is given up the same way.

use crate::schedule::PlannedFault;
use std::collections::VecDeque;

/// How long an episode may wait: for its trigger, and for the lock to come back after its heal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpisodeTimings {
    pub trigger_wait_ms: u64,
    pub settle_bound_ms: u64,
}

impl EpisodeTimings {
    /// Both bounds from the run's stuck bound (the checker's) plus a round of work: an episode
    /// that gives up has waited long enough for a stuck lock to be seen as stuck.
    pub fn from_stuck_bound(stuck_bound_ms: u64, round_ms: u64) -> Self {
        let wait = stuck_bound_ms + round_ms + 2000;
        EpisodeTimings { trigger_wait_ms: wait, settle_bound_ms: wait }
    }
}

/// Where the sequence is, in workload milliseconds (and run nanoseconds for a heal, which a
/// grant's send time is compared with).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// The next episode is due from this moment: its trigger counts events from then.
    Due(u64),
    /// Episode `index`, due since `due_ms`, is in the nemesis's hands.
    Running { index: u32, due_ms: u64 },
    /// Healed at this moment; waiting for the lock to be granted again.
    Settling { index: u32, healed_ms: u64, healed_ns: u64 },
    /// Every episode is over, or the rest were given up, at this moment.
    Finished(u64),
}

pub struct Episodes {
    queue: VecDeque<Vec<PlannedFault>>,
    pub state: State,
    pub timings: EpisodeTimings,
    /// Whether the scenario has any: a run without episodes never ends on their account.
    pub any: bool,
}

/// What the nemesis should do about the sequence now.
#[derive(Debug, PartialEq)]
pub enum Next {
    /// Nothing changes.
    Wait,
    /// These steps fall due now (at_ms set): fire them as their trigger allows.
    Start(Vec<PlannedFault>),
    /// Give up the running episode's unfired steps and every later episode's, with why.
    GiveUp { why: String, rest: Vec<PlannedFault> },
}

impl Episodes {
    pub fn new(episodes: Vec<Vec<PlannedFault>>, timings: EpisodeTimings) -> Self {
        let any = !episodes.is_empty();
        Episodes { queue: episodes.into(), state: State::Due(0), timings, any }
    }

    /// Whether the sequence is over.
    pub fn finished(&self) -> bool {
        matches!(self.state, State::Finished(_))
    }

    /// The running episode's index, if one runs (for its steps' bookkeeping).
    pub fn running(&self) -> Option<u32> {
        match self.state {
            State::Running { index, .. } => Some(index),
            _ => None,
        }
    }

    /// One step of the sequence at `now_ms`. `unfired`: the running episode still has steps
    /// waiting for their trigger; `in_effect`: it has steps delayed or active; `granted_since`:
    /// whether the lock was granted on an acquire sent at or after a run time (ns).
    pub fn next(&mut self, now_ms: u64, now_ns: u64, unfired: bool, in_effect: bool, granted_since: impl Fn(u64) -> bool) -> Next {
        match self.state {
            State::Finished(_) => Next::Wait,
            State::Due(since_ms) => match self.queue.pop_front() {
                None => {
                    self.state = State::Finished(now_ms);
                    Next::Wait
                }
                Some(mut steps) => {
                    let index = steps.first().and_then(|s| s.episode).unwrap_or_default();
                    for s in &mut steps {
                        s.at_ms = since_ms;
                    }
                    self.state = State::Running { index, due_ms: since_ms };
                    Next::Start(steps)
                }
            },
            State::Running { index, due_ms } => {
                if unfired && now_ms >= due_ms + self.timings.trigger_wait_ms {
                    let why = format!("its trigger did not hold within {} ms of the episode falling due", self.timings.trigger_wait_ms);
                    return self.give_up(now_ms, why);
                }
                if !unfired && !in_effect {
                    self.state = State::Settling { index, healed_ms: now_ms, healed_ns: now_ns };
                }
                Next::Wait
            }
            State::Settling { index, healed_ms, healed_ns } => {
                if granted_since(healed_ns) {
                    self.state = State::Due(now_ms);
                    // The next one may fall due in the same tick.
                    return self.next(now_ms, now_ns, false, false, granted_since);
                }
                if now_ms >= healed_ms + self.timings.settle_bound_ms {
                    let why = format!(
                        "not reached: nobody was granted the lock within {} ms of nemesis.episode[{index}]'s heal",
                        self.timings.settle_bound_ms
                    );
                    return self.give_up(now_ms, why);
                }
                Next::Wait
            }
        }
    }

    fn give_up(&mut self, now_ms: u64, why: String) -> Next {
        self.state = State::Finished(now_ms);
        let rest = self.queue.drain(..).flatten().collect();
        Next::GiveUp { why, rest }
    }

    /// The episodes never started, at the workload's end.
    pub fn take_unstarted(&mut self) -> Vec<PlannedFault> {
        self.queue.drain(..).flatten().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::{pause::Pause, Fault};
    use crate::target::Target;

    fn episode(index: u32, targets: &[u32]) -> Vec<PlannedFault> {
        targets
            .iter()
            .map(|k| PlannedFault {
                at_ms: 0,
                fault: Fault::Pause(Pause {}),
                target: Target::Client(*k),
                duration_ms: 100,
                when: None,
                by: None,
                origin: format!("nemesis.episode[{index}]"),
                drawn_from: None,
                delay_ms: 0,
                episode: Some(index),
            })
            .collect()
    }

    const TIMINGS: EpisodeTimings = EpisodeTimings { trigger_wait_ms: 1000, settle_bound_ms: 5000 };

    #[test]
    fn an_episode_settles_on_a_grant_sent_after_its_heal_and_the_next_falls_due_then() {
        let mut e = Episodes::new(vec![episode(0, &[1, 2]), episode(1, &[1])], TIMINGS);
        let Next::Start(first) = e.next(0, 0, false, false, |_| false) else { panic!() };
        assert_eq!((first.len(), first[0].at_ms), (2, 0));
        assert_eq!(e.next(100, 100, false, true, |_| false), Next::Wait, "still in effect");
        assert_eq!(e.next(300, 300_000_000, false, false, |_| false), Next::Wait, "healed: settling");
        assert_eq!(e.state, State::Settling { index: 0, healed_ms: 300, healed_ns: 300_000_000 });
        // A grant on an acquire sent before the heal does not settle it.
        let granted_after = |sent: u64| move |since: u64| sent >= since;
        assert_eq!(e.next(400, 400_000_000, false, false, granted_after(200_000_000)), Next::Wait);
        let Next::Start(second) = e.next(900, 900_000_000, false, false, granted_after(350_000_000)) else { panic!() };
        assert_eq!((second[0].at_ms, second[0].episode), (900, Some(1)));
        assert_eq!(e.running(), Some(1));
        e.next(950, 950_000_000, false, false, |_| false);
        assert_eq!(e.next(1000, 1_000_000_000, false, false, |_| true), Next::Wait);
        assert_eq!(e.state, State::Finished(1000));
        assert!(e.finished());
    }

    #[test]
    fn a_trigger_that_never_holds_or_a_lock_that_never_comes_back_gives_up_the_rest() {
        let mut e = Episodes::new(vec![episode(0, &[1]), episode(1, &[2]), episode(2, &[1])], TIMINGS);
        e.next(0, 0, false, false, |_| false);
        assert_eq!(e.next(999, 0, true, false, |_| false), Next::Wait);
        let Next::GiveUp { why, rest } = e.next(1000, 0, true, false, |_| false) else { panic!() };
        assert!(why.starts_with("its trigger did not hold within 1000 ms"), "{why}");
        assert_eq!(rest.iter().map(|s| s.episode).collect::<Vec<_>>(), [Some(1), Some(2)]);
        assert_eq!(e.state, State::Finished(1000));

        let mut e = Episodes::new(vec![episode(0, &[1]), episode(1, &[2])], TIMINGS);
        e.next(0, 0, false, false, |_| false);
        e.next(200, 200, false, false, |_| false);
        assert_eq!(e.next(5199, 0, false, false, |_| false), Next::Wait);
        let Next::GiveUp { why, rest } = e.next(5200, 0, false, false, |_| false) else { panic!() };
        assert!(why.contains("within 5000 ms of nemesis.episode[0]'s heal"), "{why}");
        assert_eq!(rest.len(), 1);
    }

    #[test]
    fn no_episodes_finish_at_once_but_say_there_were_none() {
        let mut e = Episodes::new(vec![], TIMINGS);
        assert_eq!(e.next(0, 0, false, false, |_| false), Next::Wait);
        assert!(e.finished() && !e.any);
    }
}
