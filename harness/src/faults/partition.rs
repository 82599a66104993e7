//! Network partition with iptables inside the node containers (never a worker's, where a client
//! program runs beside the worker). TCP from the cut-off side is answered with a reset, so clients fail fast instead of
//! hanging until their timeouts. The fault ends by deleting exactly the rules it added, so
//! overlapping partitions heal independently.
//!
//! - target a client, from nodes: each of those nodes refuses the client;
//! - target a node, from members: the node refuses them and drops what it would send them;
//! - a shape over the nodes (isolate, halves, majority-ring): every pair of nodes the shape
//!   separates, as a node-from-node cut. Clients still reach every node, as in Jepsen.
//!
//! The rules are built by [`Cut`]; a fault that implements [`CutFault`] (a partition and its
//! own way of refusing packets) is a fault like this one.

use super::{not_all_nodes, BackendView, FaultAction, FaultContext, StepError};
use crate::target::Target;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Partition {
    /// The members the target is cut off from (`nK`, `client-K`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from: Vec<Target>,
    /// A shape over the nodes instead of `from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<PartitionShape>,
}

/// Jepsen's partition shapes over the backend's nodes (clients keep reaching every node).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum PartitionShape {
    /// The target node loses every other node.
    Isolate,
    /// n1..n⌈N/2⌉ and the rest lose each other.
    Halves,
    /// Every node keeps a majority (itself and its nearest neighbours on a ring), but no two
    /// nodes keep the same majority. Needs 5 or more nodes.
    MajorityRing,
}

impl PartitionShape {
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The fewest nodes the shape can split.
    fn least_nodes(self) -> u32 {
        match self {
            PartitionShape::Isolate | PartitionShape::Halves => 2,
            PartitionShape::MajorityRing => 5,
        }
    }
}

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

/// The INPUT rule (after -A/-D) that refuses TCP from `src` with a reset: connects and
/// requests fail at once.
pub fn reset_from(src: Ipv4Addr) -> Vec<String> {
    ["INPUT", "-s", &src.to_string(), "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"].map(String::from).to_vec()
}

/// One partition as iptables rules: (node to run iptables in, rule arguments after -A/-D).
pub struct Cut<'a> {
    pub partition: &'a Partition,
    /// The INPUT rule that refuses a cut-off member's packets (e.g. [`reset_from`]).
    pub refuse: fn(Ipv4Addr) -> Vec<String>,
}

impl Cut<'_> {
    /// The load-time rules of a partition on `target`.
    pub fn check(&self, target: &Target) -> Result<(), StepError> {
        let p = self.partition;
        match p.shape {
            None if p.from.is_empty() => {
                Err(("fault", "a partition needs `from` (the members to cut the target off from) or a `shape`".into()))
            }
            Some(_) if !p.from.is_empty() => Err(("shape", "give either `from` or a `shape`, not both".into())),
            Some(PartitionShape::Isolate) if !target.is_node() => {
                Err(("target", "shape isolate cuts a node off from the others: the target must be a node".into()))
            }
            Some(shape @ (PartitionShape::Halves | PartitionShape::MajorityRing)) if *target != Target::AllNodes => {
                Err(("target", format!("shape {} splits all the nodes: use target = \"nodes\"", shape.name())))
            }
            Some(_) => Ok(()),
            None if p.from.contains(target) => Err(("from", format!("{target} cannot be cut off from itself"))),
            None if target.is_client() => match p.from.iter().find(|m| m.is_client()) {
                Some(other) => Err((
                    "from",
                    format!("cannot cut {target} off from {other}: partition rules go in nodes only, so two clients cannot be parted (cut a node off instead)"),
                )),
                None => Ok(()),
            },
            None => not_all_nodes(target),
        }
    }

    /// The backend rules: a shape needs enough nodes to split.
    pub fn check_backend(&self, backend: &BackendView<'_>) -> Result<(), StepError> {
        let nodes = backend.setup.node_count() as u32;
        match self.partition.shape {
            Some(shape) if nodes < shape.least_nodes() => {
                Err(("shape", format!("{} needs at least {} nodes; {} has {nodes}", shape.name(), shape.least_nodes(), backend.name)))
            }
            _ => Ok(()),
        }
    }

    /// (node to run iptables in, rule arguments after -A/-D CHAIN) for the cut around `target`.
    pub fn rules(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<Vec<(String, Vec<String>)>> {
        let ip = |name: &str| ctx.cluster.planned_ip(name);
        let mut out = vec![];
        let mut cut_nodes = |node: &str, other: &str| -> anyhow::Result<()> {
            let addr = ip(other)?;
            out.push((node.to_string(), (self.refuse)(addr)));
            out.push((node.to_string(), ["OUTPUT", "-d", &addr.to_string(), "-j", "DROP"].map(String::from).to_vec()));
            Ok(())
        };
        let from: Vec<String> = self.partition.from.iter().map(Target::to_string).collect();
        if let Some(shape) = self.partition.shape {
            let isolated = target.strip_prefix('n').and_then(|k| k.parse().ok());
            for (a, b) in cut_pairs(shape, isolated, ctx.backend.node_count() as u32) {
                cut_nodes(&format!("n{a}"), &format!("n{b}"))?;
            }
        } else if ctx.is_node(target)? {
            for other in &from {
                cut_nodes(target, other)?;
            }
        } else {
            let client = ip(target)?;
            for node in &from {
                if !ctx.is_node(node)? {
                    anyhow::bail!("cannot cut {target} off from {node}: partition rules go in nodes only, so two clients cannot be parted (cut a node instead)");
                }
                out.push((node.clone(), (self.refuse)(client)));
            }
        }
        // Tagged with the run, so a teardown on a host (or `lockchaos clean`) deletes exactly
        // this run's rules: `CHAIN -m comment --comment lockchaos-<run> …`.
        let tag = crate::hosts::rule_tag(&ctx.cluster.run_id);
        for (_, rule) in &mut out {
            rule.splice(1..1, ["-m", "comment", "--comment", &tag].map(String::from));
        }
        Ok(out)
    }

    pub async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        for (node, rule) in self.rules(ctx, target)? {
            let mut cmd = vec!["iptables", "-A"];
            cmd.extend(rule.iter().map(String::as_str));
            ctx.cluster.exec_ok(&node, &cmd).await?;
        }
        Ok(())
    }

    pub async fn heal(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        for (node, rule) in self.rules(ctx, target)? {
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

/// A fault that cuts the network as a [`Partition`] says, refusing packets its own way. Every
/// such fault is a [`FaultAction`] through this trait: a new kind of partition is its
/// parameters and its [`Cut`].
pub trait CutFault: Send + Sync {
    /// The cut this fault makes.
    fn cut(&self) -> Cut<'_>;
    /// Its partition, to draw random members.
    fn partition_mut(&mut self) -> &mut Partition;
}

impl CutFault for Partition {
    fn cut(&self) -> Cut<'_> {
        Cut { partition: self, refuse: reset_from }
    }

    fn partition_mut(&mut self) -> &mut Partition {
        self
    }
}

#[async_trait::async_trait]
impl<F: CutFault> FaultAction for F {
    fn detail(&self) -> Option<String> {
        let p = self.cut().partition;
        Some(match p.shape {
            Some(shape) => shape.name().to_string(),
            None => format!("from {}", p.from.iter().map(Target::to_string).collect::<Vec<_>>().join(", ")),
        })
    }

    fn check(&self, target: &Target) -> Result<(), StepError> {
        self.cut().check(target)
    }

    fn check_backend(&self, _target: &Target, backend: &BackendView<'_>) -> Result<(), StepError> {
        self.cut().check_backend(backend)
    }

    fn members(&self) -> Vec<&Target> {
        self.cut().partition.from.iter().collect()
    }

    /// A host tells clients apart only by their addresses on a network they share.
    fn check_on_hosts(&self, target: &Target, shared_client_address: bool) -> Result<(), StepError> {
        let cuts_a_client = target.is_client() || self.cut().partition.from.iter().any(Target::is_client);
        if cuts_a_client && shared_client_address {
            return Err((
                "fault",
                "cuts a client off, but the hosts see every client at this machine's one address: give the nodes-file a [workers] docker_network the hosts are on".into(),
            ));
        }
        Ok(())
    }

    fn members_mut(&mut self) -> Vec<&mut Target> {
        self.partition_mut().from.iter_mut().collect()
    }

    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        self.cut().inject(ctx, target).await
    }

    async fn heal(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        self.cut().heal(ctx, target).await
    }
}

#[cfg(test)]
mod tests {
    use super::PartitionShape::*;
    use super::*;

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

    #[test]
    fn two_clients_cannot_be_parted_and_shapes_need_their_targets() {
        let p = |from: &[&str], shape| Partition { from: from.iter().map(|t| t.parse().unwrap()).collect(), shape };
        let field = |p: Partition, target: &str| p.check(&target.parse().unwrap()).err().map(|(f, _)| f);
        assert_eq!(field(p(&["client-2"], None), "client-1"), Some("from"));
        assert_eq!(field(p(&["n1", "n2"], None), "client-1"), None);
        assert_eq!(field(p(&["client-2"], None), "n1"), None, "a node can be cut off from a client");
        assert_eq!(field(p(&[], None), "n1"), Some("fault"));
        assert_eq!(field(p(&["n2"], Some(Halves)), "nodes"), Some("shape"));
        assert_eq!(field(p(&[], Some(Halves)), "n1"), Some("target"));
        assert_eq!(field(p(&[], Some(Isolate)), "client-1"), Some("target"));
        assert_eq!(field(p(&[], Some(MajorityRing)), "nodes"), None);
        assert_eq!(field(p(&["n2"], None), "nodes"), Some("target"));
        assert_eq!(field(p(&["n2", "n1"], None), "n1"), Some("from"), "not from itself");
    }
}
