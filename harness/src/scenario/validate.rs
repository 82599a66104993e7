//! The rules serde cannot express that need nothing but the scenario itself: ranges,
//! cross-field rules, and each fault's own rules (faults::FaultAction::check). Rules that need
//! the backend (its capabilities, its node count) are the preflight's (preflight.rs). Each
//! failure is (dotted field, message); the loader adds the file and line.

use super::{LoadedScenario, Scenario, ScenarioError, Trigger};
use crate::target::Target;

/// Re-checks the rules after command-line overrides (e.g. `--clients` below a fault's target).
/// Fault times past a shortened time limit are fine there: those faults simply never fire.
pub fn validate_overrides(loaded: &LoadedScenario) -> Result<(), ScenarioError> {
    validate(&loaded.scenario, false).map_err(|(field, message)| ScenarioError {
        file: loaded.path.clone(),
        line: None,
        field: Some(field),
        message: format!("{message} (after command-line overrides)"),
    })
}

const MAX_DESCRIPTION: usize = 2000;

pub(super) fn validate(s: &Scenario, check_times: bool) -> Result<(), (String, String)> {
    let fail = |field: &str, msg: String| Err((field.to_string(), msg));
    // It is copied into run.json, results.json and every report: one line, of a sensible size.
    if s.description.contains('\n') || s.description.chars().count() > MAX_DESCRIPTION {
        return fail("description", format!("must be one line of at most {MAX_DESCRIPTION} characters"));
    }
    if !(1..=150).contains(&s.clients) {
        return fail("clients", format!("{} is not between 1 and 150 (one address each in the run's /24)", s.clients));
    }
    if s.time_limit_secs == 0 {
        return fail("time_limit_secs", "must be at least 1".into());
    }
    if s.client.command.as_ref().is_some_and(|c| c.first().is_none_or(|program| program.trim().is_empty())) {
        return fail(
            "client.command",
            "names no program: give the program and its arguments, e.g. [\"python3\", \"clients/my_lock.py\"]".into(),
        );
    }
    crate::client_env::spec::check_fields(&s.client).or_else(|(field, message)| fail(&field, message))?;
    if !s.client.versions.is_empty() && s.client.command.is_none() {
        return fail("client.versions", "are versions of a client program's library, and [client] has no `command`".into());
    }
    for (i, row) in s.client.versions.iter().enumerate() {
        if let Err(e) = row.pin.parse::<super::versions::Pin>() {
            return fail(&format!("client.versions[{i}].pin"), e.to_string());
        }
    }
    if !s.workload.kind.takes_lock() && s.client.command.is_some() {
        return fail("client.command", format!("the {} workload takes no lock, so no lock client program", s.workload.kind.name()));
    }
    if s.workload.keys == 0 || (s.workload.keys > 1 && s.workload.kind != crate::worker::WorkloadKind::ConditionalWrite) {
        return fail("workload.keys", format!("{}: only the conditional write spreads over keys (at least 1)", s.workload.keys));
    }
    for (field, on, kind) in s.workload.broken_switches() {
        if on && s.workload.kind != kind {
            return fail(&format!("workload.{field}"), format!("belongs to workload.kind = \"{}\" only", kind.name()));
        }
    }
    if let Some(ms) = s.stuck_after_ms.filter(|ms| *ms < super::MIN_STUCK_AFTER_MS) {
        return fail("stuck_after_ms", format!("{ms} is below {} ms: a lock is not stuck for less", super::MIN_STUCK_AFTER_MS));
    }
    if s.expect == results::Expectation::Stuck && s.claims.stuck == Some(false) {
        return fail("claims.stuck", "false contradicts expect = \"stuck\"".into());
    }
    if (s.claims.stuck.is_some() || s.expect == results::Expectation::Stuck) && !s.workload.kind.takes_lock() {
        return fail("claims.stuck", format!("the {} workload takes no lock, so it cannot get stuck", s.workload.kind.name()));
    }
    if s.lock.ttl_ms == 0 {
        return fail("lock.ttl_ms", "must be at least 1".into());
    }
    if !(0.0..1.0).contains(&s.lock.drift_factor) {
        return fail("lock.drift_factor", format!("{} is not in [0, 1)", s.lock.drift_factor));
    }
    if s.lock.node_timeout_ms == 0 {
        return fail("lock.node_timeout_ms", "must be at least 1".into());
    }
    if s.lock.renew_ms > 0 && s.lock.renew_ms >= s.lock.ttl_ms {
        return fail(
            "lock.renew_ms",
            format!("{} is not below lock.ttl_ms ({}): the lease would lapse between renewals", s.lock.renew_ms, s.lock.ttl_ms),
        );
    }
    for (name, v) in s.server.postgres.unwrap_or_default().given() {
        // Postgres's integer settings are 32-bit signed: a larger value would stop the server
        // from starting, long after the file was accepted.
        if v > i32::MAX as u32 {
            return fail(&format!("server.postgres.{name}"), format!("{v} is above Postgres's largest integer setting ({})", i32::MAX));
        }
    }
    if s.workload.key.is_empty() {
        return fail("workload.key", "must not be empty".into());
    }
    let check_client = |field: String, t: &Target| match t {
        Target::Client(k) if *k > s.clients => Err((field, format!("target client-{k} but the scenario has {} clients", s.clients))),
        _ => Ok(()),
    };
    let limit_ms = s.time_limit_secs * 1000;
    for (i, step) in s.nemesis.timeline.iter().enumerate() {
        let field = |name: &str| format!("nemesis.timeline[{i}].{name}");
        check_step(s, &field, step.when, step.by.as_ref(), std::slice::from_ref(&step.target), &step.fault)?;
        if check_times && step.at_ms >= limit_ms {
            return fail(&field("at_ms"), format!("{} is not before the time limit ({limit_ms} ms)", step.at_ms));
        }
    }
    for (i, episode) in s.nemesis.episode.iter().enumerate() {
        let field = |name: &str| format!("nemesis.episode[{i}].{name}");
        check_step(s, &field, episode.when, episode.by.as_ref(), &episode.target, &episode.fault)?;
        if episode.duration_ms == 0 {
            return fail(&field("duration_ms"), "must be at least 1".into());
        }
    }
    if let Some(r) = &s.nemesis.random {
        check_client("nemesis.random.target".into(), &r.target)?;
        if r.faults.is_empty() {
            return fail("nemesis.random.faults", "must name at least one fault".into());
        }
        for f in &r.faults {
            f.action().check(&r.target).map_err(|(name, msg)| (format!("nemesis.random.{name}"), format!("{}: {msg}", f.name())))?;
        }
        for (field, [lo, hi]) in [("interval_ms", r.interval_ms), ("duration_ms", r.duration_ms)] {
            if lo > hi {
                return fail(&format!("nemesis.random.{field}"), format!("min {lo} is above max {hi}"));
            }
        }
    }
    Ok(())
}

/// The rules of one step, timeline or episode: its trigger and who fires it, its targets (an
/// episode's several), and its fault's own rules. `field` names a field of the step.
fn check_step(
    s: &Scenario,
    field: &dyn Fn(&str) -> String,
    when: Option<Trigger>,
    by: Option<&Target>,
    targets: &[Target],
    fault: &crate::faults::Fault,
) -> Result<(), (String, String)> {
    let fail = |name: &str, msg: String| Err((field(name), msg));
    let check_client = |field: String, t: &Target| match t {
        Target::Client(k) if *k > s.clients => Err((field, format!("target client-{k} but the scenario has {} clients", s.clients))),
        _ => Ok(()),
    };
    match (by, when) {
        (Some(by @ Target::Client(_)), Some(_)) => check_client(field("by"), by)?,
        (Some(_), Some(_)) => return fail("by", "must name a client (client-K)".into()),
        (Some(_), None) => return fail("by", "needs `when`: the trigger that this client's events fire".into()),
        (None, _) => {}
    }
    let needs = match when {
        Some(Trigger::AfterCheck) if !s.workload.check_before_write => Some("after-check needs `workload.check_before_write = true`"),
        Some(Trigger::RenewSent) if s.lock.renew_ms == 0 => Some("renew-sent needs `lock.renew_ms` (clients that renew)"),
        Some(Trigger::Waiting) if s.clients < 2 => Some("waiting needs at least 2 clients (one waits while another holds)"),
        _ => None,
    };
    if let Some(why) = needs {
        return fail("when", why.into());
    }
    for target in targets {
        check_client(field("target"), target)?;
        if *target == Target::HolderMember && !s.lock.one_member_each {
            return fail("target", "holder-member needs `lock.one_member_each = true` (otherwise a client talks to any member)".into());
        }
        if *target == Target::Waiter && when.is_some_and(|w| w != Trigger::Waiting) {
            return fail("target", "waiter is the client that fires `when = \"waiting\"`: it takes no other trigger".into());
        }
        if *target == Target::Waiter && s.clients < 2 {
            return fail("target", "waiter needs at least 2 clients (one waits while another holds)".into());
        }
        fault.action().check(target).map_err(|(name, msg)| (field(name), msg))?;
    }
    for (j, t) in fault.action().members().into_iter().enumerate() {
        check_client(format!("{}[{j}]", field("from")), t)?;
    }
    Ok(())
}
