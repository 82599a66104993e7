//! What every run leaves in its folder, whichever way it ended.

use super::{RunContext, WorkloadRecord};
use results::{Outcome, RunResults};

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
pub fn check_and_report(
    ctx: &RunContext,
    record: WorkloadRecord,
    interrupted: bool,
    error: Option<String>,
    sink: &crate::events::EventSink,
) -> anyhow::Result<RunResults> {
    let s = &ctx.loaded.scenario;
    let (events, mut warnings) = ctx.dir.merge_history()?;
    warnings.extend(record.warnings);
    if let Some(e) = &error {
        warnings.push(e.clone());
    }
    let check = checker::check(&events, &crate::run_verdict::check_options(&events, s.stuck_bound()));
    // A cut-short run can show a violation, but cannot vouch for safety.
    // Somebody tried to write the resource's record who is no worker: the record holds only the
    // workers' requests, so a violation in it stands, but the run cannot vouch for safety.
    let refused_requests = crate::run_verdict::refused(&ctx.dir.path);
    let mut outcome = Outcome::of_verdict(crate::run_verdict::vouched(check.outcome, interrupted || !refused_requests.is_empty()));
    // A run whose faults did not all take effect did not test what the scenario claims, whatever
    // its record shows.
    if !record.not_applied.is_empty() {
        outcome = Outcome::Unknown;
    }
    let expect = s.expect;
    let claims = s.claims.implied_by(s.expect).check(&check);
    let results = RunResults {
        scenario: ctx.loaded.name.to_string(),
        description: s.description.clone(),
        // `stuck` is met by an unknown outcome, so it asks for itself what unknown stands for
        // otherwise: a whole run whose faults all took effect.
        matches_expectation: RunResults::matches(expect, outcome, &claims)
            && (expect != results::Expectation::Stuck || (record.not_applied.is_empty() && !interrupted)),
        expect,
        outcome,
        run_id: ctx.dir.run_id.clone(),
        backend: s.backend.name().into(),
        seed: ctx.seed,
        clients: s.clients,
        time_limit_secs: s.time_limit_secs,
        started_at: ctx.dir.started.to_rfc3339(),
        duration_secs: ctx.clock.now() as f64 / 1e9,
        interrupted,
        workers: record.workers,
        warnings,
        not_applied: record.not_applied,
        refused_requests,
        unknown_cause: None,
        properties: check,
        claims,
    };
    std::fs::write(ctx.dir.file("results.json"), serde_json::to_vec_pretty(&results)?)?;
    ctx.stages.enter(sink, crate::events::Stage::Report);
    std::fs::write(ctx.dir.file("report.html"), reports::run_report::render(&results, &events))?;
    ctx.dir.point_latest()?;
    Ok(results)
}
