//! Network partition with iptables inside the node containers (they have NET_ADMIN; workers do
//! not). TCP from the cut-off side is answered with a reset, so clients fail fast instead of
//! hanging until their timeouts. The fault ends by deleting exactly the rules it added, so
//! overlapping partitions heal independently.
//!
//! - target a client, from nodes: each of those nodes rejects the client;
//! - target a node, from members: the node rejects them and drops what it would send them;
//! - a shape over the nodes (isolate, halves, majority-ring): every pair of nodes the shape
//!   separates, as a node-from-node cut. Clients still reach every node, as in Jepsen.

use super::{Fault, FaultContext, Injection};
use crate::scenario::PartitionShape;
use std::net::Ipv4Addr;

/// The node pairs (1-based, a < b) a shape separates among `n` nodes; `target` is the
/// isolated node for `Isolate`.
pub fn cut_pairs(shape: PartitionShape, target: Option<u32>, n: u32) -> Vec<(u32, u32)> {
    let pairs = (1..=n).flat_map(|a| (a + 1..=n).map(move |b| (a, b)));
    match shape {
        PartitionShape::Isolate => pairs.filter(|&(a, b)| Some(a) == target || Some(b) == target).collect(),
        PartitionShape::Halves => {
            let first = n.div_ceil(2);
            pairs.filter(|&(a, b)| (a <= first) != (b <= first)).collect()
        }
        PartitionShape::MajorityRing => {
            // Each node keeps its neighbours within `reach` on the ring: itself + 2·reach nodes,
            // the smallest such set that is a majority.
            let majority = n / 2 + 1;
            let reach = (majority - 1).div_ceil(2);
            pairs.filter(|&(a, b)| (b - a).min(n - (b - a)) > reach).collect()
        }
    }
}

pub struct Partition;

/// (node to run iptables in, rule arguments after -A/-D CHAIN) for one partition.
async fn rules(ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let ip = |name: &str| ctx.cluster.planned_ip(name);
    let reject = |src: Ipv4Addr| -> Vec<String> {
        ["INPUT", "-s", &src.to_string(), "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"].map(String::from).to_vec()
    };
    let mut out = vec![];
    let cut_nodes = |out: &mut Vec<(String, Vec<String>)>, node: &str, other: &str| -> anyhow::Result<()> {
        let addr = ip(other)?;
        out.push((node.to_string(), reject(addr)));
        out.push((node.to_string(), ["OUTPUT", "-d", &addr.to_string(), "-j", "DROP"].map(String::from).to_vec()));
        Ok(())
    };
    if let Some(shape) = inj.params.shape {
        let target = inj.target.strip_prefix('n').and_then(|k| k.parse().ok());
        for (a, b) in cut_pairs(shape, target, ctx.backend.node_count() as u32) {
            cut_nodes(&mut out, &format!("n{a}"), &format!("n{b}"))?;
        }
    } else if ctx.is_node(&inj.target)? {
        for other in &inj.from {
            cut_nodes(&mut out, &inj.target, other)?;
        }
    } else {
        let client = ip(&inj.target)?;
        for node in &inj.from {
            if !ctx.is_node(node)? {
                anyhow::bail!("cannot cut {} off from {node}: two workers have no iptables (cut a node instead)", inj.target);
            }
            out.push((node.clone(), reject(client)));
        }
    }
    Ok(out)
}

#[async_trait::async_trait]
impl Fault for Partition {
    async fn inject(&self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<()> {
        for (node, rule) in rules(ctx, inj).await? {
            let mut cmd = vec!["iptables", "-A"];
            cmd.extend(rule.iter().map(String::as_str));
            ctx.cluster.exec_ok(&node, &cmd).await?;
        }
        Ok(())
    }

    async fn heal(&self, ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<()> {
        for (node, rule) in rules(ctx, inj).await? {
            let mut cmd = vec!["iptables", "-D"];
            cmd.extend(rule.iter().map(String::as_str));
            // A node whose rule is already gone is healed.
            let (code, out) = ctx.cluster.exec(&node, &cmd).await?;
            if code != 0 && !out.contains("does a matching rule exist") && !out.contains("Bad rule") {
                anyhow::bail!("`{}` in {node} exited {code}: {}", cmd.join(" "), out.trim());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::cut_pairs;
    use crate::scenario::PartitionShape::*;

    /// Which nodes each node can still reach (itself included) under the cut.
    fn reachable(pairs: &[(u32, u32)], n: u32) -> Vec<Vec<u32>> {
        (1..=n).map(|a| (1..=n).filter(|&b| !pairs.contains(&(a.min(b), a.max(b)))).collect()).collect()
    }

    #[test]
    fn shapes_cut_the_pairs_jepsen_cuts() {
        assert_eq!(cut_pairs(Isolate, Some(2), 3), [(1, 2), (2, 3)]);
        assert_eq!(reachable(&cut_pairs(Halves, None, 5), 5), [vec![1, 2, 3], vec![1, 2, 3], vec![1, 2, 3], vec![4, 5], vec![4, 5]]);
        assert_eq!(reachable(&cut_pairs(Halves, None, 3), 3), [vec![1, 2], vec![1, 2], vec![3]]);
        let ring = reachable(&cut_pairs(MajorityRing, None, 5), 5);
        assert_eq!(ring, [vec![1, 2, 5], vec![1, 2, 3], vec![2, 3, 4], vec![3, 4, 5], vec![1, 4, 5]]);
    }

    #[test]
    fn in_a_majority_ring_every_node_keeps_a_majority_and_no_two_the_same() {
        for n in [5, 6, 7, 9] {
            let seen = reachable(&cut_pairs(MajorityRing, None, n), n);
            for (i, s) in seen.iter().enumerate() {
                assert!(s.len() as u32 > n / 2, "n={n}: node {} sees {s:?}", i + 1);
            }
            let distinct: std::collections::BTreeSet<_> = seen.iter().collect();
            assert_eq!(distinct.len() as u32, n, "n={n}: {seen:?}");
        }
    }
}
