//! The typed event stream of lockchaos's work, nextest-style: runs, series and matrices emit
//! [`Event`]s into an [`EventSink`]; every reporter (terminal progress, plain CI lines, the
//! summary on stdout, JUnit, the store's index, the matrix) consumes them. Nothing about a run
//! is printed or written for people outside a reporter.

use crate::scenario::LoadedScenario;
use results::{FaultPhase, RunResults};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// One thing that happened, in the order it happened.
#[derive(Clone, Debug)]
pub enum Event {
    /// A series of `runs` runs of one scenario begins.
    SeriesStarted { scenario: Arc<LoadedScenario>, runs: u32 },
    /// Run `iteration` (from 1) of `runs` begins.
    RunStarted { scenario: Arc<LoadedScenario>, iteration: u32, runs: u32 },
    /// A stage of the current run begins.
    Stage(Stage),
    /// A line of the node image build's output.
    ImageBuildLine(String),
    /// Workload progress, in milliseconds.
    Workload { elapsed_ms: u64, total_ms: u64 },
    /// A fault was injected or healed (or failed to be: `error`).
    Fault(FaultChange),
    /// A worker was found gone before the workload ended.
    WorkerDied { name: String, exit_code: Option<i64>, at_ms: u64 },
    /// Something a reader should know that is not a fault or a death.
    Warning(String),
    /// A run ended with results (its outcome may be unknown, e.g. when it was interrupted).
    RunFinished { scenario: Arc<LoadedScenario>, iteration: u32, runs: u32, results: Box<RunResults>, dir: PathBuf },
    /// A run could not start or ended in an error; `dir` holds what it saved, if it got that far.
    RunFailed { scenario: Arc<LoadedScenario>, iteration: u32, runs: u32, error: String, dir: Option<PathBuf> },
    /// The series of one scenario is over (all runs done, or stopped by an error).
    SeriesFinished { scenario: Arc<LoadedScenario> },
    /// What an explore campaign is doing, with its counts so far.
    Explore(ExploreNote),
}

/// A line of an explore campaign's progress.
#[derive(Clone, Debug, PartialEq)]
pub struct ExploreNote {
    pub phase: ExplorePhase,
    pub text: String,
    /// Search runs finished, faults injected by them, distinct failures found.
    pub runs: u64,
    pub faults: u64,
    pub found: u64,
}

/// Where an explore campaign is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum ExplorePhase {
    Search,
    Shrink,
    Confirm,
    Done,
}

/// The stages of one run, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Stage {
    /// The node image is checked (and built when missing or out of date).
    Image,
    /// Network, node containers and the resource.
    Provision,
    /// The backend's servers start and answer.
    Backend,
    /// The faults due at 0 ms, and the clients' containers.
    Clients,
    Workload,
    /// The workload's time is up: every fault still active is healed, workers finish.
    Stop,
    Teardown,
    Check,
    Report,
}

impl Stage {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// A fault that started or ended.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultChange {
    /// The fault's name (`pause`, `partition`, …).
    pub fault: &'static str,
    /// The member it acts on (`n1`, `client-2`, `nodes`).
    pub target: String,
    /// Its parameters in words (`+30s every 200 ms`).
    pub detail: Option<String>,
    /// Start or Stop (skipped steps are only recorded in the history).
    pub phase: FaultPhase,
    /// Why the injection or heal failed, when it did.
    pub error: Option<String>,
}

impl fmt::Display for FaultChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.fault, self.phase, self.target)?;
        if let Some(d) = &self.detail {
            write!(f, " ({d})")?;
        }
        if let Some(e) = &self.error {
            write!(f, " failed: {e}")?;
        }
        Ok(())
    }
}

/// A consumer of events. Called in event order, from one event at a time.
pub trait Reporter: Send {
    fn report(&mut self, event: &Event);
    /// All work is done: write files, clear bars. An error here fails the command.
    fn finish(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Where events go: every reporter, in the order they were added. Cheap to clone; clones
/// share the reporters, so a run's spawned tasks report to the same place.
#[derive(Clone, Default)]
pub struct EventSink {
    reporters: Arc<Mutex<Vec<Box<dyn Reporter>>>>,
}

impl EventSink {
    pub fn new(reporters: Vec<Box<dyn Reporter>>) -> Self {
        EventSink { reporters: Arc::new(Mutex::new(reporters)) }
    }

    /// A sink that drops every event (library callers that want no reporting).
    pub fn none() -> Self {
        Self::default()
    }

    pub fn emit(&self, event: Event) {
        for r in self.reporters.lock().expect("reporter lock").iter_mut() {
            r.report(&event);
        }
    }

    /// Finishes every reporter; the first error is returned after all have finished.
    pub fn finish(&self) -> anyhow::Result<()> {
        let mut first = Ok(());
        for r in self.reporters.lock().expect("reporter lock").iter_mut() {
            let result = r.finish();
            if first.is_ok() {
                first = result;
            }
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Arc<Mutex<Vec<String>>>);
    impl Reporter for Collect {
        fn report(&mut self, event: &Event) {
            if let Event::Stage(s) = event {
                self.0.lock().unwrap().push(s.to_string());
            }
        }
    }

    #[test]
    fn every_reporter_sees_every_event_in_order_through_clones_of_the_sink() {
        let (a, b) = (Arc::new(Mutex::new(vec![])), Arc::new(Mutex::new(vec![])));
        let sink = EventSink::new(vec![Box::new(Collect(a.clone())), Box::new(Collect(b.clone()))]);
        let clone = sink.clone();
        sink.emit(Event::Stage(Stage::Provision));
        clone.emit(Event::Stage(Stage::Workload));
        assert_eq!(*a.lock().unwrap(), ["provision", "workload"]);
        assert_eq!(*a.lock().unwrap(), *b.lock().unwrap());
    }

    #[test]
    fn a_fault_change_reads_as_one_line() {
        let mut c = FaultChange {
            fault: "clock-strobe",
            target: "n1".into(),
            detail: Some("+30s every 200 ms".into()),
            phase: FaultPhase::Start,
            error: None,
        };
        assert_eq!(c.to_string(), "clock-strobe start n1 (+30s every 200 ms)");
        c.error = Some("exec failed".into());
        assert_eq!(c.to_string(), "clock-strobe start n1 (+30s every 200 ms) failed: exec failed");
    }
}
