//! Network partition with iptables inside the node containers (they have NET_ADMIN; workers do
//! not). TCP from the cut-off side is answered with a reset, so clients fail fast instead of
//! hanging until their timeouts. The fault ends by deleting exactly the rules it added, so
//! overlapping partitions heal independently.
//!
//! - target a client, from nodes: each of those nodes rejects the client;
//! - target a node, from members: the node rejects them and drops what it would send them.

use super::{Fault, FaultContext, Injection};
use std::net::Ipv4Addr;

pub struct Partition;

/// (node to run iptables in, rule arguments after -A/-D CHAIN) for one partition.
async fn rules(ctx: &FaultContext<'_>, inj: &Injection) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let ip = |name: &str| ctx.cluster.planned_ip(name);
    let reject = |src: Ipv4Addr| -> Vec<String> {
        ["INPUT", "-s", &src.to_string(), "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"].map(String::from).to_vec()
    };
    let mut out = vec![];
    if ctx.is_node(&inj.target)? {
        for other in &inj.from {
            let addr = ip(other)?;
            out.push((inj.target.clone(), reject(addr)));
            out.push((inj.target.clone(), ["OUTPUT", "-d", &addr.to_string(), "-j", "DROP"].map(String::from).to_vec()));
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
