//! `--junit FILE`: one test case per finished run, written when the work is done.

use crate::events::{Event, Reporter};
use anyhow::Context;
use results::RunResults;
use std::path::PathBuf;

pub struct Junit {
    file: PathBuf,
    runs: Vec<RunResults>,
}

impl Junit {
    pub fn new(file: PathBuf) -> Self {
        Junit { file, runs: vec![] }
    }
}

impl Reporter for Junit {
    fn report(&mut self, event: &Event) {
        if let Event::RunFinished { results, .. } = event {
            self.runs.push((**results).clone());
        }
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        std::fs::write(&self.file, reports::junit::junit_xml("lockchaos", &self.runs))
            .with_context(|| format!("cannot write JUnit XML to {}", self.file.display()))
    }
}
