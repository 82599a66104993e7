//! Leaving a host as the run found it, on every ending: the run's processes woken and killed
//! (found by the `LOCKCHAOS_RUN` marker in their environment, and the backend's servers by
//! name, since Redis overwrites its environment with its process title and the host had none
//! running when the run claimed it; so a stopped server is never left stopped and nothing of
//! anyone else's is touched), its iptables rules deleted (found by their
//! comment, `lockchaos-<run id>`), and the files it wrote removed (libfaketime's offset file,
//! the strobe's and slew's state, data directories, /lockchaos). Also what `lockchaos clean
//! --nodes-file` runs for a run whose lockchaos is gone.

use super::ssh::Host;
use super::{OWNER_FILE, STATE_DIR};
use std::path::Path;

/// Kills the marked processes (CONT first, so none stays stopped) until none is left (one
/// started meanwhile is killed too), deletes the tagged rules and counts what is left, and
/// removes the files only when nothing is left, so that a heal that could not finish can be
/// run again (`clean --nodes-file` finds the run by its owner file). Arguments: run id, rule
/// tag, state folder, server names. Prints what it did.
const HEAL_SCRIPT: &str = r#"
set -u -o pipefail
run="$1"; tag="$2"; state="$3"; shift 3; servers="$*"
marked() {
  grep -lzxsF "LOCKCHAOS_RUN=$run" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | grep -vx "$$" || true
  # Servers that overwrite their environment with their process title (Redis), by name: the
  # host had none running when the run claimed it.
  for server in $servers; do pgrep -x "$server" || true; done
}
killed=""
for _ in $(seq 50); do
  pids=$(marked | sort -u)
  [ -z "$pids" ] && break
  for pid in $pids; do
    kill -CONT "$pid" 2>/dev/null
    kill -KILL "$pid" 2>/dev/null && killed="$killed $pid"
  done
  sleep 0.1
done
processes=$(printf '%s\n' $killed | sort -u | grep -c . || true)
left=$(marked | sort -u | grep -c . || true)
rules=0; rules_left=0
if command -v iptables-save >/dev/null 2>&1; then
  tagged() { iptables-save -t filter | grep -F -- "--comment $tag " || true; }
  while read -r rule; do
    [ -n "$rule" ] || continue
    # shellcheck disable=SC2086  # a saved rule of ours is bare words (rule_tag)
    iptables -w 5 ${rule/#-A /-D } && rules=$((rules + 1))
  done <<< "$(tagged)"
  rules_left=$(tagged | grep -c . || true)
fi
if [ "$left" = 0 ] && [ "$rules_left" = 0 ]; then
  rm -rf "$state" /tmp/lockchaos-faketime /tmp/lockchaos-faketime.new /tmp/lockchaos-faketime.strobe \
    /tmp/lockchaos-strobe.pid /tmp/lockchaos-slew /var/lib/lockchaos-redis /var/lib/etcd-n[0-9]*
fi
echo "processes=$processes rules=$rules left=$left rules_left=$rules_left"
"#;

/// What a heal did on one host.
#[derive(Debug, Default, PartialEq)]
pub struct Healed {
    pub processes: u32,
    pub rules: u32,
}

/// Heals `host` of everything run `run_id` did there. Err when a marked process would not die
/// or the script failed.
pub async fn heal(host: &Host, owner: &Owner) -> anyhow::Result<Healed> {
    let run_id = owner.run_id.as_str();
    anyhow::ensure!(!run_id.is_empty() && !run_id.contains('\n'), "bad run id `{run_id}`");
    let tag = super::rule_tag(run_id);
    let mut argv = vec!["bash", "-c", HEAL_SCRIPT, "heal", run_id, &tag, STATE_DIR];
    argv.extend(owner.servers.iter().map(String::as_str));
    let out = host.exec_ok(&argv).await?;
    let field = |name: &str| -> Option<u32> { out.split_whitespace().find_map(|w| w.strip_prefix(name)?.strip_prefix('=')?.parse().ok()) };
    let (Some(processes), Some(rules), Some(left), Some(rules_left)) =
        (field("processes"), field("rules"), field("left"), field("rules_left"))
    else {
        anyhow::bail!("{}: the heal said nothing of what it did: {}", host.label(), out.trim());
    };
    if left > 0 || rules_left > 0 {
        anyhow::bail!(
            "{}: {left} process(es) and {rules_left} iptables rule(s) of run {run_id} still there (run `lockchaos clean --nodes-file` again)",
            host.label()
        );
    }
    Ok(Healed { processes, rules })
}

/// Copies the servers' logs (/lockchaos/logs) into `logs_dir`. Best effort: a missing log must
/// not stop the teardown.
pub async fn fetch_logs(host: &Host, logs_dir: &Path) {
    let logs = format!("{STATE_DIR}/logs");
    let Ok(list) = host.exec_ok(&["ls", "-1", &logs]).await else { return };
    for name in list.lines().map(str::trim).filter(|n| !n.is_empty() && !n.contains('/')) {
        if let Ok(text) = host.exec_ok(&["cat", &format!("{logs}/{name}")]).await {
            let _ = std::fs::write(logs_dir.join(name), text);
        }
    }
}

/// Who holds a host: the owner file a run writes when it claims it.
#[derive(Debug, Clone, PartialEq)]
pub struct Owner {
    pub run_id: String,
    /// `PID:START` of the lockchaos process (as the containers' controller label).
    pub controller: String,
    /// The machine it runs on (its /etc/machine-id, else its host name).
    pub machine: String,
    /// The backend's server process names (none ran when the run claimed the host).
    pub servers: Vec<String>,
}

impl Owner {
    fn to_text(&self) -> String {
        format!("run={}\ncontroller={}\nmachine={}\nservers={}\n", self.run_id, self.controller, self.machine, self.servers.join(" "))
    }

    fn parse(text: &str) -> Option<Owner> {
        let get = |k: &str| text.lines().find_map(|l| l.strip_prefix(k)?.strip_prefix('=')).map(str::to_string);
        let servers = get("servers")?.split_whitespace().map(String::from).collect();
        Some(Owner { run_id: get("run")?, controller: get("controller")?, machine: get("machine")?, servers })
    }
}

/// This machine, as owner files name it.
pub fn this_machine() -> String {
    std::fs::read_to_string("/etc/machine-id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|s| s.trim().to_string()))
        .unwrap_or_else(|| "unknown".into())
}

/// The host's owner, if a run holds it.
pub async fn owner(host: &Host) -> anyhow::Result<Option<Owner>> {
    let (code, text) = host.exec(None, &["cat", OWNER_FILE]).await?;
    if code != 0 {
        return Ok(None);
    }
    Owner::parse(&text).map(Some).ok_or_else(|| anyhow::anyhow!("{}: {OWNER_FILE} is not lockchaos's: {}", host.label(), text.trim()))
}

/// Claims the host for a run: its state folder (made only if absent: two runs cannot both
/// claim one host), logs folder and owner file.
pub async fn claim(host: &Host, owner: &Owner) -> anyhow::Result<()> {
    let script = "mkdir \"$1\" && mkdir \"$1/logs\" && printf '%s' \"$2\" > \"$3\"";
    host.exec_ok(&["sh", "-c", script, "claim", STATE_DIR, &owner.to_text(), OWNER_FILE])
        .await
        .map(|_| ())
        .map_err(|e| anyhow::anyhow!("{}: cannot claim the host (held by another run?): {e:#}", host.label()))
}

/// Undoes a claim that nothing has used yet, if it is this run's.
pub async fn unclaim(host: &Host, run_id: &str) {
    let script = "grep -qxF \"run=$2\" \"$1/owner\" && rm -rf \"$1\"";
    let _ = host.exec(None, &["sh", "-c", script, "unclaim", STATE_DIR, run_id]).await;
}

#[cfg(test)]
mod tests {
    use super::Owner;

    #[test]
    fn an_owner_file_reads_back_and_a_foreign_file_is_not_one() {
        let owner = Owner { run_id: "r-1".into(), controller: "12:34".into(), machine: "m".into(), servers: vec!["redis-server".into()] };
        assert_eq!(Owner::parse(&owner.to_text()), Some(owner));
        assert_eq!(Owner::parse("hello\n"), None);
    }
}
