//! Run events and the reporters that consume them (nextest-style: the runner emits typed
//! events; a terminal gets indicatif progress, CI and pipes get plain lines).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Clone, Debug)]
pub enum RunEvent {
    /// A stage of the run begins: "image", "provision", "workload", "stop", "teardown", "check".
    Stage(String),
    /// Workload progress, in milliseconds.
    Workload {
        elapsed_ms: u64,
        total_ms: u64,
    },
    Fault {
        description: String,
    },
    Warning(String),
}

pub trait Reporter: Send + Sync {
    fn event(&self, event: RunEvent);
    /// A bar for long sub-steps that print their own messages (the image build).
    fn spinner(&self) -> ProgressBar;
    fn finish(&self);
}

/// Picks indicatif on an interactive terminal outside CI, plain lines otherwise.
pub fn reporter(quiet: bool) -> Box<dyn Reporter> {
    let interactive = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
    if interactive && !quiet {
        Box::new(TerminalReporter::new())
    } else {
        Box::new(PlainReporter { quiet })
    }
}

pub struct PlainReporter {
    quiet: bool,
}

impl Reporter for PlainReporter {
    fn event(&self, event: RunEvent) {
        if self.quiet {
            if let RunEvent::Warning(w) = event {
                eprintln!("warning: {w}");
            }
            return;
        }
        match event {
            RunEvent::Stage(s) => eprintln!("[lockchaos] {s}"),
            // A plain log gets the workload's start and end only, not a line per tick.
            RunEvent::Workload { .. } => {}
            RunEvent::Fault { description } => eprintln!("[lockchaos] fault: {description}"),
            RunEvent::Warning(w) => eprintln!("[lockchaos] warning: {w}"),
        }
    }
    fn spinner(&self) -> ProgressBar {
        ProgressBar::hidden()
    }
    fn finish(&self) {}
}

pub struct TerminalReporter {
    bar: Mutex<ProgressBar>,
}

impl TerminalReporter {
    fn new() -> Self {
        TerminalReporter { bar: Mutex::new(Self::stage_bar()) }
    }
    fn stage_bar() -> ProgressBar {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(ProgressStyle::with_template("{spinner} {prefix:.bold} {wide_msg}").expect("static template"));
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    }
}

impl Reporter for TerminalReporter {
    fn event(&self, event: RunEvent) {
        let bar = self.bar.lock().expect("reporter lock");
        match event {
            RunEvent::Stage(s) => {
                bar.set_length(0);
                bar.set_style(ProgressStyle::with_template("{spinner} {prefix:.bold} {wide_msg}").expect("static template"));
                bar.set_prefix(s);
                bar.set_message("");
            }
            RunEvent::Workload { elapsed_ms, total_ms } => {
                if bar.length() != Some(total_ms) {
                    bar.set_style(ProgressStyle::with_template("{spinner} {prefix:.bold} [{bar:30}] {msg}").expect("static template"));
                    bar.set_length(total_ms);
                }
                bar.set_position(elapsed_ms.min(total_ms));
                bar.set_message(format!("{:.0} s left", (total_ms.saturating_sub(elapsed_ms)) as f64 / 1000.0));
            }
            RunEvent::Fault { description } => bar.println(format!("  fault: {description}")),
            RunEvent::Warning(w) => bar.println(format!("  warning: {w}")),
        }
    }
    fn spinner(&self) -> ProgressBar {
        self.bar.lock().expect("reporter lock").clone()
    }
    fn finish(&self) {
        self.bar.lock().expect("reporter lock").finish_and_clear();
    }
}
