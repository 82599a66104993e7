//! A ZooKeeper session as the lock client sees it. The crate keeps the session alive (pings)
//! and reconnects to another server when a connection breaks; what it cannot say at once is
//! whether the ensemble has expired the session meanwhile: a client frozen or cut off learns
//! that only when it reaches a server again. So the client keeps a deadline of its own, as
//! etcd's keeps its lease's: the send time of the last request the ensemble answered plus the
//! negotiated session timeout, on CLOCK_MONOTONIC, which keeps running while the process is
//! stopped. The ensemble cannot have expired the session before it (the leader counts the
//! timeout from a later touch), so past it the lock may be gone. A check (`exists /`) every
//! third of the timeout moves the deadline on; the crate's Expired or Closed ends the session
//! at once.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zookeeper_client as zk;

/// What the client knows of its session's life.
pub(super) struct Liveness {
    /// When the session may have expired unless the ensemble answers again.
    deadline: Mutex<Instant>,
    /// Set once the session is known to be gone.
    lost: tokio::sync::watch::Sender<bool>,
}

impl Liveness {
    pub fn new(deadline: Instant) -> Self {
        Liveness { deadline: Mutex::new(deadline), lost: tokio::sync::watch::Sender::new(false) }
    }

    pub fn deadline(&self) -> Instant {
        *self.deadline.lock().unwrap()
    }

    /// An answer to a request sent at `sent`: the session lives at least `timeout` from then.
    /// Once the deadline has passed, the session stays lost whatever answers come late.
    pub fn answered(&self, sent: Instant, timeout: Duration) {
        let mut deadline = self.deadline.lock().unwrap();
        if Instant::now() < *deadline {
            *deadline = (*deadline).max(sent + timeout);
        }
    }

    pub fn is_lost(&self) -> bool {
        *self.lost.borrow() || Instant::now() >= self.deadline()
    }

    pub fn mark_lost(&self) {
        self.lost.send_replace(true);
    }

    /// Returns once the session is lost: marked so, or its deadline passed (a local timer).
    pub async fn until_lost(&self) {
        let mut lost = self.lost.subscribe();
        loop {
            if self.is_lost() {
                return;
            }
            let deadline = self.deadline();
            tokio::select! {
                _ = lost.wait_for(|l| *l) => return,
                _ = tokio::time::sleep_until(deadline.into()) => {}
            }
        }
    }
}

pub(super) struct Session {
    pub zk: zk::Client,
    pub liveness: Arc<Liveness>,
    /// Lock paths whose parent znodes this session has made sure of.
    pub parents: HashSet<String>,
    check: tokio::task::JoinHandle<()>,
}

impl Drop for Session {
    /// Dropping the last handle of the crate's client closes the session (its ephemeral znodes
    /// go with it) once a server hears the close, or when it expires.
    fn drop(&mut self) {
        self.check.abort();
    }
}

impl Session {
    /// A new session with `timeout` asked for; the servers in `connect` are tried in turn.
    pub async fn open(connect: &str, timeout: Duration, op_timeout: Duration) -> Result<Session, String> {
        let sent = Instant::now();
        let connecting = zk::Client::connector().with_session_timeout(timeout).with_fail_eagerly().connect(connect);
        let zk = match tokio::time::timeout(op_timeout.max(timeout), connecting).await {
            Ok(Ok(zk)) => zk,
            Ok(Err(e)) => return Err(format!("no ZooKeeper session: {e}")),
            Err(_) => return Err(format!("no ZooKeeper session within {:?}", op_timeout.max(timeout))),
        };
        let negotiated = zk.session_timeout();
        if negotiated != timeout {
            tracing::info!(asked = ?timeout, ?negotiated, "ZooKeeper granted another session timeout");
        }
        let liveness = Arc::new(Liveness::new(sent + negotiated));
        let check = tokio::spawn(check_alive(zk.clone(), negotiated, liveness.clone()));
        tracing::debug!(session = %zk.session_id(), "ZooKeeper session opened");
        Ok(Session { zk, liveness, parents: HashSet::new(), check })
    }

    /// The session id as 16 hex digits: the first part of every lock znode's name, by which
    /// the client finds its own znode after a create whose answer was lost.
    pub fn id_hex(&self) -> String {
        format!("{:016x}", self.zk.session_id().0)
    }

    pub fn is_lost(&self) -> bool {
        self.liveness.is_lost() || self.zk.state().is_terminated()
    }
}

/// Every third of the timeout, asks the ensemble whether `/` exists: each answer moves the
/// deadline on. Ends with the session, which is lost for good: on the crate's terminal state,
/// or once the deadline has passed (even if a server would answer again later: the lock may
/// have passed on meanwhile). Logged, so the client's log says what it saw.
async fn check_alive(zk: zk::Client, timeout: Duration, liveness: Arc<Liveness>) {
    let mut states = zk.state_watcher();
    tokio::select! {
        () = check_until_lost(&zk, timeout, &liveness) => {}
        state = wait_terminal(&mut states) => tracing::info!(session = %zk.session_id(), "ZooKeeper session {state}: lost"),
    }
    liveness.mark_lost();
}

async fn check_until_lost(zk: &zk::Client, timeout: Duration, liveness: &Liveness) {
    let every = timeout / 3;
    let mut failed_in_a_row = 0u32;
    loop {
        if liveness.is_lost() {
            tracing::info!(session = %zk.session_id(), failed_in_a_row, "ZooKeeper session lost: no answer within its timeout");
            return;
        }
        let sent = Instant::now();
        let failure = match tokio::time::timeout(every, zk.check_stat("/")).await {
            Ok(Ok(_)) => {
                liveness.answered(sent, timeout);
                if failed_in_a_row > 0 {
                    tracing::info!(session = %zk.session_id(), failed_in_a_row, "ZooKeeper answers again");
                    failed_in_a_row = 0;
                }
                None
            }
            Ok(Err(e @ (zk::Error::SessionExpired | zk::Error::ClientClosed | zk::Error::AuthFailed))) => {
                tracing::info!(session = %zk.session_id(), "ZooKeeper session ended ({e}): lost");
                return;
            }
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some(format!("no answer within {every:?}")),
        };
        if let Some(why) = failure {
            if failed_in_a_row == 0 {
                let left = liveness.deadline().saturating_duration_since(Instant::now());
                tracing::info!(session = %zk.session_id(), "session check failed: {why}; the session may expire in {left:?} unless a server answers");
            }
            failed_in_a_row += 1;
        }
        tokio::time::sleep_until((sent + every).into()).await;
    }
}

/// Returns the crate's terminal session state (expired, closed, authentication failed) once it
/// comes.
async fn wait_terminal(states: &mut zk::StateWatcher) -> zk::SessionState {
    let mut state = states.peek_state();
    while !state.is_terminated() {
        state = states.changed().await;
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_session_is_lost_when_marked_or_when_its_deadline_passes_and_an_answer_moves_it_on() {
        let start = Instant::now();
        let liveness = Liveness::new(start + Duration::from_millis(50));
        // An answer to an older request never moves the deadline back.
        liveness.answered(start - Duration::from_secs(1), Duration::from_millis(10));
        assert_eq!(liveness.deadline(), start + Duration::from_millis(50));
        liveness.answered(start, Duration::from_millis(80));
        assert_eq!(liveness.deadline(), start + Duration::from_millis(80));
        assert!(!liveness.is_lost());
        liveness.until_lost().await;
        assert!(start.elapsed() >= Duration::from_millis(75) && liveness.is_lost());
        // A late answer does not bring a lost session back.
        liveness.answered(Instant::now(), Duration::from_secs(5));
        assert!(liveness.is_lost());

        let liveness = Arc::new(Liveness::new(Instant::now() + Duration::from_secs(60)));
        let waiter = tokio::spawn({
            let liveness = liveness.clone();
            async move { liveness.until_lost().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        liveness.mark_lost();
        tokio::time::timeout(Duration::from_secs(1), waiter).await.unwrap().unwrap();
    }
}
