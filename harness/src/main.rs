//! `lockchaos`: the command line. One file per command under cli/, each a thin layer over the
//! harness library. Exit status: 0 when every run matched its scenario's `expect`, 1 when one
//! did not, 2 when one ended unknown, and on error; 3 when nothing ran (a matrix shard that holds
//! no run, a `matrix merge` with nothing to merge).

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    // Library logs (tracing) go to stderr, warnings and up unless RUST_LOG says otherwise; colour
    // only on a terminal (a worker's stderr is its log file in the run folder).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    match runtime.block_on(args.command.run()) {
        Ok(code) => code,
        Err(e) => {
            harness::eprint_line!("error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::from(2)
        }
    }
}
