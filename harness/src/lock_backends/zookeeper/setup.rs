//! A 3-server ZooKeeper ensemble, one server per node (n1..n3), each the JVM of Debian's
//! package started in the background under the node's docker-init. A server restarted after a
//! kill keeps its data directory (snapshot and transaction log) and rejoins the quorum: nothing
//! committed is forgotten.

use super::PORT;
use crate::containers::Cluster;
use crate::lock_backends::{BackendSetup, ClientConfig, Leader, Unsupported};
use crate::wait;
use anyhow::Context;
use std::time::Duration;

pub const NODES: usize = 3;
/// The server is a JVM: a node runs no other Java program.
pub const PROCESS: &str = "java";
const QUORUM_PORT: u16 = 2888;
const ELECTION_PORT: u16 = 3888;
/// How long a start or restart may take until the server serves in a quorum (a JVM's start and
/// an election, three of them at once on a loaded machine).
const START_LIMIT: Duration = Duration::from_secs(60);
/// ZooKeeper's unit of time. A session expires in the tick after its timeout, and a follower
/// that hears nothing from its leader for `syncLimit` ticks drops it: 500 ms keeps both close
/// to the scenario's figures (the package's default, 2 s, would also raise the shortest
/// session timeout the servers grant to 4 s).
const TICK_MS: u32 = 500;

pub struct Setup;

fn data_dir(node: &str) -> String {
    format!("/var/lib/zookeeper-{node}")
}

/// zoo.cfg for every server of the ensemble (`server_ips[i]` is server i + 1's address).
/// Session timeouts from 1 s to 60 s are granted as asked (the defaults, 2 and 20 ticks, would
/// bend a scenario's `ttl_ms`); `srvr` and `ruok` are the four-letter words lockchaos uses to
/// find the leader and see a server serve.
pub fn zoo_cfg(node: &str, server_ips: &[String]) -> String {
    let mut cfg = format!(
        "tickTime={TICK_MS}\ninitLimit=20\nsyncLimit=4\ndataDir={}\nclientPort={PORT}\n\
         minSessionTimeout=1000\nmaxSessionTimeout=60000\n4lw.commands.whitelist=srvr,ruok\n\
         admin.enableServer=false\n",
        data_dir(node)
    );
    for (i, ip) in server_ips.iter().enumerate() {
        cfg.push_str(&format!("server.{}={ip}:{QUORUM_PORT}:{ELECTION_PORT}\n", i + 1));
    }
    cfg
}

/// A server's role in its `srvr` answer: `Mode: leader` or `Mode: follower` once it serves in a
/// quorum; None while it does not ("This ZooKeeper instance is not currently serving requests").
pub fn serving_mode(srvr: &str) -> Option<&str> {
    srvr.lines().find_map(|l| l.strip_prefix("Mode: ")).map(str::trim).filter(|m| matches!(*m, "leader" | "follower"))
}

/// A four-letter word sent to the server in this node; prints the answer. python3 is in the
/// node image; the JVM's own client would take seconds to start.
const FOUR_LETTER_WORD: &str = r"import socket, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), 2)
s.settimeout(2)
s.sendall(sys.argv[2].encode())
out = b''
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    out += chunk
sys.stdout.write(out.decode(errors='replace'))
";

async fn four_letter_word(cluster: &Cluster, node: &str, word: &str) -> anyhow::Result<(i64, String)> {
    cluster.exec(node, &["python3", "-c", FOUR_LETTER_WORD, &PORT.to_string(), word]).await
}

fn server_ips(cluster: &Cluster) -> anyhow::Result<Vec<String>> {
    (1..=NODES).map(|i| cluster.planned_ip(&format!("n{i}")).map(|ip| ip.to_string())).collect()
}

#[async_trait::async_trait]
impl BackendSetup for Setup {
    fn node_count(&self) -> usize {
        NODES
    }

    fn server_process(&self) -> &'static str {
        PROCESS
    }

    fn one_member_each(&self) -> Result<(), Unsupported> {
        Ok(())
    }

    fn renew(&self) -> Result<(), Unsupported> {
        Err("the ZooKeeper client keeps its session alive by itself (pings, and a check every third of the session timeout)")
    }

    fn clock_faults(&self) -> Result<(), Unsupported> {
        Err("its servers are not started under libfaketime (whether libfaketime moves a JVM's clocks and timers is not measured here)")
    }

    fn leader(&self) -> Result<&dyn Leader, Unsupported> {
        Ok(self)
    }

    async fn start_node(&self, cluster: &Cluster, node: &str) -> anyhow::Result<()> {
        let myid = node.trim_start_matches('n');
        let dir = data_dir(node);
        let cfg = zoo_cfg(node, &server_ips(cluster)?);
        let conf = format!("/lockchaos/zookeeper-{node}");
        // The server's data directory survives a kill: a restarted server recovers from it.
        let prepare = format!("mkdir -p {dir} {conf} && echo {myid} > {dir}/myid && printf '%s' '{cfg}' > {conf}/zoo.cfg");
        cluster.exec_ok(node, &["sh", "-c", &prepare]).await.with_context(|| format!("configuring ZooKeeper in {node}"))?;
        // The package's classpath, with slf4j's simple binding so the server logs to stderr
        // (the package ships none on the classpath). C1 only and a small serial heap: three
        // JVMs start at once beside the rest of a run on two cores.
        let command = format!(
            "nohup java -Xms32m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
             -Dorg.slf4j.simpleLogger.showDateTime=true \"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss.SSS\" \
             -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
             org.apache.zookeeper.server.quorum.QuorumPeerMain {conf}/zoo.cfg \
             >> /lockchaos/logs/{node}-zookeeper.log 2>&1 &"
        );
        cluster.exec_ok(node, &["sh", "-c", &command]).await.with_context(|| format!("starting ZooKeeper in {node}"))?;
        wait_serving(cluster, node).await
    }

    fn client_config(&self, cluster: &Cluster) -> ClientConfig {
        let servers = server_ips(cluster).unwrap_or_default().into_iter().map(|ip| format!("{ip}:{PORT}")).collect();
        ClientConfig::Zookeeper { servers }
    }
}

#[async_trait::async_trait]
impl Leader for Setup {
    /// Asks each server for its `srvr` and returns the first that says it leads.
    async fn leader(&self, cluster: &Cluster) -> anyhow::Result<Option<String>> {
        for i in 1..=NODES {
            let node = format!("n{i}");
            let (code, out) = four_letter_word(cluster, &node, "srvr").await?;
            if code == 0 && serving_mode(&out) == Some("leader") {
                return Ok(Some(node));
            }
        }
        Ok(None)
    }
}

/// The server answers `srvr` as a leader or a follower: it has joined a quorum and serves.
async fn wait_serving(cluster: &Cluster, node: &str) -> anyhow::Result<()> {
    let what = format!("ZooKeeper in {node} serving in a quorum (see logs/{node}-zookeeper.log)");
    wait::until(&what, START_LIMIT, Duration::from_millis(300), || async {
        let (code, out) = four_letter_word(cluster, node, "srvr").await?;
        let serving = code == 0 && serving_mode(&out).is_some();
        Ok(wait::ready_if(serving, out.lines().last().unwrap_or_default().to_string()))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_server_is_named_with_its_quorum_and_election_ports_and_sessions_get_their_timeout() {
        let cfg = zoo_cfg("n2", &["10.0.0.2".into(), "10.0.0.3".into(), "10.0.0.4".into()]);
        assert!(cfg.contains("dataDir=/var/lib/zookeeper-n2\n"));
        assert!(cfg.contains("server.1=10.0.0.2:2888:3888\nserver.2=10.0.0.3:2888:3888\nserver.3=10.0.0.4:2888:3888\n"));
        assert!(cfg.contains("minSessionTimeout=1000\n") && cfg.contains("tickTime=500\n"));
        // Written into the node inside single quotes.
        assert!(!cfg.contains('\''));
    }

    /// The program is Python as python3 reads it (a Rust string's line continuations would eat
    /// its indentation).
    #[test]
    fn the_four_letter_word_program_is_valid_python() {
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys; compile(sys.argv[1], 'srvr', 'exec')", FOUR_LETTER_WORD])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    #[test]
    fn a_server_serves_as_leader_or_follower_and_not_while_it_looks_for_a_quorum() {
        let leader = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: leader\nNode count: 5\n";
        assert_eq!(serving_mode(leader), Some("leader"));
        assert_eq!(serving_mode("Mode: follower\n"), Some("follower"));
        assert_eq!(serving_mode("This ZooKeeper instance is not currently serving requests\n"), None);
        assert_eq!(serving_mode("Mode: standalone\n"), None);
        assert_eq!(serving_mode(""), None);
    }
}
