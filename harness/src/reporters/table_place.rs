//! Where a scenario's runs sit in the article's decision table: the row from the backend and
//! whether the resource checks tokens, the column from what its faults do. A baseline (no
//! fault) tests no cell, and neither does a scenario run by a client program or one without a
//! lock (the alternatives are rows of the matrix).

use crate::faults::Fault;
use crate::lock_backends::BackendKind;
use crate::resource::ResourceMode;
use crate::scenario::Scenario;
use crate::target::Target;
use reports::decision_table::{LockSystem, TableColumn, TablePlace};

pub fn place(s: &Scenario) -> Option<TablePlace> {
    // The table measures each lock as lockchaos's own client implements its recipe; a client
    // program's runs are rows of the matrix beside it.
    if s.client.command.is_some() || s.workload.kind != crate::worker::WorkloadKind::Lock {
        return None;
    }
    Some(TablePlace { system: system(s), column: column(s)? })
}

fn system(s: &Scenario) -> LockSystem {
    match s.backend {
        // Sentinel's failover is the single Redis lock's Failover column.
        BackendKind::RedisSingle | BackendKind::RedisSentinel => LockSystem::SingleRedis,
        BackendKind::Redlock => LockSystem::Redlock,
        BackendKind::Etcd if s.resource.mode == ResourceMode::Fenced => LockSystem::EtcdFenced,
        BackendKind::Etcd => LockSystem::Etcd,
        BackendKind::Zookeeper if s.resource.mode == ResourceMode::Fenced => LockSystem::ZookeeperFenced,
        BackendKind::Zookeeper => LockSystem::Zookeeper,
        BackendKind::PostgresSession | BackendKind::PostgresSessionPooler => LockSystem::PostgresSession,
        BackendKind::PostgresXact | BackendKind::PostgresXactPooler | BackendKind::PostgresXactReplicated => LockSystem::PostgresXact,
    }
}

/// The column, by what the faults do, most telling first: a killed client is "Holder dies"; a
/// server failing over, restarting or ending the session is "Failover / restart"; a pause or a
/// clock fault (with any partition that only sets the stage) is "Timing"; partitions alone are
/// "Partition".
fn column(s: &Scenario) -> Option<TableColumn> {
    if s.failure.as_deref() == Some("failover") {
        return Some(TableColumn::FailoverRestart);
    }
    let columns: Vec<TableColumn> = s.nemesis.faults_on_targets().into_iter().map(|(fault, target)| fault_column(fault, target)).collect();
    let rank = |c: &TableColumn| match c {
        TableColumn::HolderDies => 0,
        TableColumn::FailoverRestart => 1,
        TableColumn::Timing => 2,
        TableColumn::Partition => 3,
        TableColumn::Fencing => 4,
    };
    columns.into_iter().min_by_key(rank)
}

/// The column one fault on one target speaks to. Exhaustive: a new fault kind must say where it
/// belongs.
fn fault_column(fault: &Fault, target: &Target) -> TableColumn {
    match fault {
        Fault::Kill(_) if target.is_client() => TableColumn::HolderDies,
        Fault::Kill(_) | Fault::Failover(_) | Fault::KillSession(_) => TableColumn::FailoverRestart,
        Fault::Pause(_) | Fault::ClockJump(_) | Fault::ClockStrobe(_) | Fault::ClockSlew(_) | Fault::Latency(_) => TableColumn::Timing,
        Fault::Partition(_) | Fault::PartitionDrop(_) => TableColumn::Partition,
    }
}

#[cfg(test)]
mod tests {
    use super::place;
    use reports::decision_table::{article, LockSystem, TableColumn, TablePlace};

    fn shipped() -> Vec<(String, Option<TablePlace>)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        crate::scenario_catalog::list(Some(&dir))
            .unwrap()
            .into_iter()
            .map(|loaded| {
                let loaded = loaded.unwrap();
                (loaded.name.to_string(), place(&loaded.scenario))
            })
            .collect()
    }

    #[test]
    fn shipped_scenarios_sit_in_the_article_table_where_a_reader_looks_for_them() {
        use LockSystem as S;
        use TableColumn as C;
        let places = shipped();
        let cases = [
            ("redis-single-baseline", None),
            ("redis-single-pause", Some((S::SingleRedis, C::Timing))),
            ("redis-sentinel-failover", Some((S::SingleRedis, C::FailoverRestart))),
            ("redis-single-holder-killed", Some((S::SingleRedis, C::HolderDies))),
            ("redlock-clock-jump", Some((S::Redlock, C::Timing))),
            ("redlock-restart-no-persistence", Some((S::Redlock, C::FailoverRestart))),
            ("etcd-pause-unfenced", Some((S::Etcd, C::Timing))),
            ("etcd-minority-partition-fenced", Some((S::EtcdFenced, C::Partition))),
            ("etcd-cluster-restart", Some((S::Etcd, C::FailoverRestart))),
            ("postgres-session-external-resource-kill", Some((S::PostgresSession, C::FailoverRestart))),
            ("postgres-xact-partition", Some((S::PostgresXact, C::Partition))),
            ("postgres-failover", Some((S::PostgresXact, C::FailoverRestart))),
            ("zookeeper-baseline", None),
            ("zookeeper-pause", Some((S::Zookeeper, C::Timing))),
            ("zookeeper-pause-fenced", Some((S::ZookeeperFenced, C::Timing))),
            ("zookeeper-holder-killed", Some((S::ZookeeperFenced, C::HolderDies))),
            ("zookeeper-holder-killed-unfenced", Some((S::Zookeeper, C::HolderDies))),
            ("zookeeper-partition", Some((S::Zookeeper, C::Partition))),
            ("zookeeper-partition-fenced", Some((S::ZookeeperFenced, C::Partition))),
            ("zookeeper-leader-failover", Some((S::ZookeeperFenced, C::FailoverRestart))),
            ("zookeeper-leader-failover-unfenced", Some((S::Zookeeper, C::FailoverRestart))),
        ];
        for (name, want) in cases {
            let got = places.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no scenario {name}")).1;
            assert_eq!(got, want.map(|(system, column)| TablePlace { system, column }), "{name}");
        }
    }

    /// Every cell of the table that can run here is tested by some shipped scenario: a full
    /// matrix leaves no cell unmeasured.
    #[test]
    fn every_cell_that_can_run_here_has_a_scenario() {
        let places = shipped();
        let mut missing = vec![];
        for system in LockSystem::ALL {
            for column in TableColumn::ALL {
                if article(system, column).cannot_run.is_some() {
                    continue;
                }
                let covered = places.iter().any(|(_, p)| match (p, column) {
                    (Some(p), TableColumn::Fencing) => p.system == system,
                    (Some(p), _) => *p == TablePlace { system, column },
                    (None, _) => false,
                });
                if !covered {
                    missing.push(format!("{} × {}", system.title(), column.title()));
                }
            }
        }
        assert!(missing.is_empty(), "cells no shipped scenario tests: {missing:?}");
    }
}
