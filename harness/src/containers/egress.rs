//! A run's containers reach each other and nothing else: not the host (the Docker network's
//! gateway is the host's own address on the bridge) and not beyond it. A Docker network marked
//! internal does not stop a container from reaching the host, so each container confines its
//! own outgoing traffic with iptables in its network namespace: nodes and the resource by an
//! exec right after they start, a worker by itself before it starts its client program (the
//! program runs as nobody and cannot change the rules). docs/threat-model.md.
//!
//! The rules live in a chain of their own, jumped to first from OUTPUT, which returns what may
//! pass: the partitions' rules (faults/partition.rs) after the jump still apply to it.

use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

pub const CHAIN: &str = "LOCKCHAOS-EGRESS";

/// Where a container may send: its run's network and any hosts the run's nodes are on, never
/// the gateway.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Egress {
    pub gateway: Ipv4Addr,
    /// CIDRs ("10.213.7.0/24", "192.168.1.20/32").
    pub allowed: Vec<String>,
}

impl Egress {
    /// The rules, as iptables-restore reads them: one process and one commit, so a worker is
    /// confined in milliseconds (nine iptables runs took long enough on a loaded machine for a
    /// scenario's early pause to land in the client's first connect).
    pub fn rules(&self) -> String {
        let mut lines = vec![
            "*filter".to_string(),
            format!(":{CHAIN} - [0:0]"),
            format!("-A {CHAIN} -o lo -j RETURN"),
            // Answers on connections the machine opened (lockchaos or an operator's tool).
            format!("-A {CHAIN} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN"),
            // Before the run's network, which holds it.
            format!("-A {CHAIN} -d {}/32 -p tcp -j REJECT --reject-with tcp-reset", self.gateway),
            format!("-A {CHAIN} -d {}/32 -j REJECT", self.gateway),
        ];
        lines.extend(self.allowed.iter().map(|cidr| format!("-A {CHAIN} -d {cidr} -j RETURN")));
        lines.push(format!("-A {CHAIN} -p tcp -j REJECT --reject-with tcp-reset"));
        lines.push(format!("-A {CHAIN} -j REJECT"));
        lines.push(format!("-I OUTPUT 1 -j {CHAIN}"));
        lines.push("COMMIT".to_string());
        lines.join("\n") + "\n"
    }

    /// Confines the container this process runs in (a worker, before it starts any client).
    pub fn apply_here(&self) -> anyhow::Result<()> {
        let out = std::process::Command::new("sh").args(["-c", &self.script()]).output()?;
        anyhow::ensure!(
            out.status.success(),
            "cannot confine this container's network to the run's: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(())
    }

    /// The shell script that sets the rules up (as root with NET_ADMIN), keeping every other
    /// rule (`--noflush`).
    pub fn script(&self) -> String {
        format!("iptables-restore --noflush <<'RULES'\n{}RULES", self.rules())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_is_refused_before_the_network_that_holds_it_is_let_through() {
        let egress = Egress { gateway: Ipv4Addr::new(10, 213, 7, 1), allowed: vec!["10.213.7.0/24".into()] };
        let script = egress.script();
        let at = |needle: &str| script.find(needle).unwrap_or_else(|| panic!("no `{needle}` in\n{script}"));
        assert!(at("-d 10.213.7.1/32 -p tcp -j REJECT") < at("-d 10.213.7.0/24 -j RETURN"));
        assert!(at("-d 10.213.7.0/24 -j RETURN") < at("-A LOCKCHAOS-EGRESS -j REJECT"));
        assert!(at("-A LOCKCHAOS-EGRESS -j REJECT") < at("-I OUTPUT 1 -j LOCKCHAOS-EGRESS"), "the jump comes after the chain is whole");
        assert!(script.starts_with("iptables-restore --noflush") && script.ends_with("COMMIT\nRULES"), "{script}");
    }
}
