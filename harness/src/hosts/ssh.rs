//! One host reached over SSH, through the system's OpenSSH (the `openssh` crate: one master
//! connection per host, each command a session over it). A command is an argument vector: the
//! crate shell-quotes every argument, so nothing is pasted into a command line.
//!
//! A command a run sends carries `LOCKCHAOS_RUN=<run id>` in its environment (`env` in front of
//! it), and so does every process it starts, daemons included: that is how teardown and
//! `lockchaos clean` find exactly the run's own processes on a host (`heal.rs`).

use super::nodes_file::{HostEntry, SshOptions};
use super::RUN_ENV;
use openssh::{KnownHosts, Session, SessionBuilder};
use std::path::{Path, PathBuf};
use std::process::Output;

/// Beside each master's socket: the lockchaos process (controller id) it serves, so that
/// `lockchaos clean` can end the masters of a lockchaos killed by SIGKILL.
const CONTROLLER_FILE: &str = "controller";

/// A connected host. Non-root users run every command through `sudo -n`.
pub struct Host {
    pub entry: HostEntry,
    session: Session,
    sudo: bool,
}

/// Where the master connections' sockets live (short: a socket path has a length limit).
fn control_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join("lockchaos-ssh");
    std::fs::create_dir_all(&dir)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(dir)
}

/// The first line of what a command or ssh said.
pub(super) fn first_line(text: &str) -> &str {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no message")
}

impl Host {
    /// Connects and finds out whether commands need sudo. Err: one line naming the host and
    /// what failed (unreachable, refused key, unknown host key, neither root nor sudo). The
    /// master connection lives until the host is closed or dropped, or `lockchaos clean` ends
    /// it for `controller`, the lockchaos process it serves, once that is gone.
    pub async fn connect(entry: &HostEntry, ssh: &SshOptions, controller: &str) -> Result<Host, String> {
        let mut builder = SessionBuilder::default();
        builder
            .user(entry.user.clone())
            .port(entry.port)
            .keyfile(&entry.key)
            .connect_timeout(std::time::Duration::from_secs(ssh.connect_timeout_secs))
            .server_alive_interval(std::time::Duration::from_secs(5))
            .known_hosts_check(if ssh.accept_new_host_keys { KnownHosts::Add } else { KnownHosts::Strict })
            .control_directory(control_dir().map_err(|e| format!("{}: cannot make ssh's control folder: {e}", entry.label()))?);
        if let Some(file) = &ssh.known_hosts_file {
            builder.user_known_hosts_file(file);
        }
        let session = builder.connect(entry.ip.to_string()).await.map_err(|e| {
            let detail = match &e {
                openssh::Error::Connect(io) => first_line(&io.to_string()).to_string(),
                other => first_line(&format!("{other}")).to_string(),
            };
            format!("{}: cannot connect over SSH: {detail}", entry.label())
        })?;
        if let Some(dir) = session.control_socket().parent() {
            let _ = std::fs::write(dir.join(CONTROLLER_FILE), controller);
        }
        let mut host = Host { entry: entry.clone(), session, sudo: false };
        let uid = host.output(&["id", "-u"], None).await.map_err(|e| format!("{}: {e}", entry.label()))?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            // A host without sudo at all makes the command fail to run (exit 127).
            let said = match host.output(&["sudo", "-n", "true"], None).await {
                Ok(out) if out.status.success() => None,
                Ok(out) => Some(first_line(&String::from_utf8_lossy(&out.stderr)).to_string()),
                Err(e) => Some(first_line(&format!("{e:#}")).to_string()),
            };
            if let Some(said) = said {
                return Err(format!("{}: {} is not root and has no passwordless sudo (`sudo -n true`: {said})", entry.label(), entry.user));
            }
            host.sudo = true;
        }
        Ok(host)
    }

    pub fn label(&self) -> String {
        self.entry.label()
    }

    /// Runs `argv` as root (sudo when needed); `run`: the run whose marker it carries.
    async fn output(&self, argv: &[&str], run: Option<&str>) -> anyhow::Result<Output> {
        let marker = run.map(|r| format!("{RUN_ENV}={r}"));
        let mut words: Vec<&str> = vec![];
        if self.sudo {
            words.extend(["sudo", "-n"]);
        }
        if let Some(m) = &marker {
            words.extend(["env", m.as_str()]);
        }
        words.extend(argv);
        let mut command = self.session.command(words[0]);
        command.args(&words[1..]);
        command.output().await.map_err(|e| anyhow::anyhow!("`{}` over SSH failed: {e}", argv.join(" ")))
    }

    /// Runs `argv` for `run` (marked, see the module's doc) and returns (exit code, stdout and
    /// stderr), as `Cluster::exec` does in a container.
    pub async fn exec(&self, run: Option<&str>, argv: &[&str]) -> anyhow::Result<(i64, String)> {
        let out = self.output(argv, run).await?;
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        Ok((out.status.code().map(i64::from).unwrap_or(-1), text))
    }

    /// Runs `argv` unmarked and fails, with its output, unless it exits 0.
    pub async fn exec_ok(&self, argv: &[&str]) -> anyhow::Result<String> {
        let (code, out) = self.exec(None, argv).await?;
        if code != 0 {
            anyhow::bail!("`{}` exited {code}: {}", argv.join(" "), out.trim());
        }
        Ok(out)
    }

    /// Writes `bytes` to `path` on the host (a file lockchaos owns), through `cat`'s stdin.
    pub async fn upload(&self, bytes: &[u8], path: &str) -> anyhow::Result<()> {
        use tokio::io::AsyncWriteExt;
        let mut words: Vec<&str> = vec![];
        if self.sudo {
            words.extend(["sudo", "-n"]);
        }
        let script = "cat > \"$1\" && chmod 0755 \"$1\"";
        words.extend(["sh", "-c", script, "upload", path]);
        let mut command = self.session.command(words[0]);
        command.args(&words[1..]).stdin(openssh::Stdio::piped()).stdout(openssh::Stdio::null()).stderr(openssh::Stdio::piped());
        let mut child = command.spawn().await.map_err(|e| anyhow::anyhow!("uploading {path}: {e}"))?;
        let mut stdin = child.stdin().take().expect("piped stdin");
        stdin.write_all(bytes).await?;
        stdin.shutdown().await?;
        drop(stdin);
        let out = child.wait_with_output().await.map_err(|e| anyhow::anyhow!("uploading {path}: {e}"))?;
        if !out.status.success() {
            anyhow::bail!("uploading {path}: {}", first_line(&String::from_utf8_lossy(&out.stderr)));
        }
        Ok(())
    }

    /// Ends the master connection.
    pub async fn close(self) {
        let _ = self.session.close().await;
    }
}

/// Ends the master connections whose lockchaos is gone (`alive` says which controllers still
/// run) and removes their folders: what a lockchaos killed by SIGKILL left on this machine.
/// Returns how many it ended.
pub fn end_masters_of_gone_runs(alive: impl Fn(&str) -> bool) -> usize {
    let Ok(dir) = control_dir() else { return 0 };
    let Ok(entries) = std::fs::read_dir(&dir) else { return 0 };
    let mut ended = 0;
    for entry in entries.flatten() {
        let folder = entry.path();
        let Ok(controller) = std::fs::read_to_string(folder.join(CONTROLLER_FILE)) else { continue };
        if alive(controller.trim()) {
            continue;
        }
        if end_master(&folder.join("master")) {
            ended += 1;
        }
        let _ = std::fs::remove_dir_all(&folder);
    }
    ended
}

/// `ssh -O exit` on a master's socket: true when a master was there and ended.
fn end_master(socket: &Path) -> bool {
    socket.exists()
        && std::process::Command::new("ssh")
            .arg("-S")
            .arg(socket)
            .args(["-O", "exit", "lockchaos-host"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}
