//! The run's lock clients: client-K is one worker container at its fixed address, first running
//! process K. A client killed by a fault comes back when the fault ends as a new process
//! (K + clients·n for its n-th restart, as Jepsen numbers processes) in a new container at the
//! same address, with an event file of its own. Tracks every process's fate for results.json.

use super::provision::{worker_spec, WORKER_EVENTS};
use super::RunContext;
use crate::containers::Cluster;
use crate::events::{Event, EventSink};
use crate::faults::Clients;
use crate::worker::{self, WorkerConfig, EXIT_PROGRAM_EXITED, EXIT_UNUSABLE};
use results::{WorkerFate, WorkerStatus};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

pub struct Workers<'a> {
    cluster: &'a Cluster,
    ctx: &'a RunContext,
    /// Every client's configuration but its process and event file.
    template: WorkerConfig,
    clients: u32,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Client K → its current process and how many times it was started again.
    current: BTreeMap<u32, (u64, u64)>,
    /// Processes whose end is known.
    ended: BTreeMap<u64, WorkerStatus>,
    /// Processes started since the live history last took them: (process, member, event file).
    started: Vec<(u64, String, PathBuf)>,
    /// Processes whose death a kill fault caused, or that the run started again.
    expected_deaths: std::collections::BTreeSet<u64>,
}

/// A client the run cannot stand behind: its program unusable, or it died with no fault on it.
/// A type of its own so that a run it ends is told from one the machine ended by type, not by
/// its words (`RunError::of`: results.json's `unknown_cause` is then `client_broken`).
#[derive(Debug, thiserror::Error)]
pub enum ClientFailed {
    #[error("{client}: {why}")]
    Unusable { client: String, why: String },
    #[error("{client} died with no fault on it (exit code {exit_code:?}): {last_words}")]
    DiedUnfaulted { client: String, exit_code: Option<i64>, last_words: String },
}

/// Writes a file only its owner (root, in the containers) can read: a worker's configuration
/// holds its proof for the resource, which the client program beside it must not read.
fn write_private(path: &std::path::Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(contents)
}

fn slot_of(name: &str) -> anyhow::Result<u32> {
    name.strip_prefix("client-").and_then(|k| k.parse().ok()).ok_or_else(|| anyhow::anyhow!("{name} is not a client"))
}

impl<'a> Workers<'a> {
    pub fn new(cluster: &'a Cluster, ctx: &'a RunContext, template: WorkerConfig, clients: u32) -> Self {
        Workers { cluster, ctx, template, clients, state: Mutex::new(State::default()) }
    }

    /// Starts client-1..client-N as processes 1..N.
    pub async fn start_all(&self) -> anyhow::Result<()> {
        for k in 1..=self.clients {
            self.start(k, 0).await?;
        }
        Ok(())
    }

    /// Starts client `k`'s `incarnation`-th process (0: the first) in a container of its own.
    async fn start(&self, k: u32, incarnation: u64) -> anyhow::Result<u64> {
        let process = k as u64 + self.clients as u64 * incarnation;
        // The first process keeps the plain names; later ones carry their process number.
        let stem = if incarnation == 0 { format!("client-{k}") } else { format!("client-{k}-p{process}") };
        let name = format!("client-{k}");
        let resource_proof = match self.template.resource_params.kind {
            crate::resource::ResourceKind::Ledger => self.ctx.resource_key.proof(process),
            crate::resource::ResourceKind::Postgres => self.ctx.resource_key.workers_password(),
        };
        let egress = Some(self.cluster.egress());
        let mut config = WorkerConfig { process, client: k, events: WORKER_EVENTS.into(), resource_proof, egress, ..self.template.clone() };
        if let Some((one, _)) = self.one_member(k) {
            config.backend = one;
        }
        if let Some(program) = &mut config.program {
            program.client = name.clone();
            program.config = config.backend.program_config();
        }
        let workers = self.ctx.dir.path.join("workers");
        let (file, events) = (workers.join(format!("{stem}.config.json")), workers.join(format!("{stem}.jsonl")));
        write_private(&file, &serde_json::to_vec_pretty(&config)?)?;
        // Mounted as a file, so it must exist; root's alone to write, whatever the umask (a
        // client program runs as nobody).
        std::fs::write(&events, b"")?;
        std::fs::set_permissions(&events, std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
        self.cluster.start(worker_spec(self.ctx, &name, &file, &events)).await?;
        let mut state = self.state.lock().expect("workers lock");
        state.current.insert(k, (process, incarnation));
        state.started.push((process, name, events));
        Ok(process)
    }

    /// Client `k`'s only member, when the scenario gives each client one.
    fn one_member(&self, k: u32) -> Option<(crate::lock_backends::ClientConfig, usize)> {
        self.template.lock.one_member_each.then(|| self.template.backend.one_member(k)).flatten()
    }

    /// The processes started since the last call, for the live history to follow.
    pub fn take_started(&self) -> Vec<(u64, String, PathBuf)> {
        std::mem::take(&mut self.state.lock().expect("workers lock").started)
    }

    /// The current processes whose end is not known yet.
    fn running(&self) -> Vec<(u32, u64)> {
        let state = self.state.lock().expect("workers lock");
        state.current.iter().filter(|(_, (p, _))| !state.ended.contains_key(p)).map(|(k, (p, _))| (*k, *p)).collect()
    }

    fn end(&self, k: u32, process: u64, status: WorkerFate, exit_code: Option<i64>, died_at_ms: Option<u64>) {
        let name = format!("client-{k}");
        let status = WorkerStatus { name, process, status, exit_code, died_at_ms };
        self.state.lock().expect("workers lock").ended.entry(process).or_insert(status);
    }

    /// Records processes gone before the workload ended (their events so far are kept) and
    /// returns them. A client whose program exited comes back as a new process at once; one
    /// whose program is unusable, or that died when no kill fault was on it (`killing`), ends
    /// the run (Err, naming the client and why): the run no longer tests what it says.
    pub async fn find_dead(&self, events: &EventSink, killing: impl Fn(&str) -> bool) -> anyhow::Result<Vec<u64>> {
        let mut dead = vec![];
        for (k, process) in self.running() {
            let name = format!("client-{k}");
            let (running, exit_code) = self.cluster.state(&name).await?;
            if !running {
                let at_ms = self.ctx.clock.now() / 1_000_000;
                events.emit(Event::WorkerDied { name: name.clone(), exit_code, at_ms });
                self.end(k, process, WorkerFate::Died, exit_code, Some(at_ms));
                dead.push(process);
                if killing(&name) {
                    self.state.lock().expect("workers lock").expected_deaths.insert(process);
                } else if exit_code == Some(EXIT_UNUSABLE.into()) {
                    return Err(ClientFailed::Unusable { why: self.why_unusable(&name).await, client: name }.into());
                } else if exit_code == Some(EXIT_PROGRAM_EXITED.into()) {
                    self.restart(&name).await?;
                } else if exit_code != Some(0) {
                    return Err(ClientFailed::DiedUnfaulted { last_words: self.last_words(&name).await, client: name, exit_code }.into());
                }
            }
        }
        Ok(dead)
    }

    /// After the clients finished: the first whose end the run cannot stand behind (its program
    /// unusable, or it died when no kill fault was on it), and why.
    pub async fn first_failed(&self) -> Option<ClientFailed> {
        let killed = self.state.lock().expect("workers lock").expected_deaths.clone();
        let failed = self.statuses().into_iter().find(|w| {
            w.status == WorkerFate::Died
                && !killed.contains(&w.process)
                && ![Some(0), Some(EXIT_PROGRAM_EXITED.into())].contains(&w.exit_code)
        })?;
        let client = failed.name;
        Some(match failed.exit_code == Some(EXIT_UNUSABLE.into()) {
            true => ClientFailed::Unusable { why: self.why_unusable(&client).await, client },
            false => ClientFailed::DiedUnfaulted { last_words: self.last_words(&client).await, client, exit_code: failed.exit_code },
        })
    }

    async fn why_unusable(&self, name: &str) -> String {
        let logs = self.cluster.logs(name).await.unwrap_or_default();
        let said = logs.lines().rev().find_map(|l| l.split_once("lockchaos worker: ").map(|(_, why)| why.trim().to_string()));
        said.unwrap_or_else(|| "its client program could not be used (see its log)".into())
    }

    /// The last line a dead worker wrote (its log is saved with the run).
    async fn last_words(&self, name: &str) -> String {
        let logs = self.cluster.logs(name).await.unwrap_or_default();
        logs.lines().rev().find(|l| !l.trim().is_empty()).map_or_else(|| "it wrote nothing".into(), |l| l.trim().to_string())
    }

    /// Lets every client finish its round; kills those that do not within `grace`.
    pub async fn finish(&self, grace: Duration) -> anyhow::Result<Vec<WorkerStatus>> {
        // Side by side, each answered the moment its container exits.
        let waits = self.running().into_iter().map(|(k, process)| async move {
            let name = format!("client-{k}");
            let exited = self.cluster.wait_exit(&name, grace).await?;
            let (running, exit_code) = self.cluster.state(&name).await?;
            if exited && !running {
                let fate = if exit_code == Some(0) { WorkerFate::Finished } else { WorkerFate::Died };
                self.end(k, process, fate, exit_code, None);
            } else if let Err(e) = self.cluster.signal(&name, "SIGKILL").await {
                // It may have exited between the wait and the kill: then that is its end.
                let (running, exit_code) = self.cluster.state(&name).await?;
                if running {
                    return Err(e);
                }
                let fate = if exit_code == Some(0) { WorkerFate::Finished } else { WorkerFate::Died };
                self.end(k, process, fate, exit_code, None);
            } else {
                self.end(k, process, WorkerFate::Killed, None, None);
            }
            Ok::<_, anyhow::Error>(())
        });
        futures_util::future::try_join_all(waits).await?;
        Ok(self.statuses())
    }

    /// Asks every running client to finish its round and exit (the workload ended before its
    /// time limit: `lockchaos worker` ends on SIGUSR1 as at its stop time). A client already
    /// gone is no error: `finish` records how it ended.
    pub async fn ask_to_end(&self) -> anyhow::Result<()> {
        for (k, _) in self.running() {
            let name = format!("client-{k}");
            if let Err(e) = self.cluster.signal(&name, worker::END_SIGNAL).await {
                if self.cluster.state(&name).await?.0 {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// The run was interrupted: clients still running are stopped now (killed), the others
    /// recorded as they ended.
    pub async fn stop_now(&self) -> anyhow::Result<Vec<WorkerStatus>> {
        for (k, process) in self.running() {
            let name = format!("client-{k}");
            let (running, exit_code) = self.cluster.state(&name).await?;
            if running {
                self.cluster.signal(&name, "SIGKILL").await?;
                self.end(k, process, WorkerFate::Killed, None, None);
            } else {
                let fate = if exit_code == Some(0) { WorkerFate::Finished } else { WorkerFate::Died };
                self.end(k, process, fate, exit_code, None);
            }
        }
        Ok(self.statuses())
    }

    /// Every process's fate, in process order.
    fn statuses(&self) -> Vec<WorkerStatus> {
        self.state.lock().expect("workers lock").ended.values().cloned().collect()
    }
}

#[async_trait::async_trait]
impl Clients for Workers<'_> {
    async fn restart(&self, name: &str) -> anyhow::Result<u64> {
        let k = slot_of(name)?;
        let (old, incarnation) = self.state.lock().expect("workers lock").current.get(&k).copied().unwrap_or((k as u64, 0));
        let (_, exit_code) = self.cluster.state(name).await?;
        self.end(k, old, WorkerFate::Died, exit_code, Some(self.ctx.clock.now() / 1_000_000));
        // A kill fault's heal, or a program that exited: either way the death was expected.
        self.state.lock().expect("workers lock").expected_deaths.insert(old);
        // The old container goes with the restart: keep its output first.
        if let Ok(logs) = self.cluster.logs(name).await {
            let _ = std::fs::write(self.ctx.dir.path.join("logs").join(format!("{name}-p{old}.log")), logs);
        }
        self.start(k, incarnation + 1).await
    }

    fn member_of(&self, name: &str) -> Option<String> {
        let (_, node) = self.one_member(slot_of(name).ok()?)?;
        Some(format!("n{node}"))
    }

    async fn is_live(&self, name: &str) -> bool {
        let Ok(k) = slot_of(name) else { return false };
        let current = self.state.lock().expect("workers lock").current.get(&k).copied();
        match current {
            Some((process, _)) if !self.state.lock().expect("workers lock").ended.contains_key(&process) => {
                self.cluster.state(name).await.is_ok_and(|(running, _)| running)
            }
            _ => false,
        }
    }
}
