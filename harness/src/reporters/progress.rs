//! What is happening now, on stderr: indicatif bars on a terminal, plain `[lockchaos]` lines in
//! CI and pipes (one per stage and fault, not one per tick).

use crate::events::{Event, Reporter};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;

/// Bars on an interactive terminal unless `quiet`; plain lines otherwise.
pub fn for_stderr(quiet: bool) -> Box<dyn Reporter> {
    if super::interactive() && !quiet {
        Box::new(Bars::default())
    } else {
        Box::new(Lines { quiet })
    }
}

/// The warnings of an event, if it carries any: a failed fault, a dead worker, a warning.
pub(crate) fn warning(event: &Event) -> Option<String> {
    match event {
        Event::Fault(change) if change.error.is_some() => Some(change.to_string()),
        Event::WorkerDied { name, exit_code, at_ms } => {
            Some(format!("worker {name} died (exit code {exit_code:?}) at {:.1} s", *at_ms as f64 / 1000.0))
        }
        Event::Warning(w) => Some(w.clone()),
        _ => None,
    }
}

/// Plain lines; with `quiet` only warnings.
pub struct Lines {
    pub quiet: bool,
}

impl Reporter for Lines {
    fn report(&mut self, event: &Event) {
        if let Some(w) = warning(event) {
            if self.quiet {
                eprint_line!("warning: {w}");
            } else {
                eprint_line!("[lockchaos] warning: {w}");
            }
            return;
        }
        if self.quiet {
            return;
        }
        match event {
            Event::RunStarted { scenario, iteration, runs } if *runs > 1 => {
                eprint_line!("[lockchaos] {} run {iteration}/{runs}", scenario.name)
            }
            Event::Stage(s) => eprint_line!("[lockchaos] {s}"),
            Event::Fault(change) => eprint_line!("[lockchaos] fault: {change}"),
            // The build's lines are in its log; a plain log gets the workload's start and end
            // only, not a line per tick.
            _ => {}
        }
    }
}

/// One bar: the stage as its prefix, the workload as a bar, faults and warnings printed above.
#[derive(Default)]
pub struct Bars {
    bar: Option<ProgressBar>,
}

const STAGE_TEMPLATE: &str = "{spinner} {prefix:.bold} {wide_msg}";
const WORKLOAD_TEMPLATE: &str = "{spinner} {prefix:.bold} [{bar:30}] {msg}";

impl Bars {
    fn bar(&mut self) -> &ProgressBar {
        self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(ProgressStyle::with_template(STAGE_TEMPLATE).expect("static template"));
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        })
    }

    fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Reporter for Bars {
    fn report(&mut self, event: &Event) {
        if let Some(w) = warning(event) {
            self.bar().println(format!("  warning: {w}"));
            return;
        }
        match event {
            Event::Stage(s) => {
                let bar = self.bar();
                bar.set_length(0);
                bar.set_style(ProgressStyle::with_template(STAGE_TEMPLATE).expect("static template"));
                bar.set_prefix(s.name());
                bar.set_message("");
            }
            Event::ImageBuildLine(line) => self.bar().set_message(line.clone()),
            Event::Workload { elapsed_ms, total_ms } => {
                let bar = self.bar();
                if bar.length() != Some(*total_ms) {
                    bar.set_style(ProgressStyle::with_template(WORKLOAD_TEMPLATE).expect("static template"));
                    bar.set_length(*total_ms);
                }
                bar.set_position((*elapsed_ms).min(*total_ms));
                bar.set_message(format!("{:.0} s left", total_ms.saturating_sub(*elapsed_ms) as f64 / 1000.0));
            }
            Event::Fault(change) => self.bar().println(format!("  fault: {change}")),
            // The summary prints next: clear the bar first so its line is not drawn over.
            Event::RunFinished { .. } | Event::RunFailed { .. } => self.clear(),
            _ => {}
        }
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        self.clear();
        Ok(())
    }
}
