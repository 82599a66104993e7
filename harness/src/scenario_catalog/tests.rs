//! Loading as users do (the file's rules, then the preflight against its backend): each bad
//! file must yield one line naming file, line and field.

use crate::scenario::{self, LoadedScenario, ScenarioError};
use std::path::Path;

fn load_text(text: &str) -> Result<LoadedScenario, ScenarioError> {
    let loaded = scenario::load_text(text.to_string(), Path::new("f.toml"))?;
    crate::preflight::check(&loaded)?;
    Ok(loaded)
}

/// (what is wrong, file text, expected complete error line)
const BAD: &[(&str, &str, &str)] = &[
    (
        "typo in a field name",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n[workload]\nwrok_ms = 5\n",
        "f.toml:5: field 'workload.wrok_ms': unknown field `wrok_ms`, expected one of `key`, `work_ms`, `think_ms`, `op_timeout_ms`, `honour_session_loss`",
    ),
    (
        "wrong type",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\nclients = \"two\"\n",
        "f.toml:4: field 'clients': invalid type: string \"two\", expected u32",
    ),
    (
        "missing required field",
        "description = \"d\"\nbackend = \"redis-single\"\n",
        "f.toml:1: missing field `expect`",
    ),
    (
        "unknown backend",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"consul\"\n",
        "f.toml:3: field 'backend': unknown variant `consul`, expected one of `redis-single`, `redlock`, `redis-sentinel`, `etcd`",
    ),
    (
        "a waiter fired by another trigger",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.episode]]\nwhen = \"acquired\"\nfault = \"pause\"\ntarget = \"waiter\"\nduration_ms = 1\n",
        "f.toml:8: field 'nemesis.episode[0].target': waiter is the client that fires `when = \"waiting\"`: it takes no other trigger",
    ),
    (
        "renew-sent without renewals",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.episode]]\nwhen = \"renew-sent\"\nfault = \"pause\"\ntarget = \"holder\"\nduration_ms = 1\n",
        "f.toml:6: field 'nemesis.episode[0].when': renew-sent needs `lock.renew_ms` (clients that renew)",
    ),
    (
        "an episode on a node the backend lacks",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"etcd\"\n\n[[nemesis.episode]]\nfault = \"kill\"\ntarget = [\"n1\", \"n4\"]\nduration_ms = 1\n",
        "f.toml:7: field 'nemesis.episode[0].target': target n4 but the etcd backend has 3 node(s)",
    ),
    (
        "an episode with no target",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"etcd\"\n\n[[nemesis.episode]]\nfault = \"kill\"\ntarget = []\nduration_ms = 1\n",
        "f.toml:7: field 'nemesis.episode[0].target': names no target",
    ),
    (
        "bad expectation",
        "description = \"d\"\nexpect = \"maybe\"\nbackend = \"redis-single\"\n",
        "f.toml:2: field 'expect': unknown variant `maybe`, expected one of `violation`, `safe`, `stuck`",
    ),
    (
        "target beyond the clients",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"pause\"\ntarget = \"client-3\"\nduration_ms = 1\n",
        "f.toml:8: field 'nemesis.timeline[0].target': target client-3 but the scenario has 2 clients",
    ),
    (
        "malformed target",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"pause\"\ntarget = \"node\"\nduration_ms = 1\n",
        "f.toml:8: field 'nemesis.timeline[0].target': unknown target `node`, expected `client-K`, `nK` (K from 1), `holder`, `waiter`, `holder-member`, `leader`, `nodes`, `random-client` or `random-node`",
    ),
    (
        "node beyond the backend's nodes",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"kill\"\ntarget = \"n2\"\nduration_ms = 1\n",
        "f.toml:8: field 'nemesis.timeline[0].target': target n2 but the redis-single backend has 1 node(s)",
    ),
    (
        "unknown trigger",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"kill\"\ntarget = \"n1\"\nduration_ms = 1\nwhen = \"later\"\n",
        "f.toml:10: field 'nemesis.timeline[0].when': unknown variant `later`, expected one of `waiting`, `acquired`, `in-section`, `after-check`, `renew-sent`, `write-sent`, `release-sent`",
    ),
    (
        "partition without `from`",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redlock\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"partition\"\ntarget = \"client-1\"\nduration_ms = 1\n",
        "f.toml:7: field 'nemesis.timeline[0].fault': a partition needs `from` (the members to cut the target off from) or a `shape`",
    ),
    (
        "clock jump on a client",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redlock\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"clock-jump\"\ntarget = \"client-1\"\noffset_ms = 5\nduration_ms = 1\n",
        "f.toml:8: field 'nemesis.timeline[0].target': a clock-jump needs a node target (nK, random-node or leader)",
    ),
    (
        "partition from a node the backend lacks",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redlock\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"partition\"\ntarget = \"client-1\"\nfrom = [\"n4\", \"n6\"]\nduration_ms = 1\n",
        "f.toml:9: field 'nemesis.timeline[0].from[1]': target n6 but the redlock backend has 5 node(s)",
    ),
    (
        "leader on a backend without one",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redlock\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"kill\"\ntarget = \"leader\"\nduration_ms = 1\n",
        "f.toml:8: field 'nemesis.timeline[0].target': target leader on redlock: its servers elect no leader",
    ),
    (
        "latency on a client",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"latency\"\ntarget = \"client-1\"\ndelay_ms = 5\nduration_ms = 1\n",
        "f.toml:8: field 'nemesis.timeline[0].target': latency is added on a node's interface (workers have no NET_ADMIN): the target must be a node",
    ),
    (
        "clock strobe without a period",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"clock-strobe\"\ntarget = \"n1\"\noffset_ms = 5000\nduration_ms = 1\n",
        "f.toml:7: field 'nemesis.timeline[0].fault': clock-strobe: missing field `period_ms`",
    ),
    (
        "a parameter the fault does not take",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"pause\"\ntarget = \"n1\"\noffset_ms = 5000\nduration_ms = 1\n",
        "f.toml:9: field 'nemesis.timeline[0].offset_ms': does not apply to a pause fault",
    ),
    (
        "halves aimed at one node",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"etcd\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"partition\"\ntarget = \"n1\"\nshape = \"halves\"\nduration_ms = 1\n",
        "f.toml:8: field 'nemesis.timeline[0].target': shape halves splits all the nodes: use target = \"nodes\"",
    ),
    (
        "majority ring on three nodes",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"etcd\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"partition\"\ntarget = \"nodes\"\nshape = \"majority-ring\"\nduration_ms = 1\n",
        "f.toml:9: field 'nemesis.timeline[0].shape': majority-ring needs at least 5 nodes; etcd has 3",
    ),
    (
        "failover on a backend without replicas",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"failover\"\ntarget = \"n1\"\nduration_ms = 1\n",
        "f.toml:7: field 'nemesis.timeline[0].fault': redis-single has no failover: it has no replica to promote",
    ),
    (
        "a stuck bound below a second",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\nstuck_after_ms = 500\n",
        "f.toml:4: field 'stuck_after_ms': 500 is below 1000 ms: a lock is not stuck for less",
    ),
    (
        "a stuck claim without a lock",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-xact\"\n[workload]\nkind = \"unique-claim\"\n[claims]\nstuck = false\n",
        "f.toml:7: field 'claims.stuck': the unique-claim workload takes no lock, so it cannot get stuck",
    ),
    (
        "renewal on etcd",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"etcd\"\n\n[lock]\nttl_ms = 2000\nrenew_ms = 500\n",
        "f.toml:7: field 'lock.renew_ms': etcd cannot renew on request: the etcd client keeps its lease alive by itself, every TTL/3",
    ),
    (
        "renewal slower than the TTL",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[lock]\nttl_ms = 2000\nrenew_ms = 2000\n",
        "f.toml:7: field 'lock.renew_ms': 2000 is not below lock.ttl_ms (2000): the lease would lapse between renewals",
    ),
    (
        "a trigger client without a trigger",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"pause\"\ntarget = \"n1\"\nduration_ms = 1\nby = \"client-1\"\n",
        "f.toml:10: field 'nemesis.timeline[0].by': needs `when`: the trigger that this client's events fire",
    ),
    (
        "a trigger client that is a node",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"pause\"\ntarget = \"n1\"\nduration_ms = 1\nwhen = \"acquired\"\nby = \"n1\"\n",
        "f.toml:11: field 'nemesis.timeline[0].by': must name a client (client-K)",
    ),
    (
        "a trigger client beyond the clients",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"pause\"\ntarget = \"n1\"\nduration_ms = 1\nwhen = \"acquired\"\nby = \"client-3\"\n",
        "f.toml:11: field 'nemesis.timeline[0].by': target client-3 but the scenario has 2 clients",
    ),
    (
        "fault after the time limit",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\ntime_limit_secs = 5\n[[nemesis.timeline]]\nat_ms = 9000\nfault = \"pause\"\ntarget = \"holder\"\nduration_ms = 1\n",
        "f.toml:6: field 'nemesis.timeline[0].at_ms': 9000 is not before the time limit (5000 ms)",
    ),
    (
        "inverted random range",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n[nemesis.random]\nfaults = [\"pause\"]\ntarget = \"random-client\"\ninterval_ms = [10, 5]\nduration_ms = [1, 2]\n",
        "f.toml:7: field 'nemesis.random.interval_ms': min 10 is above max 5",
    ),
    (
        "clock slew at rate 1",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redlock\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"clock-slew\"\ntarget = \"n3\"\nrate = 1.0\nduration_ms = 1\n",
        "f.toml:9: field 'nemesis.timeline[0].rate': a clock-slew needs a `rate` between 0.1 and 10 other than 1, not 1",
    ),
    (
        "clock slew on a client",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redlock\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"clock-slew\"\ntarget = \"client-1\"\nrate = 1.05\nduration_ms = 1\n",
        "f.toml:8: field 'nemesis.timeline[0].target': a clock-slew needs a node target (nK, random-node or leader)",
    ),
    (
        "clock slew where the servers ignore libfaketime",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"etcd\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"clock-slew\"\ntarget = \"n1\"\nrate = 1.05\nduration_ms = 1\n",
        "f.toml:7: field 'nemesis.timeline[0].fault': clock faults are not possible on etcd: etcd is a Go program that reads the clock without libc, so libfaketime cannot move it",
    ),
    (
        "clock strobe too fast",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"clock-strobe\"\ntarget = \"n1\"\noffset_ms = 5000\nperiod_ms = 5\nduration_ms = 1\n",
        "f.toml:10: field 'nemesis.timeline[0].period_ms': a clock-strobe needs `period_ms` of at least 10",
    ),
    (
        "a partition between two clients",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"partition\"\ntarget = \"client-1\"\nfrom = [\"client-2\"]\nduration_ms = 1\n",
        "f.toml:9: field 'nemesis.timeline[0].from': cannot cut client-1 off from client-2: partition rules go in nodes only",
    ),
    (
        "an unknown fault",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"freeze\"\ntarget = \"n1\"\nduration_ms = 1\n",
        "f.toml:7: field 'nemesis.timeline[0].fault': unknown fault `freeze`, expected one of: pause, kill, partition",
    ),
    (
        "a wrongly typed fault parameter",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[[nemesis.timeline]]\nat_ms = 1\nfault = \"clock-jump\"\ntarget = \"n1\"\noffset_ms = \"soon\"\nduration_ms = 1\n",
        "f.toml:9: field 'nemesis.timeline[0].offset_ms': invalid type: string \"soon\", expected i64",
    ),
    (
        "a random fault that needs parameters",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n[nemesis.random]\nfaults = [\"pause\", \"latency\"]\ntarget = \"random-node\"\ninterval_ms = [10, 50]\nduration_ms = [1, 2]\n",
        "f.toml:5: field 'nemesis.random.faults': latency needs parameters: use a [[nemesis.timeline]] step",
    ),
    (
        "one member each on a backend whose clients need every node",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redlock\"\n[lock]\none_member_each = true\n",
        "f.toml:5: field 'lock.one_member_each': redlock cannot: its clients need every node, or reach the servers through one address anyway (only etcd's and ZooKeeper's take one member each)",
    ),
    (
        "skipping the key check on a backend whose client does not queue",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n[lock]\ncheck_key_after_wait = false\n",
        "f.toml:5: field 'lock.check_key_after_wait': redis-single cannot: its lock client does not wait in a queue of keys (only etcd's does)",
    ),
    (
        "the conditional write on a backend without a Postgres of the run's own",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n[workload]\nkind = \"conditional-write\"\n",
        "f.toml:5: field 'workload.kind': conditional-write takes no lock and keeps its counter in the run's own Postgres: backend postgres-xact (or -xact-pooler, -xact-replicated), not redis-single",
    ),
    (
        "the unique claim on a backend without a Postgres of the run's own",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"etcd\"\n[workload]\nkind = \"unique-claim\"\n",
        "f.toml:5: field 'workload.kind': unique-claim takes no lock and keeps its counter in the run's own Postgres: backend postgres-xact (or -xact-pooler, -xact-replicated), not etcd",
    ),
    (
        "a version check without the conditional write",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n[workload]\ncheck_version = false\n",
        "f.toml:5: field 'workload.check_version': belongs to workload.kind = \"conditional-write\" only",
    ),
    (
        "the idempotency key's broken variant on another workload",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-xact\"\n[workload]\nkind = \"unique-claim\"\nkey_in_same_transaction = false\n",
        "f.toml:6: field 'workload.key_in_same_transaction': belongs to workload.kind = \"idempotency-key\" only",
    ),
    (
        "the unique claim's broken variant on a lock workload",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-xact\"\n[workload]\nclaim_by_insert = false\n",
        "f.toml:5: field 'workload.claim_by_insert': belongs to workload.kind = \"unique-claim\" only",
    ),
    (
        "shared keys without partitioning",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-xact\"\n[workload]\nkind = \"conditional-write\"\none_owner_per_key = false\n",
        "f.toml:6: field 'workload.one_owner_per_key': belongs to workload.kind = \"partitioned\" only",
    ),
    (
        "keys spread on a lock workload",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-xact\"\n[workload]\nkeys = 4\n",
        "f.toml:5: field 'workload.keys': 4: only the conditional write spreads over keys (at least 1)",
    ),
    (
        "a lock client program for a workload without a lock",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-xact\"\n[client]\ncommand = [\"x\"]\n[workload]\nkind = \"idempotency-key\"\n",
        "f.toml:5: field 'client.command': the idempotency-key workload takes no lock, so no lock client program",
    ),
    (
        "persistence on a backend without it",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-session\"\n[server]\npersistence = \"appendonly\"\n",
        "f.toml:5: field 'server.persistence': postgres-session cannot: it has no persistence setting (only the Redis backends do)",
    ),
    (
        "an unknown Postgres server setting",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-session\"\n[server.postgres]\ntcp_keepalives_idle = 5\ntcp_keepalive_count = 3\n",
        "f.toml:6: field 'server.postgres.tcp_keepalive_count': unknown field `tcp_keepalive_count`, expected one of `tcp_keepalives_idle`, `tcp_keepalives_interval`, `tcp_keepalives_count`, `tcp_user_timeout`",
    ),
    (
        "a Postgres server setting of the wrong type",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-xact\"\n\n[server.postgres]\ntcp_user_timeout = \"4s\"\n",
        "f.toml:6: field 'server.postgres.tcp_user_timeout': invalid type: string \"4s\", expected u32",
    ),
    (
        "a negative Postgres server setting",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-xact\"\n[server.postgres]\ntcp_keepalives_interval = -1\n",
        "f.toml:5: field 'server.postgres.tcp_keepalives_interval': invalid value: integer `-1`, expected u32",
    ),
    (
        "a Postgres server setting beyond Postgres's integers",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-session\"\n[server.postgres]\ntcp_keepalives_count = 3000000000\n",
        "f.toml:5: field 'server.postgres.tcp_keepalives_count': 3000000000 is above Postgres's largest integer setting (2147483647)",
    ),
    (
        "Postgres server settings on a backend that is not Postgres",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n\n[server.postgres]\ntcp_keepalives_idle = 5\n",
        "f.toml:5: field 'server.postgres': redis-single cannot: its servers are not Postgres (only the Postgres backends take [server.postgres])",
    ),
    (
        "a Postgres table resource beside the xact lock's own, through the pooler",
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-xact-pooler\"\n[resource]\nkind = \"postgres\"\n",
        "f.toml:5: field 'resource.kind': postgres-xact-pooler keeps its resource in the lock's own transaction",
    ),
    (
        "a description of several lines",
        "description = \"\"\"one\ntwo\"\"\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n",
        "f.toml:1: field 'description': must be one line of at most 2000 characters",
    ),
    (
        "not TOML at all",
        "description = \"d\nexpect = 1\n",
        "f.toml:1: ",
    ),
];

/// That the server really runs with them is shown by the container case postgres-session-partition
/// (its gap is the keep-alives' 5 s + 3 × 1 s; with the defaults the lock stays held).
#[test]
fn postgres_server_settings_load_as_the_servers_command_line_options() {
    let text = "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-xact-pooler\"\n[server.postgres]\ntcp_keepalives_idle = 5\ntcp_keepalives_interval = 1\ntcp_keepalives_count = 3\ntcp_user_timeout = 9000\n";
    let loaded = load_text(text).unwrap();
    let settings = loaded.scenario.server.postgres.unwrap();
    assert_eq!(
        settings.server_options(),
        " -c tcp_keepalives_idle=5 -c tcp_keepalives_interval=1 -c tcp_keepalives_count=3 -c tcp_user_timeout=9000"
    );
    assert!(loaded.scenario.backend_setup().postgres_settings().is_ok());
    // Absent, the server keeps its defaults.
    let plain = load_text("description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-session\"\n").unwrap();
    assert_eq!(plain.scenario.server.postgres, None);
}

#[test]
fn bad_files_give_one_line_naming_file_line_and_field() {
    for (what, text, want) in BAD {
        let err = load_text(text).expect_err(what).to_string();
        assert!(!err.contains('\n'), "{what}: error spans several lines: {err:?}");
        assert!(err.starts_with(want), "{what}:\n  got  {err}\n  want {want}");
    }
}

#[test]
fn every_shipped_scenario_writes_back_as_toml_that_reads_as_the_same_scenario() {
    // explore writes the scenarios it finds this way (found-N.toml).
    for loaded in super::list(None).unwrap() {
        let loaded = loaded.unwrap();
        let text = toml::to_string(&loaded.scenario).unwrap_or_else(|e| panic!("{}: {e}", loaded.name));
        let again = load_text(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", loaded.name));
        assert_eq!(serde_json::to_value(&again.scenario).unwrap(), serde_json::to_value(&loaded.scenario).unwrap(), "{}", loaded.name);
    }
}
