//! Who a fault hits, as a scenario names it: `client-K`, `nK`, `holder`, `waiter`, `holder-member`,
//! `leader`, `nodes`, `random-client`, `random-node`. Parsed from and written as those words.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which party a fault hits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `client-K`: worker K (1-based).
    Client(u32),
    /// `holder`: the worker inside its critical section (read done, write not yet sent) when the
    /// step fires; the step waits for one. This is how a pause lands between check and write.
    Holder,
    /// `waiter`: a client that has sent its acquire and waits while another holds the lock,
    /// when the step fires (the trigger `waiting`, which this target implies).
    Waiter,
    /// `holder-member`: the node whose member the holder talks to (clients pinned to one
    /// member each, `lock.one_member_each`); waits for a holder as `holder` does.
    HolderMember,
    /// `random-client`: a worker drawn from the seed.
    RandomClient,
    /// `nK`: node K (1-based): its server process.
    Node(u32),
    /// `random-node`: a node drawn from the seed.
    RandomNode,
    /// `leader`: the node whose server leads when the step fires (etcd).
    Leader,
    /// `nodes`: all the backend's nodes (partition shapes halves and majority-ring).
    AllNodes,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Client(k) => write!(f, "client-{k}"),
            Target::Holder => f.write_str("holder"),
            Target::Waiter => f.write_str("waiter"),
            Target::HolderMember => f.write_str("holder-member"),
            Target::RandomClient => f.write_str("random-client"),
            Target::Node(k) => write!(f, "n{k}"),
            Target::RandomNode => f.write_str("random-node"),
            Target::Leader => f.write_str("leader"),
            Target::AllNodes => f.write_str("nodes"),
        }
    }
}

impl std::str::FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "holder" => return Ok(Target::Holder),
            "waiter" => return Ok(Target::Waiter),
            "holder-member" => return Ok(Target::HolderMember),
            "random-client" => return Ok(Target::RandomClient),
            "random-node" => return Ok(Target::RandomNode),
            "leader" => return Ok(Target::Leader),
            "nodes" => return Ok(Target::AllNodes),
            _ => {}
        }
        let number = |prefix: &str| s.strip_prefix(prefix).and_then(|k| k.parse::<u32>().ok()).filter(|k| *k >= 1);
        number("client-").map(Target::Client).or_else(|| number("n").map(Target::Node)).ok_or_else(|| {
            format!(
                "unknown target `{s}`, expected `client-K`, `nK` (K from 1), `holder`, `waiter`, `holder-member`, `leader`, `nodes`, `random-client` or `random-node`"
            )
        })
    }
}

impl Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl Target {
    /// Whether the target is (or resolves to) one of the backend's nodes.
    pub fn is_node(&self) -> bool {
        matches!(self, Target::Node(_) | Target::RandomNode | Target::Leader | Target::HolderMember)
    }

    /// Whether the step waits for a client in its critical section to find its target.
    pub fn waits_for_holder(&self) -> bool {
        matches!(self, Target::Holder | Target::HolderMember)
    }

    /// The trigger a step on this target waits for when it names none: a holder in its
    /// section, a waiter waiting.
    pub fn implied_trigger(&self) -> Option<crate::trigger::Trigger> {
        use crate::trigger::Trigger;
        match self {
            Target::Holder | Target::HolderMember => Some(Trigger::InSection),
            Target::Waiter => Some(Trigger::Waiting),
            _ => None,
        }
    }

    /// Whether the target is (or resolves to) one client.
    pub fn is_client(&self) -> bool {
        matches!(self, Target::Client(_) | Target::Holder | Target::Waiter | Target::RandomClient)
    }
}

#[cfg(test)]
mod tests {
    use super::Target;

    #[test]
    fn targets_read_and_write_as_the_words_scenarios_use() {
        for word in ["client-3", "n5", "holder", "waiter", "holder-member", "leader", "nodes", "random-client", "random-node"] {
            assert_eq!(word.parse::<Target>().unwrap().to_string(), word);
        }
        for bad in ["client-0", "n", "x1", "client-", "node-1"] {
            assert!(bad.parse::<Target>().is_err(), "{bad}");
        }
    }
}
