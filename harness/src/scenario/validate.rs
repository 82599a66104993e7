//! The rules serde cannot express: ranges, cross-field rules, and what each fault and backend
//! allows. Each failure is (dotted field, message); parse() adds the file and line.

use super::*;

/// Re-checks the rules after command-line overrides (e.g. `--clients` below a fault's target).
/// Fault times past a shortened time limit are fine there: those faults simply never fire.
pub fn validate_overrides(s: &Scenario, file: &Path) -> Result<(), ScenarioError> {
    validate(s, false).map_err(|(field, message)| ScenarioError {
        file: file.to_path_buf(),
        line: None,
        field: Some(field),
        message: format!("{message} (after command-line overrides)"),
    })
}

/// Checks that serde cannot express: ranges and cross-field rules.
pub(super) fn validate(s: &Scenario, check_times: bool) -> Result<(), (String, String)> {
    let fail = |field: &str, msg: String| Err((field.to_string(), msg));
    if !(1..=150).contains(&s.clients) {
        return fail("clients", format!("{} is not between 1 and 150 (one address each in the run's /24)", s.clients));
    }
    if s.time_limit_secs == 0 {
        return fail("time_limit_secs", "must be at least 1".into());
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
    if s.workload.key.is_empty() {
        return fail("workload.key", "must not be empty".into());
    }
    // One setup answers every backend question of the checks below.
    let backend = crate::lock_backends::setup_for(s);
    let nodes = backend.node_count() as u32;
    if s.resource.kind == ResourceKind::Postgres && matches!(s.backend, BackendKind::PostgresXact | BackendKind::PostgresXactReplicated) {
        return fail("resource.kind", format!("{} keeps its resource in the lock's own transaction", s.backend.name()));
    }
    if s.server.persistence != Persistence::None && !backend.persistence_supported() {
        return fail("server.persistence", format!("{} has no persistence setting (only the Redis backends do)", s.backend.name()));
    }
    if s.lock.renew_ms > 0 {
        if let Some(why) = backend.renew_unsupported() {
            return fail("lock.renew_ms", format!("{} cannot renew on request: {why}", s.backend.name()));
        }
        if s.lock.renew_ms >= s.lock.ttl_ms {
            return fail(
                "lock.renew_ms",
                format!("{} is not below lock.ttl_ms ({}): the lease would lapse between renewals", s.lock.renew_ms, s.lock.ttl_ms),
            );
        }
    }
    let check_target = |field: String, t: &Target| match t {
        Target::Client(k) if *k > s.clients => Err((field, format!("target client-{k} but the scenario has {} clients", s.clients))),
        Target::Node(k) if *k > nodes => Err((field, format!("target n{k} but the {} backend has {nodes} node(s)", s.backend.name()))),
        Target::Leader => match backend.leader_unsupported() {
            Some(why) => Err((field, format!("target leader on {}: {why}", s.backend.name()))),
            None => Ok(()),
        },
        _ => Ok(()),
    };
    let limit_ms = s.time_limit_secs * 1000;
    for (i, step) in s.nemesis.timeline.iter().enumerate() {
        let field = |name: &str| format!("nemesis.timeline[{i}].{name}");
        match (&step.by, step.when) {
            (Some(Target::Client(_)), Some(_)) => check_target(field("by"), step.by.as_ref().expect("matched"))?,
            (Some(_), Some(_)) => return fail(&field("by"), "must name a client (client-K)".into()),
            (Some(_), None) => return fail(&field("by"), "needs `when`: the trigger that this client's events fire".into()),
            (None, _) => {}
        }
        if step.when == Some(Trigger::AfterCheck) && !s.workload.check_before_write {
            return fail(&field("when"), "after-check needs `workload.check_before_write = true`".into());
        }
        check_target(field("target"), &step.target)?;
        for (j, t) in step.from.iter().enumerate() {
            check_target(format!("{}[{j}]", field("from")), t)?;
        }
        check_step(s, step, backend.as_ref(), nodes).map_err(|(name, msg)| (field(name), msg))?;
        if check_times && step.at_ms >= limit_ms {
            return fail(&format!("nemesis.timeline[{i}].at_ms"), format!("{} is not before the time limit ({limit_ms} ms)", step.at_ms));
        }
    }
    if let Some(r) = &s.nemesis.random {
        check_target("nemesis.random.target".into(), &r.target)?;
        if r.target == Target::AllNodes {
            return fail("nemesis.random.target", "`nodes` is for partition shapes: use a [[nemesis.timeline]] step".into());
        }
        if let Some(f) = r.faults.iter().find(|f| f.needs_parameters()) {
            return fail("nemesis.random.faults", format!("{} needs parameters: use a [[nemesis.timeline]] step", f.name()));
        }
        if r.faults.is_empty() {
            return fail("nemesis.random.faults", "must name at least one fault".into());
        }
        for (field, [lo, hi]) in [("interval_ms", r.interval_ms), ("duration_ms", r.duration_ms)] {
            if lo > hi {
                return fail(&format!("nemesis.random.{field}"), format!("min {lo} is above max {hi}"));
            }
        }
    }
    Ok(())
}

/// The rules of one timeline step that depend on its fault: (field, message) on failure.
fn check_step(
    s: &Scenario,
    step: &TimelineStep,
    backend: &dyn crate::lock_backends::BackendSetup,
    nodes: u32,
) -> Result<(), (&'static str, String)> {
    let fail = |field: &'static str, msg: String| Err((field, msg));
    let node_target = matches!(step.target, Target::Node(_) | Target::RandomNode | Target::Leader);
    let given = [
        ("from", !step.from.is_empty()),
        ("offset_ms", step.offset_ms.is_some()),
        ("period_ms", step.period_ms.is_some()),
        ("delay_ms", step.delay_ms.is_some()),
        ("shape", step.shape.is_some()),
    ];
    let allowed: &[&str] = match step.fault {
        FaultKind::Partition => &["from", "shape"],
        FaultKind::ClockJump => &["offset_ms"],
        FaultKind::ClockStrobe => &["offset_ms", "period_ms"],
        FaultKind::Latency => &["delay_ms"],
        FaultKind::Pause | FaultKind::Kill | FaultKind::Failover | FaultKind::KillSession => &[],
    };
    if let Some((name, _)) = given.iter().find(|(name, set)| *set && !allowed.contains(name)) {
        return fail(name, format!("does not apply to a {} fault", step.fault.name()));
    }
    if step.target == Target::AllNodes && !matches!(step.shape, Some(PartitionShape::Halves | PartitionShape::MajorityRing)) {
        return fail("target", "`nodes` is the target of a partition with shape halves or majority-ring".into());
    }
    match step.fault {
        FaultKind::Partition => match step.shape {
            None if step.from.is_empty() => {
                return fail("fault", "a partition needs `from` (the members to cut the target off from) or a `shape`".into())
            }
            Some(_) if !step.from.is_empty() => return fail("shape", "give either `from` or a `shape`, not both".into()),
            Some(PartitionShape::Isolate) if !node_target => {
                return fail("target", "shape isolate cuts a node off from the others: the target must be a node".into())
            }
            Some(shape @ (PartitionShape::Halves | PartitionShape::MajorityRing)) => {
                if step.target != Target::AllNodes {
                    return fail("target", format!("shape {} splits all the nodes: use target = \"nodes\"", shape.name()));
                }
                let least = if shape == PartitionShape::Halves { 2 } else { 5 };
                if nodes < least {
                    return fail("shape", format!("{} needs at least {least} nodes; {} has {nodes}", shape.name(), s.backend.name()));
                }
            }
            _ => {}
        },
        FaultKind::ClockJump | FaultKind::ClockStrobe => {
            if !node_target {
                return fail("target", format!("a {} needs a node target (nK, random-node or leader)", step.fault.name()));
            }
            if step.offset_ms.is_none() {
                return fail("fault", format!("a {} needs `offset_ms`", step.fault.name()));
            }
            if step.fault == FaultKind::ClockStrobe && step.period_ms.is_none_or(|p| p < 10) {
                return fail("period_ms", "a clock-strobe needs `period_ms` of at least 10".into());
            }
            if let Some(why) = backend.clock_faults_unsupported() {
                return fail("fault", format!("clock faults are not possible on {}: {why}", s.backend.name()));
            }
        }
        FaultKind::Latency => {
            if !node_target {
                return fail(
                    "target",
                    "latency is added on a node's interface (workers have no NET_ADMIN): the target must be a node".into(),
                );
            }
            if step.delay_ms.is_none_or(|d| d < 1) {
                return fail("fault", "a latency fault needs `delay_ms` (at least 1)".into());
            }
        }
        FaultKind::Failover => {
            if let Some(why) = backend.failover_unsupported() {
                return fail("fault", format!("{} has no failover: {why}", s.backend.name()));
            }
            if !node_target {
                return fail("target", "a failover moves the primary role away from a node: the target must be a node or leader".into());
            }
        }
        FaultKind::KillSession => {
            if let Some(why) = backend.kill_session_unsupported() {
                return fail("fault", format!("kill-session is not possible on {}: {why}", s.backend.name()));
            }
            if !matches!(step.target, Target::Client(_) | Target::Holder | Target::RandomClient) {
                return fail("target", "kill-session ends a client's sessions: the target must be a client or holder".into());
            }
        }
        FaultKind::Pause | FaultKind::Kill => {}
    }
    Ok(())
}
