//! Remote nodes over SSH, against a real sshd: a lab of "hosts" (containers of the node image
//! that run only sshd, on a Docker network of their own) named in a nodes-file. lockchaos drives
//! them only over SSH: the test reads Docker's event stream to show that no `docker exec`
//! reached a host during a run. The test itself looks inside the hosts with docker exec, after
//! each run, to see what was left there.

mod tools;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn docker(args: &[&str]) -> (bool, String) {
    let out = Command::new("docker").args(args).output().unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// How a lab host is made.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// root logs in with the lab's key.
    Root,
    /// Only user `lab` logs in with the key; there is no sudo.
    NoSudo,
    /// As Root, without /etc/debian_version.
    NotDebian,
}

/// Hosts on a network of their own; removed on drop (a failed assertion included).
struct Lab {
    dir: tempfile::TempDir,
    id: String,
    network: String,
    prefix: String,
    containers: Vec<String>,
}

impl Lab {
    fn new(kinds: &[Kind]) -> Lab {
        let dir = tempfile::Builder::new().prefix("sshlab-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        for key in ["key", "other-key"] {
            let out = Command::new(tools::installed(&["ssh-keygen"], "openssh-client"))
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.path().join(key))
                .output()
                .unwrap();
            assert!(out.status.success(), "ssh-keygen: {}", String::from_utf8_lossy(&out.stderr));
        }
        let id = format!("{}-{}", std::process::id(), rand_suffix());
        let network = format!("lockchaos-sshlab-{id}");
        let label = format!("lockchaos.sshlab={id}");
        let mut prefix = None;
        for attempt in 0..40u32 {
            let x = (std::process::id() + attempt * 37) % 250 + 2;
            let subnet = format!("10.215.{x}.0/24");
            let (ok, out) = docker(&["network", "create", "--subnet", &subnet, "--label", &label, &network]);
            if ok {
                prefix = Some(format!("10.215.{x}"));
                break;
            }
            assert!(out.contains("overlap"), "docker network create: {out}");
        }
        let mut lab = Lab { dir, id, network, prefix: prefix.expect("a free /24 under 10.215.0.0/16"), containers: vec![] };
        for (i, kind) in kinds.iter().enumerate() {
            let setup = match kind {
                Kind::Root => "install -d -m 700 /root/.ssh && cp /lab/key.pub /root/.ssh/authorized_keys",
                Kind::NoSudo => "useradd -m lab && install -d -m 700 -o lab /home/lab/.ssh && install -m 600 -o lab /lab/key.pub /home/lab/.ssh/authorized_keys",
                Kind::NotDebian => "install -d -m 700 /root/.ssh && cp /lab/key.pub /root/.ssh/authorized_keys && rm /etc/debian_version",
            };
            let script = format!("set -e; {setup}; mkdir -p /run/sshd; ssh-keygen -A >/dev/null; exec /usr/sbin/sshd -D -e");
            let name = format!("{}-h{}", lab.network, i + 1);
            let ip = lab.ip(i + 1);
            let bind = format!("{}:/lab:ro", lab.dir.path().display());
            let (ok, out) = docker(&[
                "run",
                "-d",
                "--name",
                &name,
                "--network",
                &lab.network,
                "--ip",
                &ip,
                "--cap-add",
                "NET_ADMIN",
                "--init",
                "--label",
                &label,
                "-v",
                &bind,
                "lockchaos-node:bookworm",
                "bash",
                "-c",
                &script,
            ]);
            assert!(ok, "docker run: {out}");
            lab.containers.push(name);
        }
        for i in 1..=kinds.len() {
            lab.wait_for_sshd(i);
        }
        lab
    }

    /// Host K's (1-based) address.
    fn ip(&self, k: usize) -> String {
        format!("{}.{}", self.prefix, 10 + k)
    }

    fn wait_for_sshd(&self, k: usize) {
        let addr: std::net::SocketAddr = format!("{}:22", self.ip(k)).parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err() {
            assert!(Instant::now() < deadline, "sshd on {addr} did not listen within 60 s");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A nodes-file naming `hosts` (address, user, key), with the workers on the lab network.
    fn nodes_file(&self, name: &str, hosts: &[(String, &str, &str)]) -> PathBuf {
        let mut text = String::new();
        for (address, user, key) in hosts {
            text.push_str(&format!("[[host]]\naddress = \"{address}\"\nuser = \"{user}\"\nkey = \"{key}\"\n\n"));
        }
        text.push_str("[ssh]\nknown_hosts_file = \"known_hosts\"\naccept_new_host_keys = true\nconnect_timeout_secs = 3\n\n");
        text.push_str(&format!("[workers]\ndocker_network = \"{}\"\nfirst_address = \"{}.101\"\n", self.network, self.prefix));
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A nodes-file of the first `n` hosts, as root.
    fn root_nodes(&self, n: usize) -> PathBuf {
        let hosts: Vec<_> = (1..=n).map(|k| (self.ip(k), "root", "key")).collect();
        self.nodes_file("nodes.toml", &hosts)
    }

    /// What a run left on host K: stopped processes, marked or server processes, tagged
    /// rules, the clock offset file, the run's folder. Empty: nothing.
    fn leftovers(&self, k: usize) -> Vec<String> {
        let script = r#"
            ps -eo stat=,pid=,comm= | awk '$1 ~ /^T/ {print "stopped process " $2 " " $3}'
            for p in redis-server etcd; do pgrep -x "$p" >/dev/null && echo "$p running"; done
            for d in /proc/[0-9]*; do
              tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -q '^LOCKCHAOS_RUN=' && echo "marked process ${d#/proc/}"
            done
            iptables-save | grep -- '--comment lockchaos-' | sed 's/^/rule /'
            for f in /tmp/lockchaos-faketime /lockchaos; do [ -e "$f" ] && echo "file $f"; done
            true"#;
        let (ok, out) = docker(&["exec", &self.containers[k - 1], "bash", "-c", script]);
        assert!(ok, "{out}");
        out.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()
    }

    /// The `docker exec`s that reached any lab host since `since` (Unix seconds, fractional).
    fn execs_since(&self, since: &str) -> Vec<String> {
        let until = now_secs();
        let (ok, out) = docker(&[
            "events",
            "--since",
            since,
            "--until",
            &until,
            "--filter",
            &format!("label=lockchaos.sshlab={}", self.id),
            "--filter",
            "event=exec_create",
        ]);
        assert!(ok, "{out}");
        out.lines().map(String::from).collect()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &self.containers {
            docker(&["rm", "-f", c]);
        }
        docker(&["network", "rm", &self.network]);
    }
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() % 100_000
}

/// Now, as `docker events` takes it: Unix seconds with nanoseconds.
fn now_secs() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    format!("{}.{:09}", now.as_secs(), now.subsec_nanos())
}

fn lockchaos() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lockchaos"));
    c.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    c
}

/// `lockchaos ARGS --store STORE --nodes-file NODES`.
fn on_hosts(args: &[&str], store: &Path, nodes: &Path) -> Command {
    let mut c = lockchaos();
    c.args(args).arg("--store").arg(store).arg("--nodes-file").arg(nodes);
    c
}

/// results.json of the one run of `scenario` in `store`.
fn results(store: &Path, scenario: &str) -> Value {
    let run = std::fs::read_dir(store.join(scenario)).unwrap().next().unwrap().unwrap().path();
    serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap()
}

#[test]
fn three_scenarios_match_through_the_ssh_provider_and_leave_the_hosts_as_they_were() {
    let lab = Lab::new(&[Kind::Root; 5]);
    let nodes = lab.root_nodes(5);
    let store = tempfile::Builder::new().prefix("ssh-store-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for (scenario, hosts, server_log) in
        [("redis-single-pause", 1, "n1-redis.log"), ("redlock-clock-jump", 5, "n3-redis.log"), ("etcd-pause-fenced", 3, "n2-etcd.log")]
    {
        let since = now_secs();
        let out = on_hosts(&["scenario", scenario, "--quiet"], store.path(), &nodes).output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let v = results(store.path(), scenario);
        assert!(v["matches_expectation"] == true, "{scenario} through SSH: {} expected {}: {said}", v["outcome"], v["expect"]);
        assert_eq!(out.status.code(), Some(0), "{scenario}: {said}");
        assert_eq!(lab.execs_since(&since), Vec::<String>::new(), "{scenario}: lockchaos reached a host by docker exec");
        for k in 1..=hosts {
            assert_eq!(lab.leftovers(k), Vec::<String>::new(), "{scenario} left this on host {k}");
        }
        let run = std::fs::read_dir(store.path().join(scenario)).unwrap().next().unwrap().unwrap().path();
        assert!(run.join("logs").join(server_log).is_file(), "{scenario}: the server's log was fetched over SSH");
    }
}

/// The run folder of the one run in `store`, once its nemesis has started `faults` faults.
fn wait_for_faults(store: &Path, scenario: &str, faults: usize, child: &mut Child) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        assert!(child.try_wait().unwrap().is_none(), "the run ended before its faults took effect");
        assert!(Instant::now() < deadline, "{faults} faults did not start within 180 s");
        if let Some(run) = std::fs::read_dir(store.join(scenario)).ok().and_then(|mut d| d.next()).and_then(Result::ok) {
            let text = std::fs::read_to_string(run.path().join("nemesis.jsonl")).unwrap_or_default();
            let started = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|e| e["value"] == "start").count();
            if started >= faults {
                return run.path();
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_interrupted_ssh_run_leaves_no_rule_stopped_process_or_clock_offset_on_the_host() {
    let lab = Lab::new(&[Kind::Root]);
    let nodes = lab.root_nodes(1);
    // Three faults in effect at once on the host: its clock moved, a client cut off, its server
    // stopped.
    let scenario = lab.dir.path().join("ssh-all-at-once.toml");
    std::fs::write(
        &scenario,
        r#"description = "Every kind of host state at once: a clock offset, a tagged rule, a stopped server"
expect = "violation"
backend = "redis-single"
clients = 2
time_limit_secs = 120
[lock]
ttl_ms = 2000
acquire_timeout_ms = 5000
[workload]
work_ms = 200
think_ms = 20
[[nemesis.timeline]]
at_ms = 500
fault = "clock-jump"
target = "n1"
offset_ms = 30000
duration_ms = 600000
[[nemesis.timeline]]
at_ms = 500
fault = "partition"
target = "client-1"
from = ["n1"]
duration_ms = 600000
[[nemesis.timeline]]
at_ms = 1000
fault = "pause"
target = "n1"
duration_ms = 600000
"#,
    )
    .unwrap();
    let name = "ssh-all-at-once";
    let start = |store: &Path| {
        on_hosts(&["scenario", "--quiet"], store, &nodes).arg(&scenario).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
    };

    // Ctrl-C: the run heals and tears down by itself.
    let store = tempfile::Builder::new().prefix("ssh-int-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut child = start(store.path());
    wait_for_faults(store.path(), name, 3, &mut child);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    assert!(!child.wait().unwrap().success(), "an interrupted run does not pass");
    assert_eq!(lab.leftovers(1), Vec::<String>::new(), "after Ctrl-C");
    let v = results(store.path(), name);
    assert!(v["interrupted"] == true && v["outcome"] != "safe", "an interrupted run never checks safe: {v}");

    // SIGKILL: everything is still on the host (the check can fail) until clean heals it.
    let store = tempfile::Builder::new().prefix("ssh-kill-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut child = start(store.path());
    let run = wait_for_faults(store.path(), name, 3, &mut child);
    let killed = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!masters_of(killed).is_empty(), "the killed lockchaos's ssh master connection is still there");
    let left = lab.leftovers(1);
    for thing in ["stopped process", "redis-server running", "rule ", "file /tmp/lockchaos-faketime", "file /lockchaos"] {
        assert!(left.iter().any(|l| l.starts_with(thing)), "a killed run leaves {thing:?} on the host: {left:?}");
    }
    let out = lockchaos().arg("clean").arg("--nodes-file").arg(&nodes).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("healed ssh-all-at-once-"), "{said}");
    assert_eq!(lab.leftovers(1), Vec::<String>::new(), "after SIGKILL and clean --nodes-file: {said}");
    let run_id = serde_json::from_str::<Value>(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, containers) = docker(&["ps", "-aq", "--filter", &format!("label=lockchaos.run={run_id}")]);
    assert_eq!(containers.trim(), "", "clean removed the run's containers too");
    assert!(run.join("results.json").is_file(), "clean finished the run's folder");
    assert_eq!(masters_of(killed), Vec::<PathBuf>::new(), "clean ended the killed lockchaos's ssh masters");
}

/// The ssh master connections (their folders) that serve lockchaos process `pid`.
fn masters_of(pid: u32) -> Vec<PathBuf> {
    let dir = std::env::temp_dir().join("lockchaos-ssh");
    let Ok(entries) = std::fs::read_dir(dir) else { return vec![] };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| std::fs::read_to_string(p.join("controller")).is_ok_and(|c| c.starts_with(&format!("{pid}:"))))
        .filter(|p| p.join("master").exists())
        .collect()
}

#[test]
fn a_host_that_cannot_serve_is_one_line_naming_it_before_anything_starts() {
    let lab = Lab::new(&[Kind::Root, Kind::NoSudo, Kind::NotDebian]);
    let store = tempfile::Builder::new().prefix("ssh-bad-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let unreachable = format!("{}.99", lab.prefix);
    let cases = [
        ("unreachable.toml", (unreachable.clone(), "root", "key"), format!("n1 (root@{unreachable}:22): cannot connect over SSH")),
        ("refused-key.toml", (lab.ip(1), "root", "other-key"), format!("n1 (root@{}:22): cannot connect over SSH: ", lab.ip(1))),
        ("no-sudo.toml", (lab.ip(2), "lab", "key"), format!("n1 (lab@{}:22): lab is not root and has no passwordless sudo", lab.ip(2))),
        ("not-debian.toml", (lab.ip(3), "root", "key"), format!("n1 (root@{}:22): not Debian", lab.ip(3))),
    ];
    for (file, host, expected) in cases {
        let nodes = lab.nodes_file(file, &[host]);
        let out = on_hosts(&["scenario", "redis-single-pause"], store.path(), &nodes).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(lines.len(), 1, "{file}: one error line: {err}");
        assert!(lines[0].contains(&expected), "{file}: expected {expected:?} in {err}");
        assert!(!store.path().join("redis-single-pause").exists(), "{file}: no run folder for a run that could not start");
    }
    // A scenario the hosts cannot serve: a backend that runs only in containers, and a client
    // cut off when the hosts see every client at one address.
    let nodes = lab.root_nodes(1);
    let out = on_hosts(&["scenario", "postgres-session-pause"], store.path(), &nodes).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("field 'backend'") && err.contains("cannot run on remote hosts"), "{err}");
    let text = std::fs::read_to_string(&nodes).unwrap();
    let shared = lab.dir.path().join("no-network.toml");
    std::fs::write(&shared, &text[..text.find("[workers]").unwrap()]).unwrap();
    let out = on_hosts(&["scenario", "redlock-clock-jump"], store.path(), &shared).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nemesis.timeline[0].fault") && err.contains("cuts a client off"), "{err}");
    let missing = lab.dir.path().join("missing-network.toml");
    std::fs::write(&missing, text.replace(&lab.network, "lockchaos-no-such-network")).unwrap();
    let out = on_hosts(&["scenario", "redis-single-pause"], store.path(), &missing).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("field 'workers.docker_network'") && err.contains("no Docker network lockchaos-no-such-network"), "{err}");
    // A matrix on hosts: one run at a time, and only what the hosts can run.
    let out = on_hosts(&["matrix", "--scenarios", "redis-single-pause", "--jobs", "2"], store.path(), &nodes).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(2) && err.contains("one run at a time"), "{err}");
    let out = on_hosts(&["matrix", "--scenarios", "postgres-*"], store.path(), &nodes).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.code() == Some(2) && said.contains("left out") && said.contains("none of the chosen scenarios"), "{said}");
    assert_eq!(lab.leftovers(1), Vec::<String>::new(), "nothing was done on the host");
}
