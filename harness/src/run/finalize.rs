//! What every run leaves in its folder, whichever way it ended.

use super::{RunContext, RunError, WorkloadRecord};
use crate::run_verdict::{self, RunEnding};
use results::RunResults;

/// The scenario as run: the file's text, and the effective parameters after overrides.
pub fn write_inputs(ctx: &RunContext) -> anyhow::Result<()> {
    std::fs::write(ctx.dir.file("scenario.toml"), &ctx.loaded.text)?;
    let mut effective = ctx.loaded.scenario.clone();
    effective.seed = Some(ctx.seed);
    let run = serde_json::json!({
        "run_id": ctx.dir.run_id,
        "scenario": ctx.loaded.name,
        "scenario_file": ctx.loaded.path,
        "started_at": ctx.dir.started.to_rfc3339(),
        "seed": ctx.seed,
        "effective": effective,
        "lockchaos_version": env!("CARGO_PKG_VERSION"),
        "client_env": ctx.client_env.record(),
    });
    std::fs::write(ctx.dir.file("run.json"), serde_json::to_vec_pretty(&run)?)?;
    Ok(())
}

/// Adds each stage's duration to run.json (`stages`), the last one ending now.
pub fn write_stages(ctx: &RunContext) -> anyhow::Result<()> {
    let file = ctx.dir.file("run.json");
    let mut run: serde_json::Value = serde_json::from_slice(&std::fs::read(&file)?)?;
    run["stages"] = serde_json::to_value(ctx.stages.durations(std::time::Instant::now()))?;
    run["nodes"] = serde_json::to_value(ctx.nodes.record())?;
    std::fs::write(&file, serde_json::to_vec_pretty(&run)?)?;
    Ok(())
}

/// Merges the history, checks it, writes results.json and report.html, points store/latest.
/// `error`: what ended the run early, if anything did.
pub fn check_and_report(
    ctx: &RunContext,
    record: WorkloadRecord,
    error: Option<&RunError>,
    sink: &crate::events::EventSink,
) -> anyhow::Result<RunResults> {
    let s = &ctx.loaded.scenario;
    let (events, mut warnings) = ctx.dir.merge_history()?;
    warnings.extend(record.warnings);
    if let Some(e) = error {
        warnings.push(e.message.clone());
    }
    let check = checker::check(&events, &run_verdict::check_options(&events, s.stuck_bound()));
    // Somebody tried to write the resource's record who is no worker of the run.
    let refused_requests = run_verdict::refused(&ctx.dir.path);
    let ending = RunEnding {
        cut_short: error.map(|e| e.cut_short),
        refused_requests: !refused_requests.is_empty(),
        faults_not_applied: !record.not_applied.is_empty(),
    };
    let expect = s.expect;
    let claims = s.claims.implied_by(s.expect).check(&check);
    let verdict = ending.verdict(&check, expect, &claims);
    let results = RunResults {
        scenario: ctx.loaded.name.to_string(),
        description: s.description.clone(),
        matches_expectation: verdict.matches_expectation,
        expect,
        outcome: verdict.outcome,
        run_id: ctx.dir.run_id.clone(),
        backend: s.backend.name().into(),
        seed: ctx.seed,
        clients: s.clients,
        time_limit_secs: s.time_limit_secs,
        started_at: ctx.dir.started.to_rfc3339(),
        duration_secs: ctx.clock.now() as f64 / 1e9,
        interrupted: error.is_some(),
        workers: record.workers,
        warnings,
        not_applied: record.not_applied,
        refused_requests,
        unknown_cause: verdict.unknown_cause,
        properties: check,
        claims,
    };
    std::fs::write(ctx.dir.file("results.json"), serde_json::to_vec_pretty(&results)?)?;
    ctx.stages.enter(sink, crate::events::Stage::Report);
    std::fs::write(ctx.dir.file("report.html"), reports::run_report::render(&results, &events))?;
    ctx.dir.point_latest()?;
    Ok(results)
}
