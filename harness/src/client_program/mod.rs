//! A lock client that is a program: any language, any library, driven over the JSON-lines
//! protocol of docs/client-protocol.md. The worker starts it in the client's container and uses
//! it as any other `LockClient`; what it answers becomes the history's ok / fail / info.
//!
//! A program that cannot start, or breaks the protocol (a line that is not an answer, an id not
//! asked for, an answer of the wrong type, a missing capability), is `ClientGone::Unusable`: the
//! run ends unknown. One that exits is `ClientGone::Exited`: its open operation is `info` and
//! the run starts the client again as a new process.

mod protocol;

use crate::bounded_lines::{Line, Lines};
use crate::lock_backends::{ClientGone, Grant, LockClient, LockError, TxResource};
pub use protocol::Capability;
use protocol::{Request, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The `[client]` table of a scenario.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClientParams {
    /// A lock client program and its arguments, instead of the built-in client; run in the
    /// client's container from the project's root, whose `clients/` is mounted there
    /// (`LoadedScenario::project_root`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The project folder whose `clients/` holds the program, relative to the scenario file's
    /// folder (or absolute); by default the nearest folder above the file that has a
    /// `clients/` folder. `lockchaos explore` writes it into the scenarios it finds, which live
    /// in the store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<std::path::PathBuf>,
    /// The program's environment (client_env): Debian packages beyond the node image's
    /// (`golang-go`, `default-jdk-headless`), installed with apt-get.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub debian: Vec<String>,
    /// pip requirements (`redis==8.2.0`), installed from PyPI ahead of the node image's Debian
    /// Python packages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub python: Vec<String>,
    /// A pip requirements file, relative to the project root (inside its `clients/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirements: Option<std::path::PathBuf>,
    /// A command run once when the environment is built, in a writable copy of the project's
    /// sources; what it writes under `/out` stays in the environment (`go build -o /out/lock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Vec<String>>,
    /// What the build reads, relative to the project root: folders or files inside `clients/`
    /// (default: all of `clients/`). A change to any of them rebuilds the environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<std::path::PathBuf>>,
    /// The matrix runs the scenario once per entry, each a row of its own named by its pin, with
    /// that version in the environment and its own expectation (client_env::variant).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<VersionRow>,
}

/// One `[[client.versions]]`: a version of the client's library and what the scenario should
/// find with it.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VersionRow {
    /// `project==version`, from PyPI.
    pub pin: String,
    pub expect: results::Expectation,
    /// In place of the scenario's `[claims]`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims: Option<results::Claims>,
}

/// How a worker starts its program and introduces the run to it.
#[derive(Deserialize, Serialize, Clone, Debug)]
pub struct ProgramSpec {
    pub command: Vec<String>,
    /// Working directory.
    pub dir: PathBuf,
    /// Run it as user and group `nobody` (in the containers: it cannot write the worker's
    /// records).
    pub as_nobody: bool,
    /// `init`'s fields.
    pub client: String,
    pub backend: String,
    pub config: Value,
    pub lock: Value,
    /// What the scenario needs of it.
    pub needs: Vec<Capability>,
}

/// Uid and gid of `nobody` on Debian.
const NOBODY: u32 = 65534;
/// Longer answer lines than this are no answer.
const MAX_ANSWER_LINE: usize = 1 << 20;
/// A program's first answer may wait for its runtime to start (Python importing grpc).
pub const INIT_WAIT: Duration = Duration::from_secs(20);
/// A request still unread when its wait ended gets this long more to be read: a container
/// thawed after a pause wakes the worker's timer and the program together.
const READ_GRACE: Duration = Duration::from_secs(1);

pub struct ProgramClient {
    /// `python3 clients/x.py`, for errors.
    shown: String,
    child: Child,
    stdin: ChildStdin,
    answers: Lines<ChildStdout>,
    next_id: u64,
    /// Requests given up on (no answer in time): their late answers are skipped.
    given_up: BTreeSet<u64>,
    capabilities: Vec<Capability>,
    op_timeout: Duration,
    /// The grant's validity when the program gives none: the lock's TTL.
    ttl: Duration,
    /// The key of the last acquire, for `session_lost`.
    key: String,
}

impl ProgramClient {
    /// Starts the program and introduces the run (`init`); Unusable when it cannot start, does
    /// not answer `init_ok`, or lacks a capability the scenario needs.
    /// `init_wait`: how long `init` may take (at most [`INIT_WAIT`]; less when the run ends
    /// sooner, so that a slow program is named before the run stops its worker).
    pub async fn start(
        spec: &ProgramSpec,
        process: u64,
        op_timeout: Duration,
        ttl: Duration,
        init_wait: Duration,
    ) -> Result<Self, ClientGone> {
        let shown = spec.command.join(" ");
        let (program, args) = spec.command.split_first().ok_or_else(|| ClientGone::Unusable("the client command is empty".into()))?;
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(&spec.dir)
            .env("HOME", "/tmp")
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        if spec.as_nobody {
            command.uid(NOBODY).gid(NOBODY);
        }
        let mut child = command
            .spawn()
            .map_err(|e| ClientGone::Unusable(format!("cannot start client program `{shown}` in {}: {e}", spec.dir.display())))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let answers = Lines::new(child.stdout.take().expect("piped stdout"), MAX_ANSWER_LINE);
        let mut client = ProgramClient {
            shown,
            child,
            stdin,
            answers,
            next_id: 0,
            given_up: BTreeSet::new(),
            capabilities: vec![],
            op_timeout,
            ttl,
            key: String::new(),
        };
        let init = Request::Init {
            client: spec.client.clone(),
            process,
            backend: spec.backend.clone(),
            config: spec.config.clone(),
            lock: spec.lock.clone(),
            op_timeout_ms: op_timeout.as_millis() as u64,
        };
        let capabilities = match client.call(init, init_wait.min(INIT_WAIT)).await {
            Ok(Response::InitOk { capabilities }) => capabilities,
            Ok(other) => unreachable!("call checks the answer's type: {other:?}"),
            // Gone before it could say hello: it would only be started again and again.
            Err(LockError::Gone(ClientGone::Exited(why))) => return Err(ClientGone::Unusable(format!("{why} (before answering init)"))),
            Err(LockError::Gone(gone)) => return Err(gone),
            Err(e) => return Err(client.unusable(format!("init failed: {e}"))),
        };
        if let Some(missing) = spec.needs.iter().find(|c| !capabilities.contains(c)) {
            let name: &str = missing.into();
            return Err(client
                .unusable(format!("does not offer `{name}` (init_ok's capabilities: {capabilities:?}), which {}", why_needed(*missing))));
        }
        client.capabilities = capabilities;
        // Transactional only where the backend keeps the counter in the lock's transaction:
        // elsewhere the worker must write the ledger, whatever the program offers.
        if !spec.needs.contains(&Capability::Transactional) {
            client.capabilities.retain(|c| *c != Capability::Transactional);
        }
        Ok(client)
    }

    fn has(&self, capability: Capability) -> bool {
        self.capabilities.contains(&capability)
    }

    fn unusable(&self, what: String) -> ClientGone {
        ClientGone::Unusable(format!("client program `{}` {what}", self.shown))
    }

    /// Sends `request` and waits up to `wait` for its answer. A `fail` answer is Refused, `info`
    /// or no answer in time Unknown; an answer of another type than the request's, or a line
    /// that is no answer, Unusable; the program gone, Exited.
    async fn call(&mut self, request: Request, wait: Duration) -> Result<Response, LockError> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(LockError::Gone(ClientGone::Exited(format!("client program `{}` exited ({status})", self.shown))));
        }
        let id = self.next_id;
        self.next_id += 1;
        // With no request given up, the program has nothing to be busy with: it should read
        // this one at once. (With one given up, it may still be in that one's call.)
        let idle = self.given_up.is_empty();
        match tokio::time::timeout(self.op_timeout.max(INIT_WAIT), self.send(&request.line(id))).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(LockError::Gone(self.exited(&format!("could not be sent request {id} ({e})")).await)),
            // Its input pipe is full: it has stopped reading requests.
            Err(_) => return Err(LockError::Gone(self.unusable(format!("did not read request {id} (its input is full)")))),
        }
        let deadline = Instant::now() + wait;
        loop {
            let line = match tokio::time::timeout_at(deadline.into(), self.answers.next()).await {
                Err(_) => {
                    self.given_up.insert(id);
                    if idle && self.still_unread().await {
                        let why =
                            format!("stopped reading its input: request {id} was still unread {} ms after it was sent", wait.as_millis());
                        return Err(LockError::Gone(self.unusable(why)));
                    }
                    return Err(LockError::Unknown(format!("no answer to request {id} within {} ms", wait.as_millis())));
                }
                Ok(Ok(Line::Complete(line))) => line,
                Ok(Ok(Line::Closed { partial })) => {
                    let how = if partial { "closed its output in the middle of a line" } else { "closed its output" };
                    return Err(LockError::Gone(self.exited(&format!("{how} with request {id} open")).await));
                }
                Ok(Ok(Line::TooLong)) => {
                    return Err(LockError::Gone(self.unusable(format!("wrote a line longer than {} bytes", MAX_ANSWER_LINE))))
                }
                Ok(Ok(Line::NotUtf8)) => return Err(LockError::Gone(self.unusable("wrote a line that is not UTF-8".into()))),
                Ok(Err(e)) => return Err(LockError::Gone(self.exited(&format!("could not be read ({e}) with request {id} open")).await)),
            };
            let (answered, response) = protocol::parse(&line).map_err(|e| LockError::Gone(self.unusable(e)))?;
            if answered != id {
                if self.given_up.remove(&answered) {
                    continue;
                }
                return Err(LockError::Gone(self.unusable(format!("answered id {answered}, but request {id} was the one open"))));
            }
            return match response {
                Response::Fail { error } => Err(LockError::Refused(error)),
                Response::Info { error } => Err(LockError::Unknown(error)),
                ok => {
                    if <&str>::from(&ok) != request.ok_type() {
                        return Err(LockError::Gone(self.unusable(format!(
                            "answered request {id} ({}) with `{}`",
                            request.ok_type().trim_end_matches("_ok"),
                            <&str>::from(&ok)
                        ))));
                    }
                    Ok(ok)
                }
            };
        }
    }

    /// Whether the program's input still holds bytes it has not read, through [`READ_GRACE`].
    async fn still_unread(&self) -> bool {
        let deadline = Instant::now() + READ_GRACE;
        loop {
            if unread_bytes(&self.stdin) == 0 {
                return false;
            }
            if Instant::now() >= deadline {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn send(&mut self, line: &str) -> std::io::Result<()> {
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.flush().await
    }

    /// The program is gone: how it ended, waited for briefly.
    async fn exited(&mut self, what: &str) -> ClientGone {
        let status = match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
            Ok(Ok(status)) => status.to_string(),
            _ => "still running".into(),
        };
        ClientGone::Exited(format!("client program `{}` {what}: {status}", self.shown))
    }

    /// A request only a capability allows.
    async fn call_with(&mut self, capability: Capability, request: Request) -> Result<Response, LockError> {
        if !self.has(capability) {
            let name: &str = capability.into();
            return Err(LockError::Refused(format!("the client program does not offer `{name}`")));
        }
        self.call(request, self.op_timeout).await
    }
}

/// The bytes written into the program's input pipe that it has not read yet (FIONREAD works
/// on either end of a Linux pipe); 0 when it cannot be told.
fn unread_bytes(stdin: &ChildStdin) -> usize {
    use std::os::fd::AsRawFd;
    let mut unread: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer, which lives for the call.
    let ok = unsafe { nix::libc::ioctl(stdin.as_raw_fd(), nix::libc::FIONREAD, &mut unread) } == 0;
    if ok {
        unread.max(0) as usize
    } else {
        0
    }
}

fn why_needed(capability: Capability) -> &'static str {
    match capability {
        Capability::Renew => "lock.renew_ms needs",
        Capability::Session => "workload.honour_session_loss needs",
        Capability::Transactional => "the backend needs (its counter lives in the lock's transaction)",
    }
}

#[async_trait::async_trait]
impl LockClient for ProgramClient {
    async fn acquire(&mut self, key: &str, timeout: Duration) -> Result<Grant, LockError> {
        self.key = key.to_string();
        let request = Request::Acquire { key: key.into(), timeout_ms: timeout.as_millis() as u64 };
        match self.call(request, timeout + self.op_timeout).await? {
            Response::AcquireOk { token, validity_ms } => {
                let validity = validity_ms.map_or(self.ttl, Duration::from_millis);
                Ok(Grant { token, validity, secret: String::new() })
            }
            other => unreachable!("call checks the answer's type: {other:?}"),
        }
    }

    async fn release(&mut self, key: &str, _grant: &Grant) -> Result<(), LockError> {
        self.call(Request::Release { key: key.into() }, self.op_timeout).await.map(|_| ())
    }

    async fn renew(&mut self, key: &str, _grant: &Grant) -> Result<Duration, LockError> {
        match self.call_with(Capability::Renew, Request::Renew { key: key.into() }).await? {
            Response::RenewOk { validity_ms } => Ok(Duration::from_millis(validity_ms)),
            other => unreachable!("call checks the answer's type: {other:?}"),
        }
    }

    /// Without `session` the program is not asked: it cannot know.
    async fn session_lost(&mut self) -> Result<bool, LockError> {
        if !self.has(Capability::Session) {
            return Ok(false);
        }
        let key = self.key.clone();
        match self.call(Request::SessionLost { key }, self.op_timeout).await? {
            Response::SessionLostOk { lost } => Ok(lost),
            other => unreachable!("call checks the answer's type: {other:?}"),
        }
    }

    fn transactional_resource(&mut self) -> Option<&mut dyn TxResource> {
        if self.has(Capability::Transactional) {
            Some(self)
        } else {
            None
        }
    }
}

#[async_trait::async_trait]
impl TxResource for ProgramClient {
    async fn read(&mut self, key: &str, client: u64, time_ns: u64) -> Result<i64, LockError> {
        match self.call(Request::TxRead { key: key.into(), client, time_ns }, self.op_timeout).await? {
            Response::TxReadOk { value } => Ok(value),
            other => unreachable!("call checks the answer's type: {other:?}"),
        }
    }

    async fn write_and_commit(&mut self, key: &str, client: u64, value: i64, time_ns: u64) -> Result<(), LockError> {
        self.call(Request::TxWriteCommit { key: key.into(), value, client, time_ns }, self.op_timeout).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests;
