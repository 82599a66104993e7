//! The checks of a scenario against its backend, before anything starts: capabilities the
//! scenario needs (clock faults, persistence, Postgres server settings, renew, a leader,
//! failover, kill-session), targets that must exist among the backend's nodes, and each fault's
//! own backend rules (faults::FaultAction::check_backend). Above both scenario and
//! lock_backends, so neither needs the other; errors name the file, line and field like the
//! loader's.

use crate::faults::BackendView;
use crate::hosts::NodesFile;
use crate::lock_backends::Persistence;
use crate::resource::ResourceKind;
use crate::scenario::{LoadedScenario, ScenarioError};
use crate::target::Target;

/// Holds `loaded` against its backend; the first failure, as one line naming file, line and
/// field.
pub fn check(loaded: &LoadedScenario) -> Result<(), ScenarioError> {
    rules(loaded).map_err(|(field, message)| loaded.error_at(&field, message))
}

fn rules(loaded: &LoadedScenario) -> Result<(), (String, String)> {
    let s = &loaded.scenario;
    let setup = s.backend_setup();
    let backend = BackendView { name: s.backend.name(), setup: setup.as_ref() };
    let fail = |field: &str, msg: String| Err((field.to_string(), msg));
    if s.resource.kind == ResourceKind::Postgres && setup.keeps_its_resource() {
        return fail("resource.kind", format!("{} keeps its resource in the lock's own transaction", backend.name));
    }
    if s.server.persistence != Persistence::None {
        if let Err(why) = setup.persistence() {
            return fail("server.persistence", format!("{} cannot: {why}", backend.name));
        }
    }
    if !s.workload.kind.takes_lock() && !setup.keeps_its_resource() {
        return fail(
            "workload.kind",
            format!(
                "{} takes no lock and keeps its counter in the run's own Postgres: backend postgres-xact (or -xact-pooler, -xact-replicated), not {}",
                s.workload.kind.name(),
                backend.name
            ),
        );
    }
    if s.lock.one_member_each {
        if let Err(why) = setup.one_member_each() {
            return fail("lock.one_member_each", format!("{} cannot: {why}", backend.name));
        }
    }
    if !s.lock.check_key_after_wait {
        if let Err(why) = setup.skip_key_check() {
            return fail("lock.check_key_after_wait", format!("{} cannot: {why}", backend.name));
        }
    }
    if s.server.postgres.is_some() {
        if let Err(why) = setup.postgres_settings() {
            return fail("server.postgres", format!("{} cannot: {why}", backend.name));
        }
    }
    if s.lock.renew_ms > 0 {
        if let Err(why) = setup.renew() {
            return fail("lock.renew_ms", format!("{} cannot renew on request: {why}", backend.name));
        }
    }
    let nodes = setup.node_count() as u32;
    let check_target = |field: String, t: &Target| match t {
        Target::Node(k) if *k > nodes => Err((field, format!("target n{k} but the {} backend has {nodes} node(s)", backend.name))),
        Target::Leader => match setup.leader() {
            Err(why) => Err((field, format!("target leader on {}: {why}", backend.name))),
            Ok(_) => Ok(()),
        },
        _ => Ok(()),
    };
    for (i, step) in s.nemesis.timeline.iter().enumerate() {
        let field = |name: &str| format!("nemesis.timeline[{i}].{name}");
        check_target(field("target"), &step.target)?;
        for (j, t) in step.fault.action().members().into_iter().enumerate() {
            check_target(format!("{}[{j}]", field("from")), t)?;
        }
        step.fault.action().check_backend(&step.target, &backend).map_err(|(name, msg)| (field(name), msg))?;
    }
    for (i, episode) in s.nemesis.episode.iter().enumerate() {
        let field = |name: &str| format!("nemesis.episode[{i}].{name}");
        for target in &episode.target {
            check_target(field("target"), target)?;
            episode.fault.action().check_backend(target, &backend).map_err(|(name, msg)| (field(name), msg))?;
        }
        for (j, t) in episode.fault.action().members().into_iter().enumerate() {
            check_target(format!("{}[{j}]", field("from")), t)?;
        }
    }
    if let Some(r) = &s.nemesis.random {
        check_target("nemesis.random.target".into(), &r.target)?;
        for f in &r.faults {
            f.action().check_backend(&r.target, &backend).map_err(|(name, msg)| (format!("nemesis.random.{name}"), msg))?;
        }
    }
    Ok(())
}

/// The rules of a scenario run on the hosts of a nodes-file (`--nodes-file`): its backend can
/// run there, and every fault can be done over SSH. Err: one line naming the scenario's file,
/// line and field, and the nodes-file.
pub fn check_hosts(loaded: &LoadedScenario, nodes: &NodesFile) -> Result<(), ScenarioError> {
    hosts_rules(loaded, nodes).map_err(|(field, message)| loaded.error_at(&field, format!("{message} (hosts of {})", nodes.path.display())))
}

fn hosts_rules(loaded: &LoadedScenario, nodes: &NodesFile) -> Result<(), (String, String)> {
    let s = &loaded.scenario;
    let setup = s.backend_setup();
    if let Err(why) = setup.remote_hosts() {
        return Err(("backend".into(), format!("{} cannot run on remote hosts: {why}", s.backend.name())));
    }
    let shared_address = nodes.workers.is_none();
    for (i, step) in s.nemesis.timeline.iter().enumerate() {
        let field = |name: &str| format!("nemesis.timeline[{i}].{name}");
        step.fault.action().check_on_hosts(&step.target, shared_address).map_err(|(name, msg)| (field(name), msg))?;
    }
    for (i, episode) in s.nemesis.episode.iter().enumerate() {
        let field = |name: &str| format!("nemesis.episode[{i}].{name}");
        for target in &episode.target {
            episode.fault.action().check_on_hosts(target, shared_address).map_err(|(name, msg)| (field(name), msg))?;
        }
    }
    if let Some(r) = &s.nemesis.random {
        for f in &r.faults {
            f.action().check_on_hosts(&r.target, shared_address).map_err(|(_, msg)| ("nemesis.random.faults".to_string(), msg))?;
        }
    }
    Ok(())
}
