//! A node container's state as a run can change it, read and put back by shell scripts run in
//! the node: its processes (every one but docker-init, its `sleep infinity` and the script),
//! its firewall (every table), its qdisc, the faults' files and the servers' state paths.
//! A warm pool takes a node's [`inspect`] right after it is built and confined, and a reset node
//! must read the same again before a run may use it.

use crate::containers::egress::Egress;
use crate::containers::Cluster;

/// The processes a run left: all but PID 1, the `sleep infinity` it runs, and this script
/// and its children (found by their ancestry, so a pipeline of the script never counts).
/// Prints `PID STAT ARGS` lines.
const LEFT_PROCESSES: &str = r#"
left_processes() {
  ps -eo pid=,ppid=,stat=,args= | awk -v self="$$" '
    { pid[NR] = $1; parent[$1] = $2; line[$1] = $1 " " $3; for (i = 4; i <= NF; i++) line[$1] = line[$1] " " $i }
    END {
      for (i = 1; i <= NR; i++) {
        p = pid[i]; q = p; ours = 0
        while (q > 1) { if (q == self) { ours = 1; break } q = parent[q] + 0 }
        if (p == 1 || ours) continue
        if (parent[p] == 1 && line[p] ~ / sleep infinity$/) continue
        print line[p]
      }
    }'
}
"#;

/// The faults' files in a node (libfaketime's offset, the strobe's and the slew's state).
const FAULT_FILES: &str = "/tmp/lockchaos-*";

/// Prints the node's state, in sections, the same way every time for the same state.
fn inspect_script(state_paths: &[String]) -> String {
    format!(
        "{LEFT_PROCESSES}
set -u
echo '## processes'; left_processes
for table in filter nat mangle raw; do echo \"## iptables $table\"; iptables -w 5 -t $table -S 2>&1; done
echo '## qdisc'; tc qdisc show dev eth0 2>&1 | sed 's/ refcnt [0-9]*//'
echo '## files'; ls -d {FAULT_FILES} {} 2>/dev/null || true",
        state_paths.join(" ")
    )
}

/// Kills every process a run left (SIGCONT first: a stopped one must die too), until none is
/// left; prints how many are left (0 unless one would not die).
const STOP_SCRIPT: &str = r#"
for _ in $(seq 50); do
  pids=$(left_processes | cut -d' ' -f1)
  [ -z "$pids" ] && break
  kill -CONT $pids 2>/dev/null; kill -KILL $pids 2>/dev/null
  sleep 0.05
done
echo "left=$(left_processes | grep -c . || true)"
"#;

/// Reads a node's state.
pub async fn inspect(cluster: &Cluster, node: &str, state_paths: &[String]) -> anyhow::Result<String> {
    cluster.exec_ok(node, &["bash", "-c", &inspect_script(state_paths)]).await
}

/// Unpauses `node` if a fault left it paused.
async fn wake(cluster: &Cluster, node: &str) -> anyhow::Result<()> {
    let member = cluster.member(node)?;
    let info = cluster.docker.inspect_container(member.container()?, None).await?;
    if info.state.and_then(|s| s.paused).unwrap_or(false) {
        cluster.thaw(node).await?;
    }
    Ok(())
}

/// Kills every process the run left in `node`, after waking a paused container.
pub async fn stop_processes(cluster: &Cluster, node: &str) -> anyhow::Result<()> {
    wake(cluster, node).await?;
    let out = cluster.exec_ok(node, &["bash", "-c", &format!("{LEFT_PROCESSES}{STOP_SCRIPT}")]).await?;
    anyhow::ensure!(out.trim() == "left=0", "{node}: processes of the run would not die ({})", out.trim());
    Ok(())
}

/// Puts `node` back as it was built (its processes killed, the faults' files and
/// `state_paths` removed, the filter table emptied and the confinement to `egress` laid again,
/// no qdisc) and reads its state after, in one exec: what [`inspect`] prints.
pub async fn reset(cluster: &Cluster, node: &str, state_paths: &[String], egress: &Egress) -> anyhow::Result<String> {
    wake(cluster, node).await?;
    // Lines, not `;`: the confinement is a here-document, which must end on a line of its own.
    let script = [
        LEFT_PROCESSES.to_string(),
        STOP_SCRIPT.to_string(),
        "set -e".to_string(),
        format!("rm -rf {FAULT_FILES} {}", state_paths.join(" ")),
        "iptables -w 5 -F; iptables -w 5 -X; for c in INPUT FORWARD OUTPUT; do iptables -w 5 -P $c ACCEPT; done".to_string(),
        egress.script(),
        "tc qdisc del dev eth0 root 2>/dev/null || true".to_string(),
        inspect_script(state_paths),
    ]
    .join("\n");
    let (code, out) = cluster.exec(node, &["bash", "-c", &script]).await?;
    anyhow::ensure!(code == 0, "the reset of {node} exited {code}: {}", out.trim().lines().last().unwrap_or(""));
    let (left, state) = out.split_once('\n').unwrap_or((&out, ""));
    anyhow::ensure!(left.trim() == "left=0", "{node}: processes of the run would not die ({})", left.trim());
    Ok(state.to_string())
}

/// The first line where `now` differs from `baseline`, in words, or None when they agree.
pub fn difference(baseline: &str, now: &str) -> Option<String> {
    if baseline == now {
        return None;
    }
    let mut section = "";
    let (mut old, mut new) = (baseline.lines(), now.lines());
    loop {
        match (old.next(), new.next()) {
            (Some(a), Some(b)) if a == b => {
                if let Some(s) = a.strip_prefix("## ") {
                    section = s;
                }
            }
            (a, b) => {
                return Some(format!(
                    "{section}: `{}` where a clean node has `{}`",
                    b.unwrap_or("(nothing)").trim(),
                    a.unwrap_or("(nothing)").trim()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_difference_names_the_section_and_both_lines() {
        let clean = "## processes\n## iptables filter\n-P INPUT ACCEPT\n## files\n";
        assert_eq!(super::difference(clean, clean), None);
        let dirty = "## processes\n## iptables filter\n-P INPUT ACCEPT\n-A INPUT -s 10.213.7.12/32 -j DROP\n## files\n";
        assert_eq!(
            super::difference(clean, dirty).unwrap(),
            "iptables filter: `-A INPUT -s 10.213.7.12/32 -j DROP` where a clean node has `## files`"
        );
        let stopped = "## processes\n42 T redis-server *:6379\n## iptables filter\n-P INPUT ACCEPT\n## files\n";
        assert!(super::difference(clean, stopped).unwrap().starts_with("processes: `42 T redis-server"));
    }
}
