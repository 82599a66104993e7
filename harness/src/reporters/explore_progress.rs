//! An explore campaign's progress on stderr: one bar on a terminal (the phase, runs, faults
//! tried, failures found, and what is happening), plain `[lockchaos] explore …` lines in CI and
//! pipes. The campaign's runs report their own stages too; this reporter shows none of them,
//! only their warnings: hundreds of runs would bury the search's own lines.

use super::progress::warning;
use crate::events::{Event, ExploreNote, Reporter};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;

pub fn for_stderr(quiet: bool) -> Box<dyn Reporter> {
    if super::interactive() && !quiet {
        Box::new(Bar::default())
    } else {
        Box::new(Lines { quiet })
    }
}

fn counts(n: &ExploreNote) -> String {
    format!("{} runs · {} faults · {} found", n.runs, n.faults, n.found)
}

pub struct Lines {
    quiet: bool,
}

impl Reporter for Lines {
    fn report(&mut self, event: &Event) {
        match event {
            Event::Explore(n) if !self.quiet || n.phase == crate::events::ExplorePhase::Done => {
                eprint_line!("[lockchaos] explore {} ({}): {}", n.phase, counts(n), n.text)
            }
            e => {
                if let Some(w) = warning(e) {
                    eprint_line!("[lockchaos] warning: {w}");
                }
            }
        }
    }
}

#[derive(Default)]
pub struct Bar {
    bar: Option<ProgressBar>,
}

impl Reporter for Bar {
    fn report(&mut self, event: &Event) {
        let bar = self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(ProgressStyle::with_template("{spinner} {prefix:.bold} {wide_msg}").expect("static template"));
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        match event {
            Event::Explore(n) => {
                bar.set_prefix(format!("explore {} · {}", n.phase, counts(n)));
                bar.set_message(n.text.clone());
                if n.text.starts_with("found") || n.text.contains("reproduced in") {
                    bar.println(format!("  {}", n.text));
                }
            }
            Event::Stage(s) => bar.set_message(format!("run: {s}")),
            e => {
                if let Some(w) = warning(e) {
                    bar.println(format!("  warning: {w}"));
                }
            }
        }
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        Ok(())
    }
}
