//! The article's decision table, measured (table.json, table.html): rows are the lock systems
//! and their fenced variants, columns the article's (Fencing, Timing, Holder dies, Partition,
//! Failover / restart). Each cell holds the tally of the runs that test it, the article's claim
//! beside it, and whether they agree; a cell this machine cannot test says why.
//!
//! A run's place in the table is decided by the harness (it knows the scenario's faults); this
//! module only counts. "Agrees" means every run of the cell matched its scenario, whose `expect`
//! and `[claims]` are the article's claim made testable; the Fencing column agrees when the
//! tokens increased with every grant and, in a fenced row, the resource accepted no write out
//! of token order.

mod html;

pub use html::render_html;

use crate::matrix::{RunTally, Verdict};
use crate::MatrixRun;
use results::RunResults;
use serde::{Deserialize, Serialize};

/// A row: one lock system as the article names it, or its fenced variant.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum LockSystem {
    SingleRedis,
    Redlock,
    Etcd,
    EtcdFenced,
    PostgresSession,
    PostgresXact,
    Zookeeper,
    ZookeeperFenced,
}

impl LockSystem {
    pub const ALL: [LockSystem; 8] = [
        LockSystem::SingleRedis,
        LockSystem::Redlock,
        LockSystem::Etcd,
        LockSystem::EtcdFenced,
        LockSystem::PostgresSession,
        LockSystem::PostgresXact,
        LockSystem::Zookeeper,
        LockSystem::ZookeeperFenced,
    ];

    pub fn title(self) -> &'static str {
        match self {
            LockSystem::SingleRedis => "Single Redis + TTL",
            LockSystem::Redlock => "Redlock (5 nodes)",
            LockSystem::Etcd => "etcd lease",
            LockSystem::EtcdFenced => "etcd lease + fencing token",
            LockSystem::PostgresSession => "Postgres advisory lock (session)",
            LockSystem::PostgresXact => "Postgres advisory lock (transaction)",
            LockSystem::Zookeeper => "ZooKeeper ephemeral sequential znode",
            LockSystem::ZookeeperFenced => "ZooKeeper znode + fencing token (czxid)",
        }
    }
}

/// A column of the article's table.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum TableColumn {
    Fencing,
    Timing,
    HolderDies,
    Partition,
    FailoverRestart,
}

impl TableColumn {
    pub const ALL: [TableColumn; 5] =
        [TableColumn::Fencing, TableColumn::Timing, TableColumn::HolderDies, TableColumn::Partition, TableColumn::FailoverRestart];

    pub fn title(self) -> &'static str {
        match self {
            TableColumn::Fencing => "Fencing",
            TableColumn::Timing => "Timing assumptions",
            TableColumn::HolderDies => "Holder dies",
            TableColumn::Partition => "Partition",
            TableColumn::FailoverRestart => "Failover / restart",
        }
    }
}

/// What the article says of a cell, and why the cell cannot be tested here when it cannot.
pub struct ArticleCell {
    pub claim: &'static str,
    pub cannot_run: Option<&'static str>,
}

/// The article's claim for each cell (its words where the issue quotes them).
pub fn article(system: LockSystem, column: TableColumn) -> ArticleCell {
    use LockSystem as S;
    use TableColumn as C;
    let claim = |claim| ArticleCell { claim, cannot_run: None };
    let no_token = |claim, why| ArticleCell { claim, cannot_run: Some(why) };
    match (system, column) {
        (S::SingleRedis, C::Fencing) => no_token(
            "none: the lock value is random, not an ordered token",
            "SET NX PX hands out no increasing token, so there is nothing for a resource to check",
        ),
        (S::SingleRedis, C::Timing) => {
            claim("safe only while the holder finishes within the TTL: a pause or a clock jump past it hands the lock out twice")
        }
        (S::SingleRedis, C::HolderDies) => claim("freed at the TTL"),
        (S::SingleRedis, C::Partition) => claim("the key expires at the TTL while the cut-off holder works on"),
        (S::SingleRedis, C::FailoverRestart) => {
            claim("asynchronous replication: a failover, or a restart without persistence, can lose the key")
        }
        (S::Redlock, C::Fencing) => no_token(
            "none: each node holds a random value",
            "Redlock hands out no increasing token, so there is nothing for a resource to check",
        ),
        (S::Redlock, C::Timing) => {
            claim("assumes bounded clock drift (the drift allowance) and short pauses; a jump or a long pause breaks it")
        }
        (S::Redlock, C::HolderDies) => claim("freed at the TTL"),
        (S::Redlock, C::Partition) => claim("the majority side can grant"),
        (S::Redlock, C::FailoverRestart) => claim("a restarted node can forget a lock and grant it twice"),
        (S::Etcd, C::Fencing) => claim("create_revision is an increasing token, if the resource checks it"),
        (S::Etcd, C::Timing) => claim("a holder paused past its lease loses the lock without knowing: unsafe without fencing"),
        (S::Etcd, C::HolderDies) => claim("freed at lease expiry"),
        (S::Etcd, C::Partition) => claim("the minority side cannot write or renew; a cut-off holder's lease expires while it works"),
        (S::Etcd, C::FailoverRestart) => claim("Raft preserves state"),
        (S::EtcdFenced, C::Fencing) => claim("the resource rejects writes with a stale token"),
        (S::EtcdFenced, C::Timing) => claim("a paused holder's late write is rejected"),
        (S::EtcdFenced, C::HolderDies) => claim("freed at lease expiry"),
        (S::EtcdFenced, C::Partition) => claim("the minority side cannot write or renew; the cut-off holder's write is rejected"),
        (S::EtcdFenced, C::FailoverRestart) => claim("Raft preserves state"),
        (S::PostgresSession, C::Fencing) => no_token(
            "none: advisory locks carry no token",
            "an advisory lock carries no token (the transaction-scoped lock puts the write in the lock's transaction instead)",
        ),
        (S::PostgresSession, C::Timing) => claim("no TTL: a paused holder keeps the lock as long as its session lives"),
        (S::PostgresSession, C::HolderDies) => claim("freed when the server sees the session end"),
        (S::PostgresSession, C::Partition) => claim("a dead client holds the lock until TCP timeout"),
        (S::PostgresSession, C::FailoverRestart) => {
            claim("the lock lives in one server's session: a failover or a killed session frees it while the holder works")
        }
        (S::PostgresXact, C::Fencing) => no_token(
            "none: advisory locks carry no token",
            "an advisory lock carries no token; the protected write commits in the lock's own transaction instead",
        ),
        (S::PostgresXact, C::Timing) => claim("the write commits in the lock's transaction: no timing assumption"),
        (S::PostgresXact, C::HolderDies) => claim("freed when the server sees the session end"),
        (S::PostgresXact, C::Partition) => claim("the cut-off holder's transaction aborts with its connection: its write never commits"),
        (S::PostgresXact, C::FailoverRestart) => claim("a synchronous standby keeps every committed write"),
        // ZooKeeper is not in the article: its row is the issue's, with the session timeout
        // in the part of the TTL.
        (S::Zookeeper, C::Fencing) => claim("the lock znode's czxid is an increasing token, if the resource checks it"),
        (S::Zookeeper, C::Timing) => {
            claim("a holder paused past its session timeout loses the lock without knowing: unsafe without fencing")
        }
        (S::Zookeeper, C::HolderDies) => claim("freed when the session expires, a session timeout after the holder last reached a server"),
        (S::Zookeeper, C::Partition) => claim("a cut-off holder's session expires while it works: unsafe without fencing"),
        (S::Zookeeper, C::FailoverRestart) => claim("Zab keeps the lock znodes and the sessions through the leader's loss"),
        (S::ZookeeperFenced, C::Fencing) => claim("the resource rejects writes with a stale czxid"),
        (S::ZookeeperFenced, C::Timing) => claim("a paused holder's late write is rejected"),
        (S::ZookeeperFenced, C::HolderDies) => claim("freed when the session expires"),
        (S::ZookeeperFenced, C::Partition) => claim("the cut-off holder's write is rejected"),
        (S::ZookeeperFenced, C::FailoverRestart) => claim("Zab keeps the lock znodes and the sessions through the leader's loss"),
    }
}

/// Where a run sits in the article's table.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct TablePlace {
    pub system: LockSystem,
    pub column: TableColumn,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DecisionTable {
    pub cells: Vec<TableCell>,
}

/// One cell: the article's claim and what the runs measured.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TableCell {
    pub system: LockSystem,
    pub column: TableColumn,
    pub claim: String,
    /// Why this cell cannot be tested here; then it has no runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cannot_run_here: Option<String>,
    #[serde(flatten)]
    pub tally: RunTally,
    /// Fenced writes the resource accepted out of token order (Fencing column).
    pub accepted_out_of_order: u64,
    /// Grants that carried a token (Fencing column).
    pub grants_with_token: u64,
    /// Grants whose token was not above the one before (Fencing column).
    pub non_increasing_grants: u64,
    /// Every kill of a holder: from the kill to the next grant, in ms (None: never granted again).
    pub freed_after_ms: Vec<Option<f64>>,
    /// The longest time without a grant over the runs, in ms.
    pub longest_gap_ms: Option<f64>,
    /// Runs that ended with the lock still unavailable.
    pub runs_unavailable_at_end: u32,
    /// Whether the measurement agrees with the article; None without runs, or when the runs
    /// that did not match were all interrupted.
    pub agrees: Option<bool>,
}

impl DecisionTable {
    /// Every cell of the table, measured from the runs that have a place in it.
    pub fn from_runs(runs: &[MatrixRun<'_>]) -> DecisionTable {
        let mut cells = vec![];
        for system in LockSystem::ALL {
            for column in TableColumn::ALL {
                // A cell that cannot run here counts nothing, whatever its row ran.
                let runnable = article(system, column).cannot_run.is_none();
                let here: Vec<&MatrixRun<'_>> = runs
                    .iter()
                    .filter(|r| match (r.place, column) {
                        // The Fencing cell counts the tokens of every run of its row.
                        (Some(p), TableColumn::Fencing) => p.system == system,
                        (Some(p), _) => p == TablePlace { system, column },
                        (None, _) => false,
                    })
                    .filter(|_| runnable)
                    .collect();
                cells.push(cell(system, column, &here));
            }
        }
        DecisionTable { cells }
    }

    pub fn cell(&self, system: LockSystem, column: TableColumn) -> &TableCell {
        self.cells.iter().find(|c| c.system == system && c.column == column).expect("every cell is built")
    }
}

fn cell(system: LockSystem, column: TableColumn, runs: &[&MatrixRun<'_>]) -> TableCell {
    let article = article(system, column);
    let sum = |f: &dyn Fn(&RunResults) -> u64| runs.iter().map(|r| f(r.results)).sum::<u64>();
    let tally = RunTally::of(runs);
    let accepted_out_of_order = sum(&|r| r.properties.fencing.accepted_writes_out_of_order);
    let grants_with_token = sum(&|r| r.properties.fencing.grants_with_token);
    let non_increasing_grants = sum(&|r| r.properties.fencing.non_increasing_grants);
    // Tokens must increase with every grant; only a resource that checks them must also refuse
    // a write out of token order (an unfenced one takes it: that is what the row shows).
    let fences = matches!(system, LockSystem::EtcdFenced | LockSystem::ZookeeperFenced);
    let cannot_run_here = article.cannot_run.map(String::from);
    let agrees = match column {
        _ if runs.is_empty() || cannot_run_here.is_some() => None,
        TableColumn::Fencing => Some(grants_with_token > 0 && non_increasing_grants == 0 && (!fences || accepted_out_of_order == 0)),
        // Interrupted runs (and none that did not match) tell neither way.
        _ => match tally.verdict() {
            Verdict::Matched => Some(true),
            Verdict::DidNotMatch => Some(false),
            Verdict::Interrupted | Verdict::NoRuns => None,
        },
    };
    TableCell {
        system,
        column,
        claim: article.claim.into(),
        cannot_run_here,
        accepted_out_of_order,
        grants_with_token,
        non_increasing_grants,
        freed_after_ms: runs
            .iter()
            .flat_map(|r| r.results.properties.availability.freed_after_kill.iter().map(|k| k.freed_after_ms))
            .collect(),
        longest_gap_ms: runs.iter().filter_map(|r| r.results.properties.availability.longest_gap_ms).max_by(f64::total_cmp),
        runs_unavailable_at_end: runs.iter().filter(|r| r.results.properties.availability.unavailable_at_end).count() as u32,
        agrees,
        tally,
    }
}
