//! The ZooKeeper lock client: the lock recipe of ZooKeeper's documentation, over one session
//! (session.rs) that later acquires reuse until it is lost.
//!
//! acquire:
//! 1. The session: opened by the first acquire with `lock.ttl_ms` as its timeout (the servers
//!    grant 1 to 60 s as asked), a new one only once it is lost.
//! 2. The lock's parent znode, `/lockchaos/lock/<name>` (persistent), made once per session.
//! 3. Our znode, ephemeral sequential: `<parent>/<session id in hex>-<sequence>`. ZooKeeper's
//!    create2 answers with its Stat: the czxid is the fencing token. A create whose connection
//!    broke before the answer may have been applied: the client lists the children and takes
//!    the one named after its session (Curator's "protected" create does the same).
//! 4. List the children: ours the lowest sequence number, the lock is ours. Otherwise watch
//!    (`exists` with a watch) the znode just ahead of ours, wait until it changes (it is
//!    deleted) or the session is lost, and list again; no polling. Ours no longer listed: the
//!    session expired while we waited, and the ensemble deleted our znode (refused).
//!
//! The wait ends at the acquire deadline or when the session is lost; a failed attempt then
//! deletes its znode so nobody waits behind it, and if that fails too, the session is abandoned:
//! closed, which deletes every znode it owns, or expiring within its timeout.
//!
//! release: delete our znode. Already gone (or the session expired): the ensemble deleted it
//! when the session expired, and the lock was no longer ours (refused). A delete whose outcome
//! is unknown abandons the session, so the znode lives at most a session timeout.
//!
//! Errors: a request ZooKeeper refused, or that a terminated session could not send, was not
//! applied (refused); one whose connection broke or whose answer did not come within the
//! operation timeout may have been (unknown): a request still queued in the crate while it
//! reconnects is sent when it has, so the client then abandons the session.

use super::session::Session;
use crate::lock_backends::{Grant, LockClient, LockError, LockParams};
use std::future::Future;
use std::time::{Duration, Instant};
use zookeeper_client as zk;

/// Every lock lives under this path: `/lockchaos/lock/<name>/<session id in hex>-<sequence>`.
const ROOT: &str = "/lockchaos/lock";

pub struct Client {
    /// The servers, `IP:2181,IP:2181,...`, as ZooKeeper's clients take them.
    connect: String,
    lock: LockParams,
    op_timeout: Duration,
    session: Option<Session>,
}

/// Why a request has no answer to go by.
#[derive(Debug)]
enum Failure {
    /// ZooKeeper's answer, or the crate's: the error.
    Answer(zk::Error),
    /// No answer within the operation timeout.
    NoAnswer(Duration),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Answer(e) => write!(f, "{e}"),
            Failure::NoAnswer(limit) => write!(f, "no answer within {limit:?}"),
        }
    }
}

impl Failure {
    /// The session is over: every znode it owned is gone, and no request of it will be applied.
    fn session_ended(&self) -> bool {
        matches!(self, Failure::Answer(zk::Error::SessionExpired | zk::Error::ClientClosed | zk::Error::AuthFailed))
    }

    /// The request was certainly not applied: ZooKeeper refused it, or the session is over.
    fn not_applied(&self) -> bool {
        self.session_ended()
            || matches!(
                self,
                Failure::Answer(
                    zk::Error::NoNode
                        | zk::Error::NodeExists
                        | zk::Error::BadVersion
                        | zk::Error::NotEmpty
                        | zk::Error::NoAuth
                        | zk::Error::InvalidAcl
                        | zk::Error::NoChildrenForEphemerals
                        | zk::Error::BadArguments(_)
                        | zk::Error::NoHosts
                )
            )
    }
}

/// A request to ZooKeeper, bounded by the operation timeout.
async fn timed<T>(limit: Duration, request: impl Future<Output = Result<T, zk::Error>>) -> Result<T, Failure> {
    match tokio::time::timeout(limit, request).await {
        Ok(answer) => answer.map_err(Failure::Answer),
        Err(_) => Err(Failure::NoAnswer(limit)),
    }
}

/// Where our znode stands among the lock's children.
#[derive(Debug, PartialEq, Eq)]
enum Turn {
    /// Ours has the lowest sequence number: the lock is ours.
    Ours,
    /// The child just ahead of ours, to watch.
    Behind(String),
    /// Ours is not among them: the session expired and the ensemble deleted it.
    Gone,
}

/// A lock znode's sequence number: the digits after its last `-` (ZooKeeper appends ten, or
/// nineteen past 2^31); None for a name that is not a lock znode's.
fn sequence(child: &str) -> Option<i64> {
    let (_, digits) = child.rsplit_once('-')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// Our turn, from the parent's children and our znode's name.
fn turn(children: &[String], mine: &str) -> Turn {
    let Some(my_sequence) = children.iter().find(|c| *c == mine).and_then(|c| sequence(c)) else {
        return Turn::Gone;
    };
    let ahead = children.iter().filter_map(|c| sequence(c).map(|s| (s, c))).filter(|(s, _)| *s < my_sequence).max_by_key(|(s, _)| *s);
    match ahead {
        None => Turn::Ours,
        Some((_, child)) => Turn::Behind(child.clone()),
    }
}

fn child_name(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

/// What became of our create.
enum Created {
    /// Our znode: its path and czxid.
    Node(String, i64),
    Refused(String),
    /// It may exist: the session must be abandoned so that it does not outlive the attempt.
    Unknown(String),
}

impl Client {
    pub fn new(servers: &[String], lock: LockParams, op_timeout: Duration) -> Self {
        Client { connect: servers.join(","), lock, op_timeout, session: None }
    }

    fn retry_pause(&self) -> Duration {
        Duration::from_millis(self.lock.retry_ms.max(1))
    }

    /// The current session, or a new one when there is none or it is lost.
    async fn session(&mut self) -> Result<&Session, LockError> {
        if self.session.as_ref().is_some_and(Session::is_lost) {
            // Closes it: if the ensemble still has it, its znodes go now rather than at expiry.
            self.session = None;
        }
        if self.session.is_none() {
            let timeout = Duration::from_millis(self.lock.ttl_ms);
            self.session = Some(Session::open(&self.connect, timeout, self.op_timeout).await.map_err(LockError::Refused)?);
        }
        Ok(self.session.as_ref().expect("opened above"))
    }

    /// Ends the session: no more checks, and the crate's client dropped, which closes it.
    fn abandon(&mut self) {
        if let Some(session) = self.session.take() {
            tracing::debug!(session = %session.zk.session_id(), "abandoning the ZooKeeper session");
        }
    }

    /// The parent znode of the lock's contenders, made once per session.
    async fn ensure_parent(&mut self, parent: &str) -> Result<(), LockError> {
        let op_timeout = self.op_timeout;
        let session = self.session.as_mut().expect("an acquire opens the session first");
        if session.parents.contains(parent) {
            return Ok(());
        }
        let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        // A parent made or not is no grant either way: any failure is a refused acquire.
        timed(op_timeout, session.zk.mkdir(parent, &options))
            .await
            .map_err(|e| LockError::Refused(format!("making the lock's parent znode {parent}: {e}")))?;
        session.parents.insert(parent.to_string());
        Ok(())
    }

    /// Step 3: our ephemeral sequential znode and its czxid.
    async fn create_node(&self, session: &Session, parent: &str, deadline: Instant) -> Created {
        let own_prefix = format!("{}-", session.id_hex());
        let path = format!("{parent}/{own_prefix}");
        let options = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        match timed(self.op_timeout, session.zk.create(&path, b"", &options)).await {
            Ok((stat, sequence)) => Created::Node(format!("{path}{sequence}"), stat.czxid),
            Err(e) if e.not_applied() => Created::Refused(format!("creating the lock znode: {e}")),
            // The connection broke with the create in flight: applied or not, the ensemble knows.
            Err(Failure::Answer(zk::Error::ConnectionLoss)) => self.find_own_node(session, parent, &own_prefix, deadline).await,
            Err(e) => Created::Unknown(format!("creating the lock znode: {e}")),
        }
    }

    /// After a create whose answer was lost: our znode is the child named after our session.
    async fn find_own_node(&self, session: &Session, parent: &str, own_prefix: &str, deadline: Instant) -> Created {
        let lost = "the create's connection broke before its answer";
        while Instant::now() < deadline {
            let children = match timed(self.op_timeout, session.zk.list_children(parent)).await {
                Ok(children) => children,
                Err(e) if e.session_ended() => return Created::Refused(format!("{lost}, and the session ended: {e}")),
                Err(e) => {
                    tracing::debug!("listing the lock's children after a lost create: {e}");
                    tokio::time::sleep(self.retry_pause()).await;
                    continue;
                }
            };
            let Some(mine) = children.iter().find(|c| c.starts_with(own_prefix)) else {
                // A create still on its way to the leader may yet be applied.
                return Created::Unknown(format!("{lost}, and no znode of this session is listed yet"));
            };
            let path = format!("{parent}/{mine}");
            match timed(self.op_timeout, session.zk.check_stat(&path)).await {
                Ok(Some(stat)) => return Created::Node(path, stat.czxid),
                Ok(None) => return Created::Refused(format!("{lost}; the znode it made is gone: the session expired")),
                Err(e) => return Created::Unknown(format!("{lost}; reading the znode it made: {e}")),
            }
        }
        Created::Unknown(format!("{lost}, and the children could not be listed before the acquire timeout"))
    }

    /// Step 4: returns once our znode is the lowest; refused when the session is lost first.
    async fn wait_turn(&self, session: &Session, parent: &str, mine: &str) -> Result<(), LockError> {
        let lost = || {
            session.liveness.mark_lost();
            LockError::Refused("the session was lost while waiting for the lock".into())
        };
        loop {
            if session.is_lost() {
                return Err(lost());
            }
            let children = match timed(self.op_timeout, session.zk.list_children(parent)).await {
                Ok(children) => children,
                Err(e) if e.session_ended() => return Err(lost()),
                Err(e) => {
                    tracing::debug!("listing the lock's children: {e}");
                    tokio::time::sleep(self.retry_pause()).await;
                    continue;
                }
            };
            let ahead = match turn(&children, child_name(mine)) {
                Turn::Ours => return Ok(()),
                Turn::Gone => {
                    session.liveness.mark_lost();
                    return Err(LockError::Refused("our lock znode is gone: the session expired".into()));
                }
                Turn::Behind(ahead) => format!("{parent}/{ahead}"),
            };
            let watcher = match timed(self.op_timeout, session.zk.check_and_watch_stat(&ahead)).await {
                // Gone already: list again.
                Ok((None, _)) => continue,
                Ok((Some(_), watcher)) => watcher,
                Err(e) if e.session_ended() => return Err(lost()),
                Err(e) => {
                    tracing::debug!("watching the znode ahead of ours: {e}");
                    tokio::time::sleep(self.retry_pause()).await;
                    continue;
                }
            };
            // The crate sets the watch again after a reconnect; a session's end fires it.
            tokio::select! {
                _ = watcher.changed() => {}
                () = session.liveness.until_lost() => {}
            }
        }
    }

    /// After a failed attempt: deletes our znode so nobody waits behind it; if that fails,
    /// abandons the session so the znode goes with it.
    async fn clean_up(&mut self, path: &str) {
        let Some(session) = &self.session else {
            return;
        };
        if session.is_lost() {
            self.abandon();
            return;
        }
        match timed(self.op_timeout, session.zk.delete(path, None)).await {
            Ok(()) | Err(Failure::Answer(zk::Error::NoNode)) => {}
            Err(e) => {
                tracing::debug!("deleting our lock znode after a failed acquire: {e}; abandoning the session");
                self.abandon();
            }
        }
    }
}

#[async_trait::async_trait]
impl LockClient for Client {
    async fn acquire(&mut self, key: &str, timeout: Duration) -> Result<Grant, LockError> {
        let deadline = Instant::now() + timeout;
        self.session().await?;
        let parent = format!("{ROOT}/{key}");
        self.ensure_parent(&parent).await?;
        let session = self.session.as_ref().expect("opened above");
        let (path, czxid) = match self.create_node(session, &parent, deadline).await {
            Created::Node(path, czxid) => (path, czxid),
            Created::Refused(why) => {
                if session.is_lost() {
                    self.abandon();
                }
                return Err(LockError::Refused(why));
            }
            Created::Unknown(why) => {
                self.abandon();
                return Err(LockError::Unknown(why));
            }
        };
        let waited = tokio::time::timeout_at(deadline.into(), self.wait_turn(session, &parent, &path)).await;
        let failed = match waited {
            Ok(Ok(())) => {
                let validity = session.liveness.deadline().saturating_duration_since(Instant::now());
                return Ok(Grant { token: Some(czxid as u64), validity, secret: path });
            }
            Ok(Err(e)) => e,
            Err(_) => LockError::Refused("lock held by another client: not our turn within the acquire timeout".into()),
        };
        self.clean_up(&path).await;
        Err(failed)
    }

    async fn release(&mut self, _key: &str, grant: &Grant) -> Result<(), LockError> {
        let path = &grant.secret;
        let Some(session) = self.session.as_ref().filter(|s| child_name(path).starts_with(&s.id_hex())) else {
            return Err(LockError::Refused("the grant's session is gone, and its znode with it: the lock was no longer ours".into()));
        };
        match timed(self.op_timeout, session.zk.delete(path, None)).await {
            Ok(()) => Ok(()),
            Err(e @ Failure::Answer(zk::Error::NoNode)) | Err(e @ Failure::Answer(zk::Error::SessionExpired)) => {
                session.liveness.mark_lost();
                Err(LockError::Refused(format!("the lock znode was gone ({e}): the session had expired, the lock was no longer ours")))
            }
            Err(e) if e.not_applied() => Err(LockError::Refused(format!("deleting the lock znode: {e}"))),
            Err(e) => {
                // The znode may still be there: let it go with the session.
                self.abandon();
                Err(LockError::Unknown(format!("deleting the lock znode: {e}")))
            }
        }
    }

    async fn session_lost(&mut self) -> Result<bool, LockError> {
        Ok(self.session.as_ref().is_some_and(Session::is_lost))
    }
}

#[cfg(test)]
mod tests;
