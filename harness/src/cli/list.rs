//! `lockchaos list`: the scenarios, with their expectations and descriptions; a scenario with
//! `[[client.versions]]` as one line per version, as the matrix runs it; a broken file is listed
//! as its one-line error.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Scenario folder (default: ./scenarios, else the one in the source tree).
    #[arg(long)]
    dir: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut entries = vec![];
    for entry in harness::scenario_catalog::list(args.dir.as_deref())? {
        match entry.map(harness::scenario::versions::expand) {
            Ok(Ok(versions)) => entries.extend(versions.into_iter().map(Ok)),
            Ok(Err(e)) => entries.push(Err(e)),
            Err(e) => entries.push(Err(e.into())),
        }
    }
    let width = entries.iter().filter_map(|e| e.as_ref().ok()).map(|s| s.name.as_str().len()).max().unwrap_or(0);
    for entry in entries {
        match entry {
            Ok(s) => harness::print_line!("{:<width$} {:<10} {}", s.name, s.scenario.expect.to_string(), s.scenario.description),
            Err(e) => harness::print_line!("{e}"),
        }
    }
    Ok(ExitCode::SUCCESS)
}
