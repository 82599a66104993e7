//! One run's containers on one private bridge network, each at a fixed address.

use super::{NAME_LABEL, ROLE_LABEL};
use crate::hosts::{Host, WorkerNetwork};
use anyhow::{bail, Context};
use bollard::exec::{StartExecOptions, StartExecResults};
use bollard::models::{
    ContainerCreateBody, EndpointIpamConfig, EndpointSettings, ExecConfig, HostConfig, Ipam, IpamConfig, NetworkConnectRequest,
    NetworkCreateRequest, NetworkingConfig,
};
use bollard::query_parameters::{CreateContainerOptions, KillContainerOptions, LogsOptions};
use bollard::Docker;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What a container is for; also its label `lockchaos.role`, and its host-part address range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// n1..nN: backend servers, started by exec under docker-init (PID 1 reaps and forwards).
    Node,
    /// The protected resource.
    Resource,
    /// client-1..client-N: PID 1 is `lockchaos worker`, so SIGSTOP freezes the real client.
    Worker,
}

impl Role {
    /// Memory a container of this role may use. Nodes run the backend's servers (Postgres,
    /// etcd, Redis, with some headroom for a replica's catch-up); a worker runs one client and
    /// its program (Python with grpc takes ~60 MiB); the resource, the ledger or a Postgres.
    fn memory_limit(self) -> i64 {
        match self {
            Role::Node => 2 << 30,
            Role::Resource | Role::Worker => 1 << 30,
        }
    }

    /// Processes (threads count) a container of this role may have: Postgres forks one per
    /// connection, etcd and grpc start threads by the dozen.
    fn pids_limit(self) -> i64 {
        match self {
            Role::Node | Role::Resource => 1024,
            Role::Worker => 512,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Role::Node => "node",
            Role::Resource => "resource",
            Role::Worker => "worker",
        }
    }
}

pub struct ContainerSpec {
    pub name: String,
    pub role: Role,
    /// Host part of the address in the run's /24.
    pub host_octet: u8,
    pub cmd: Vec<String>,
    /// The image, when not the run's (a worker in its client environment).
    pub image: Option<String>,
    pub env: Vec<String>,
    /// host path → container path, read-only?
    pub binds: Vec<(PathBuf, String, bool)>,
    /// NET_ADMIN: every container confines its own outgoing traffic (egress.rs), and nodes
    /// take the partitions' iptables rules.
    pub net_admin: bool,
}

/// Where the host-built binary is mounted in every container.
pub const BIN: &str = "/usr/local/bin/lockchaos";
/// Where a container writes its logs (servers' own log files): the run's `logs/`, or a warm
/// pool's until its run ends.
pub const LOGS_MOUNT: &str = "/lockchaos/logs";

impl ContainerSpec {
    /// A container with the binary (read-only) and `logs_dir` mounted, at the fixed address of
    /// its name, its log filter set. LOCKCHAOS_LOG sets the containers' log filter (default:
    /// info), e.g. for a client's per-node replies at debug level.
    pub fn with_binary(name: &str, role: Role, cmd: Vec<String>, exe: &Path, logs_dir: &Path) -> ContainerSpec {
        ContainerSpec {
            host_octet: Cluster::host_octet(name).expect("names follow the addressing scheme"),
            name: name.to_string(),
            role,
            cmd,
            image: None,
            env: vec![format!("RUST_LOG={}", std::env::var("LOCKCHAOS_LOG").unwrap_or_else(|_| "info".into()))],
            binds: vec![(exe.to_path_buf(), BIN.to_string(), true), (logs_dir.to_path_buf(), LOGS_MOUNT.to_string(), false)],
            net_admin: true,
        }
    }

    /// A node: `sleep infinity` under docker-init; the backend's servers are started in it by
    /// exec.
    pub fn node(name: &str, exe: &Path, logs_dir: &Path) -> ContainerSpec {
        Self::with_binary(name, Role::Node, vec!["sleep".into(), "infinity".into()], exe, logs_dir)
    }
}

#[derive(Clone)]
pub struct Member {
    pub name: String,
    pub role: Role,
    pub reach: Reach,
    pub ip: Ipv4Addr,
}

/// How a member is driven: a container of this run, or a host over SSH (a node only).
#[derive(Clone)]
pub enum Reach {
    /// The container's id.
    Container(String),
    Host(Arc<Host>),
}

impl Member {
    /// The container's id; Err for a host, which has none (the caller asked a container's
    /// question of a node on a host: signal, freeze, logs).
    pub fn container(&self) -> anyhow::Result<&str> {
        match &self.reach {
            Reach::Container(id) => Ok(id),
            Reach::Host(h) => bail!("{} is a host reached over SSH, not a container", h.label()),
        }
    }
}

/// Shared by reference among the run's tasks (the nemesis restarts members while the workload
/// loop asks for their state), so its member list is behind a lock.
pub struct Cluster {
    pub docker: Docker,
    pub run_id: String,
    /// The run's folder, in every container's and network's labels.
    run_dir: PathBuf,
    pub network: String,
    /// First three octets of the run's /24.
    prefix: [u8; 3],
    members: Mutex<Vec<Member>>,
    image: String,
    /// A Docker network the hosts are on, which the workers join too (hosts.rs `WorkerNetwork`).
    workers_network: Option<WorkerNetwork>,
    /// Labels beyond the run's on everything it creates (a warm pool's mark).
    extra_labels: HashMap<String, String>,
}

impl Cluster {
    /// Creates the run's network on a free 10.213.X.0/24 (a random X; retried on overlap).
    pub async fn create(docker: Docker, run_id: &str, run_dir: &Path, image: &str, seed: u64) -> anyhow::Result<Cluster> {
        Self::create_labelled(docker, run_id, run_dir, image, seed, HashMap::new()).await
    }

    /// [`Cluster::create`], with `extra_labels` on the network and every container.
    pub async fn create_labelled(
        docker: Docker,
        run_id: &str,
        run_dir: &Path,
        image: &str,
        seed: u64,
        extra_labels: HashMap<String, String>,
    ) -> anyhow::Result<Cluster> {
        let network = format!("lockchaos-{run_id}");
        let mut last_err = None;
        for attempt in 0..32u64 {
            let x = ((seed.wrapping_add(attempt.wrapping_mul(0x9e37_79b9)) % 250) + 2) as u8;
            let prefix = [10, 213, x];
            let req = NetworkCreateRequest {
                name: network.clone(),
                driver: Some("bridge".into()),
                ipam: Some(Ipam {
                    config: Some(vec![IpamConfig {
                        subnet: Some(format!("10.213.{x}.0/24")),
                        gateway: Some(format!("10.213.{x}.1")),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
                labels: Some(super::run_labels(run_id, run_dir).into_iter().chain(extra_labels.clone()).collect()),
                ..Default::default()
            };
            match docker.create_network(req).await {
                Ok(_) => {
                    return Ok(Cluster {
                        docker,
                        run_id: run_id.into(),
                        run_dir: run_dir.to_path_buf(),
                        network,
                        prefix,
                        members: Mutex::new(vec![]),
                        image: image.into(),
                        workers_network: None,
                        extra_labels,
                    })
                }
                Err(e) if e.to_string().contains("overlap") => last_err = Some(e),
                Err(e) => return Err(e).context("cannot create the run's Docker network"),
            }
        }
        Err(last_err.expect("32 attempts")).context("no free /24 under 10.213.0.0/16 for the run's network")
    }

    /// A run on this cluster's network and nodes (a warm pool's): its own containers (the
    /// resource, the workers) are named and labelled as the run's, and go with it.
    pub fn join(&self, run_id: &str, run_dir: &Path) -> Cluster {
        let nodes = self.members.lock().expect("members lock").iter().filter(|m| m.role == Role::Node).cloned().collect();
        Cluster {
            docker: self.docker.clone(),
            run_id: run_id.into(),
            run_dir: run_dir.to_path_buf(),
            network: self.network.clone(),
            prefix: self.prefix,
            members: Mutex::new(nodes),
            image: self.image.clone(),
            workers_network: None,
            extra_labels: HashMap::new(),
        }
    }

    /// Where the run's containers may send (egress.rs): the run's network and the hosts its
    /// nodes are on, never the gateway (the machine running lockchaos).
    pub fn egress(&self) -> super::egress::Egress {
        let mut allowed = vec![format!("{}.{}.{}.0/24", self.prefix[0], self.prefix[1], self.prefix[2])];
        let members = self.members.lock().expect("members lock");
        allowed.extend(members.iter().filter(|m| matches!(m.reach, Reach::Host(_))).map(|m| format!("{}/32", m.ip)));
        super::egress::Egress { gateway: self.ip(1), allowed }
    }

    /// Confines a container's outgoing traffic to [`Cluster::egress`]; a container that cannot
    /// be confined fails the run.
    pub async fn confine(&self, name: &str) -> anyhow::Result<()> {
        let script = self.egress().script();
        self.exec_ok(name, &["sh", "-c", &script]).await.with_context(|| format!("cannot confine {name}'s network to the run's"))?;
        Ok(())
    }

    pub fn ip(&self, host_octet: u8) -> Ipv4Addr {
        Ipv4Addr::new(self.prefix[0], self.prefix[1], self.prefix[2], host_octet)
    }

    /// The run's fixed addressing, known before a container starts (a partition may be laid
    /// before the workers exist): resource .5, node nK .(10+K), worker client-K .(100+K).
    pub fn host_octet(name: &str) -> Option<u8> {
        let number = |prefix: &str| name.strip_prefix(prefix).and_then(|k| k.parse::<u8>().ok()).filter(|k| *k >= 1);
        match name {
            "resource" => Some(5),
            _ => number("n").filter(|k| *k <= 80).map(|k| 10 + k).or_else(|| number("client-").filter(|k| *k <= 150).map(|k| 100 + k)),
        }
    }

    /// The address the nodes see `name` at: a host's own; a client's on the workers' network
    /// when the hosts are reached through one; else the run's fixed addressing.
    pub fn planned_ip(&self, name: &str) -> anyhow::Result<Ipv4Addr> {
        if let Ok(member) = self.member(name) {
            if matches!(member.reach, Reach::Host(_)) {
                return Ok(member.ip);
            }
        }
        if let (Some(net), Some(k)) = (&self.workers_network, name.strip_prefix("client-").and_then(|k| k.parse::<u32>().ok())) {
            return Ok(net.client_ip(k));
        }
        Self::host_octet(name).map(|o| self.ip(o)).with_context(|| format!("no address for `{name}` in this run"))
    }

    /// Makes the hosts the run's nodes (n1 the first), reached over SSH from now on; the
    /// workers join `network` when the hosts are on one.
    pub fn attach_hosts(&mut self, hosts: &[Arc<Host>], network: Option<WorkerNetwork>) {
        let members = self.members.get_mut().expect("members lock");
        for host in hosts {
            members.push(Member { name: host.entry.node.clone(), role: Role::Node, reach: Reach::Host(host.clone()), ip: host.entry.ip });
        }
        self.workers_network = network;
    }

    pub fn member(&self, name: &str) -> anyhow::Result<Member> {
        let members = self.members.lock().expect("members lock");
        members.iter().find(|m| m.name == name).cloned().with_context(|| format!("no container named {name} in this run"))
    }

    pub fn container_name(&self, name: &str) -> String {
        format!("lockchaos-{}-{name}", self.run_id)
    }

    /// Creates and starts a member; a member of the same name that is already there (a worker
    /// killed by a fault, now replaced) is removed first.
    pub async fn start(&self, spec: ContainerSpec) -> anyhow::Result<Member> {
        let ip = self.ip(spec.host_octet);
        let mut labels = super::run_labels(&self.run_id, &self.run_dir);
        labels.extend(self.extra_labels.clone());
        labels.insert(ROLE_LABEL.to_string(), spec.role.label().to_string());
        labels.insert(NAME_LABEL.to_string(), spec.name.clone());
        let binds =
            spec.binds.iter().map(|(host, inside, ro)| format!("{}:{inside}{}", host.display(), if *ro { ":ro" } else { "" })).collect();
        let image = spec.image.clone().unwrap_or_else(|| self.image.clone());
        let body = ContainerCreateBody {
            image: Some(image.clone()),
            hostname: Some(spec.name.clone()),
            cmd: Some(spec.cmd.clone()),
            env: Some(spec.env.clone()),
            labels: Some(labels),
            host_config: Some(HostConfig {
                binds: Some(binds),
                init: Some(spec.role != Role::Worker),
                cap_add: spec.net_admin.then(|| vec!["NET_ADMIN".to_string()]),
                // Bounded, whatever a client program (or a server it drives) does: memory
                // without swap, and processes.
                memory: Some(spec.role.memory_limit()),
                memory_swap: Some(spec.role.memory_limit()),
                pids_limit: Some(spec.role.pids_limit()),
                // A worker's client program runs as nobody: no setuid binary makes it root.
                security_opt: (spec.role == Role::Worker).then(|| vec!["no-new-privileges".to_string()]),
                network_mode: Some(self.network.clone()),
                ..Default::default()
            }),
            networking_config: Some(NetworkingConfig {
                endpoints_config: Some(HashMap::from([(
                    self.network.clone(),
                    EndpointSettings {
                        ipam_config: Some(EndpointIpamConfig { ipv4_address: Some(ip.to_string()), ..Default::default() }),
                        ..Default::default()
                    },
                )])),
            }),
            ..Default::default()
        };
        if let Ok(old) = self.member(&spec.name) {
            let opts = bollard::query_parameters::RemoveContainerOptions { force: true, v: true, ..Default::default() };
            self.docker
                .remove_container(old.container()?, Some(opts))
                .await
                .with_context(|| format!("cannot remove the old {}", spec.name))?;
            self.members.lock().expect("members lock").retain(|m| m.name != spec.name);
        }
        let name = self.container_name(&spec.name);
        let opts = CreateContainerOptions { name: Some(name.clone()), ..Default::default() };
        let created = self
            .docker
            .create_container(Some(opts), body)
            .await
            .with_context(|| format!("cannot create container {name} from image {image}"))?;
        if let (Role::Worker, Some(net)) = (spec.role, &self.workers_network) {
            self.join_workers_network(&created.id, &spec.name, net).await?;
        }
        self.docker.start_container(&created.id, None).await.with_context(|| format!("cannot start container {name}"))?;
        let member = Member { name: spec.name, role: spec.role, reach: Reach::Container(created.id), ip };
        self.members.lock().expect("members lock").push(member.clone());
        Ok(member)
    }

    /// Connects a worker's container to the hosts' network at its fixed address there.
    async fn join_workers_network(&self, id: &str, name: &str, net: &WorkerNetwork) -> anyhow::Result<()> {
        let k = name.strip_prefix("client-").and_then(|k| k.parse::<u32>().ok()).context("a worker is named client-K")?;
        let address = net.client_ip(k).to_string();
        let request = NetworkConnectRequest {
            container: id.to_string(),
            endpoint_config: Some(EndpointSettings {
                ipam_config: Some(EndpointIpamConfig { ipv4_address: Some(address.clone()), ..Default::default() }),
                ..Default::default()
            }),
        };
        self.docker
            .connect_network(&net.docker_network, request)
            .await
            .with_context(|| format!("cannot connect {name} to the hosts' Docker network {} at {address}", net.docker_network))
    }

    /// Runs a command inside a member (over SSH on a host, as root, marked as the run's) and
    /// returns (exit code, combined output).
    pub async fn exec(&self, name: &str, cmd: &[&str]) -> anyhow::Result<(i64, String)> {
        let member = self.member(name)?;
        let id = match &member.reach {
            Reach::Container(id) => id,
            Reach::Host(host) => return host.exec(Some(&self.run_id), cmd).await.with_context(|| format!("on {}", host.label())),
        };
        let config = ExecConfig {
            cmd: Some(cmd.iter().map(|s| s.to_string()).collect()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            ..Default::default()
        };
        let exec = self.docker.create_exec(id, config).await.with_context(|| format!("exec in {name}"))?;
        let mut output = String::new();
        if let StartExecResults::Attached { output: mut stream, .. } =
            self.docker.start_exec(&exec.id, Some(StartExecOptions { detach: false, ..Default::default() })).await?
        {
            while let Some(chunk) = stream.next().await {
                output.push_str(&chunk?.to_string());
            }
        }
        let code = self.docker.inspect_exec(&exec.id).await?.exit_code.unwrap_or(-1);
        Ok((code, output))
    }

    /// Runs a command inside a member and fails, with its output, unless it exits 0.
    pub async fn exec_ok(&self, name: &str, cmd: &[&str]) -> anyhow::Result<String> {
        let (code, out) = self.exec(name, cmd).await?;
        if code != 0 {
            bail!("`{}` in {name} exited {code}: {}", cmd.join(" "), out.trim());
        }
        Ok(out)
    }

    /// Sends a signal to a member's PID 1 (for workers: the client process itself).
    pub async fn signal(&self, name: &str, signal: &str) -> anyhow::Result<()> {
        let member = self.member(name)?;
        let opts = KillContainerOptions { signal: signal.to_string() };
        self.docker.kill_container(member.container()?, Some(opts)).await.with_context(|| format!("cannot send {signal} to {name}"))
    }

    /// Freezes every process of the member (the cgroup freezer, `docker pause`): a client and
    /// whatever its program started.
    pub async fn freeze(&self, name: &str) -> anyhow::Result<()> {
        let member = self.member(name)?;
        self.docker.pause_container(member.container()?).await.with_context(|| format!("cannot freeze {name}"))
    }

    /// Thaws what `freeze` froze.
    pub async fn thaw(&self, name: &str) -> anyhow::Result<()> {
        let member = self.member(name)?;
        self.docker.unpause_container(member.container()?).await.with_context(|| format!("cannot thaw {name}"))
    }

    /// Whether the member is still running, and its exit code when it is not.
    pub async fn state(&self, name: &str) -> anyhow::Result<(bool, Option<i64>)> {
        let member = self.member(name)?;
        let info = self.docker.inspect_container(member.container()?, None).await?;
        let state = info.state.unwrap_or_default();
        Ok((state.running.unwrap_or(false), state.exit_code))
    }

    /// Waits until the member's container has exited, at most `limit`: true when it has (its
    /// code is then in `state`). Docker answers the moment it exits, so nothing polls.
    pub async fn wait_exit(&self, name: &str, limit: std::time::Duration) -> anyhow::Result<bool> {
        let member = self.member(name)?;
        let opts = bollard::query_parameters::WaitContainerOptions { condition: "not-running".into() };
        let mut wait = self.docker.wait_container(member.container()?, Some(opts));
        // An exit code other than 0 comes as an error of the stream: either way it has exited.
        Ok(tokio::time::timeout(limit, wait.next()).await.is_ok())
    }

    /// The container's stdout and stderr so far.
    pub async fn logs(&self, name: &str) -> anyhow::Result<String> {
        let member = self.member(name)?;
        let opts = LogsOptions { stdout: true, stderr: true, timestamps: false, ..Default::default() };
        let mut stream = self.docker.logs(member.container()?, Some(opts));
        let mut out = String::new();
        while let Some(chunk) = stream.next().await {
            out.push_str(&chunk?.to_string());
        }
        Ok(out)
    }
}
