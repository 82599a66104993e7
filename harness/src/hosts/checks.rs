//! What a host must be before a run uses it, checked before anything starts (so before any
//! fault): Debian on amd64, the backend's packages (installed with apt-get when missing), none
//! of the backend's servers already running (lockchaos starts and kills its own, found by
//! name), not held by another run, and for clock faults libfaketime with the jemalloc
//! stand-in in /opt/lockchaos. Each failure is one line naming the host and what failed.

use super::heal::owner;
use super::ssh::{first_line, Host};
use super::HostNeeds;
use crate::node_image;

pub async fn check(host: &Host, needs: &HostNeeds) -> Result<(), String> {
    let label = host.label();
    let fail = |what: String| format!("{label}: {what}");
    let ssh_err = |e: anyhow::Error| fail(format!("{e:#}"));

    let (code, _) = host.exec(None, &["test", "-f", "/etc/debian_version"]).await.map_err(ssh_err)?;
    if code != 0 {
        return Err(fail("not Debian (no /etc/debian_version): lockchaos installs the servers with apt".into()));
    }
    let arch = host.exec_ok(&["dpkg", "--print-architecture"]).await.map_err(ssh_err)?;
    if arch.trim() != "amd64" {
        return Err(fail(format!("architecture {} (lockchaos's jemalloc stand-in is built for amd64)", arch.trim())));
    }

    let mut query = vec!["dpkg-query", "-W", "-f=${Package} ${Status}\\n"];
    query.extend(needs.packages.iter().copied());
    let (_, listed) = host.exec(None, &query).await.map_err(ssh_err)?;
    let installed = |p: &str| listed.lines().any(|l| l.starts_with(&format!("{p} ")) && l.ends_with("install ok installed"));
    let missing: Vec<&str> = needs.packages.iter().copied().filter(|p| !installed(p)).collect();
    if !missing.is_empty() {
        tracing::info!(host = %label, packages = ?missing, "installing with apt-get");
        // Debian starts a server's service when its package is installed: a policy-rc.d that
        // refuses (exit 101) keeps it stopped, made only when the host has none and removed after.
        let install = "set -u; made=; if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made=1; fi; \
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \"$@\"; code=$?; [ -n \"$made\" ] && rm -f /usr/sbin/policy-rc.d; exit $code";
        let mut argv = vec!["sh", "-c", install, "install"];
        argv.extend(missing.iter().copied());
        let (code, out) = host.exec(None, &argv).await.map_err(ssh_err)?;
        if code != 0 {
            let last = out.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
            return Err(fail(format!("cannot install {} with apt-get: {last}", missing.join(" "))));
        }
    }

    for server in &needs.servers {
        let (code, pids) = host.exec(None, &["pgrep", "-x", server]).await.map_err(ssh_err)?;
        if code == 0 {
            return Err(fail(format!(
                "{server} is already running (PID {}): lockchaos starts and kills its own; stop that one first (systemctl stop {server})",
                first_line(&pids)
            )));
        }
    }

    if let Some(held) = owner(host).await.map_err(|e| format!("{e:#}"))? {
        return Err(fail(format!(
            "held by run {} (lockchaos {} on machine {}); if that run is gone: lockchaos clean --nodes-file FILE",
            held.run_id, held.controller, held.machine
        )));
    }

    if needs.clock_faults {
        faketime(host, needs).await.map_err(|e| fail(format!("{e:#}")))?;
    }
    Ok(())
}

/// libfaketime where the backends look for it (a link to Debian's), and the jemalloc stand-in
/// (uploaded from the node image when missing).
async fn faketime(host: &Host, needs: &HostNeeds) -> anyhow::Result<()> {
    let lib = node_image::LIBFAKETIME;
    let stub = format!("{}/libjemalloc.so.2", node_image::JEMALLOC_STUB_DIR);
    let (code, _) = host.exec(None, &["test", "-e", lib]).await?;
    if code != 0 {
        let link = "set -e; mkdir -p \"$(dirname \"$1\")\"; ln -sf \"$(ls /usr/lib/*/faketime/libfaketime.so.1 | head -n1)\" \"$1\"; test -e \"$1\"";
        host.exec_ok(&["sh", "-c", link, "link", lib]).await.map_err(|e| anyhow::anyhow!("cannot link libfaketime into {lib}: {e:#}"))?;
    }
    let (code, _) = host.exec(None, &["test", "-f", &stub]).await?;
    if code != 0 {
        let Some(bytes) = &needs.jemalloc_stub else {
            anyhow::bail!("no jemalloc stand-in at {stub}, and none to upload");
        };
        host.exec_ok(&["mkdir", "-p", node_image::JEMALLOC_STUB_DIR]).await?;
        host.upload(bytes, &stub).await?;
    }
    Ok(())
}
