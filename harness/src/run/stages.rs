//! How long each stage of a run took, written into run.json (`stages`) when the run ends: where
//! a run's time goes beside the workload itself (the overhead figures in BENCHMARKS.md).

use crate::events::{Event, EventSink, Stage};
use serde::Serialize;
use std::sync::Mutex;
use std::time::Instant;

/// The stages entered so far, each with when it began.
pub struct StageTimes {
    entered: Mutex<Vec<(Stage, Instant)>>,
}

/// One stage: from its start to the next stage's start (the last: to the run's end).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct StageDuration {
    pub stage: &'static str,
    pub secs: f64,
}

impl StageTimes {
    /// The first stage began at `at` (before the run had anywhere to keep this).
    pub fn new(first: Stage, at: Instant) -> Self {
        StageTimes { entered: Mutex::new(vec![(first, at)]) }
    }

    /// Enters `stage`: says so on the event stream and notes the time.
    pub fn enter(&self, events: &EventSink, stage: Stage) {
        self.entered.lock().expect("stage lock").push((stage, Instant::now()));
        events.emit(Event::Stage(stage));
    }

    /// Each stage's duration, the last one ending at `end`.
    pub fn durations(&self, end: Instant) -> Vec<StageDuration> {
        let entered = self.entered.lock().expect("stage lock");
        let ends = entered.iter().skip(1).map(|(_, at)| *at).chain(std::iter::once(end));
        entered
            .iter()
            .zip(ends)
            .map(|((stage, from), to)| StageDuration { stage: stage.name(), secs: to.saturating_duration_since(*from).as_secs_f64() })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_stage_lasts_until_the_next_and_the_last_until_the_end() {
        let t0 = Instant::now();
        let times = StageTimes::new(Stage::Image, t0);
        times.entered.lock().unwrap().push((Stage::Provision, t0 + Duration::from_millis(500)));
        times.entered.lock().unwrap().push((Stage::Workload, t0 + Duration::from_millis(2500)));
        let d = times.durations(t0 + Duration::from_millis(3000));
        let got: Vec<(&str, u64)> = d.iter().map(|s| (s.stage, (s.secs * 1000.0).round() as u64)).collect();
        assert_eq!(got, [("image", 500), ("provision", 2000), ("workload", 500)]);
    }
}
