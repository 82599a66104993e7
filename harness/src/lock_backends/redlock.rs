//! Redlock over five independent Redis nodes, as its documentation describes it: the same
//! SET NX PX on every node with a short per-node timeout; granted when a majority said yes and
//! time is left (validity = TTL − elapsed − drift allowance); otherwise undone on every node and
//! retried after a random delay. Release on every node. No fencing token. (Setup:
//! `redis_server::IndependentServers` with five nodes.)

use super::redis_server::{self, RedisNode};
use super::{Grant, LockClient, LockError};
use crate::lock_backends::LockParams;
use futures_util::future::join_all;
use rand::Rng;
use std::time::{Duration, Instant};

pub const NODES: usize = 5;

pub struct Client {
    nodes: Vec<RedisNode>,
    lock: LockParams,
}

impl Client {
    /// Connects lazily, with the per-node timeout: an unreachable node is what Redlock is meant
    /// to tolerate, and one that does not answer in time counts as a no.
    pub fn new(addrs: &[String], lock: LockParams) -> Self {
        let timeout = Duration::from_millis(lock.node_timeout_ms);
        Client { nodes: addrs.iter().map(|a| RedisNode::new(a, timeout)).collect(), lock }
    }

    async fn release_everywhere(&mut self, key: &str, secret: &str) -> Vec<Result<bool, String>> {
        join_all(self.nodes.iter_mut().map(|n| n.release_if_ours(key, secret))).await
    }
}

/// Validity left after an attempt: TTL − elapsed − (drift_factor × TTL + 2 ms), as in Redlock.
pub fn validity(ttl: Duration, elapsed: Duration, drift_factor: f64) -> Option<Duration> {
    let drift = Duration::from_secs_f64(ttl.as_secs_f64() * drift_factor) + Duration::from_millis(2);
    ttl.checked_sub(elapsed)?.checked_sub(drift).filter(|v| !v.is_zero())
}

#[async_trait::async_trait]
impl LockClient for Client {
    async fn acquire(&mut self, key: &str, timeout: Duration) -> Result<Grant, LockError> {
        let ttl = Duration::from_millis(self.lock.ttl_ms);
        let deadline = Instant::now() + timeout;
        let quorum = self.nodes.len() / 2 + 1;
        loop {
            let secret = redis_server::new_secret();
            let start = Instant::now();
            let ttl_ms = self.lock.ttl_ms;
            // Only a definite yes counts; an error or timeout may still have set the key.
            let replies = join_all(self.nodes.iter_mut().map(|n| n.set_nx_px(key, &secret, ttl_ms))).await;
            let yes = replies.iter().filter(|r| matches!(r, Ok(true))).count();
            tracing::debug!(?replies, "redlock attempt");
            if yes >= quorum {
                if let Some(validity) = validity(ttl, start.elapsed(), self.lock.drift_factor) {
                    return Ok(Grant { token: None, validity, secret });
                }
            }
            // Not granted: undo wherever it may have been set, so others need not wait for TTL.
            self.release_everywhere(key, &secret).await;
            let delay = Duration::from_millis(rand::rng().random_range(0..=self.lock.retry_ms.max(1)));
            if Instant::now() + delay > deadline {
                return Err(LockError::Refused(format!("no majority ({yes}/{} nodes) within {timeout:?}", self.nodes.len())));
            }
            tokio::time::sleep(delay).await;
        }
    }

    async fn release(&mut self, key: &str, grant: &Grant) -> Result<(), LockError> {
        let results = self.release_everywhere(key, &grant.secret).await;
        let deleted = results.iter().filter(|r| matches!(r, Ok(true))).count();
        let errors: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
        let quorum = self.nodes.len() / 2 + 1;
        match (deleted >= quorum, errors.is_empty()) {
            (true, _) => Ok(()),
            (false, true) => Err(LockError::Refused(format!("lock ours on only {deleted} node(s) at release (expired or taken over)"))),
            (false, false) => Err(LockError::Unknown(format!(
                "released on {deleted} node(s); unknown on {}: {}",
                errors.len(),
                errors.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; ")
            ))),
        }
    }

    async fn renew(&mut self, key: &str, grant: &Grant) -> Result<Duration, LockError> {
        self.extend(key, grant).await
    }
}

impl Client {
    /// Redlock's extension: a fresh TTL on every node that still holds our value; renewed when
    /// a majority did and time is left, by the same validity rule as the acquire.
    pub async fn extend(&mut self, key: &str, grant: &Grant) -> Result<Duration, LockError> {
        let start = Instant::now();
        let ttl_ms = self.lock.ttl_ms;
        let replies = join_all(self.nodes.iter_mut().map(|n| n.extend_if_ours(key, &grant.secret, ttl_ms))).await;
        let yes = replies.iter().filter(|r| matches!(r, Ok(true))).count();
        let quorum = self.nodes.len() / 2 + 1;
        let valid = validity(Duration::from_millis(ttl_ms), start.elapsed(), self.lock.drift_factor);
        match valid {
            Some(v) if yes >= quorum => Ok(v),
            _ if replies.iter().any(|r| r.is_err()) => {
                Err(LockError::Unknown(format!("extended on {yes}/{} nodes (no majority in time); others unreachable", self.nodes.len())))
            }
            _ => Err(LockError::Refused(format!("ours on only {yes}/{} nodes: not renewed", self.nodes.len()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::validity;
    use std::time::Duration;

    #[test]
    fn validity_subtracts_elapsed_time_and_drift() {
        let ms = Duration::from_millis;
        // (ttl, elapsed, drift factor, expected validity)
        let cases = [
            (10_000, 100, 0.01, Some(ms(10_000 - 100 - 100 - 2))),
            (1_000, 0, 0.0, Some(ms(998))),
            (1_000, 990, 0.01, None),
            (1_000, 2_000, 0.01, None),
        ];
        for (ttl, elapsed, drift, want) in cases {
            assert_eq!(validity(ms(ttl), ms(elapsed), drift), want, "{ttl} {elapsed} {drift}");
        }
    }
}
