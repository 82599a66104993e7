//! Streaming replication for `postgres-xact-replicated`: n1 is the primary, n2 a standby made
//! with pg_basebackup that the primary waits for on every commit (synchronous_standby_names =
//! '*', synchronous_commit = on), so a commit acknowledged to a client is on both. A failover
//! kills the primary's server and promotes the standby; clients list both servers and connect
//! to whichever accepts writes.
//!
//! Only the primary names a synchronous standby: a promoted n2 with that setting and nobody to
//! replicate to would block every commit.

use super::server::{is_primary, psql_on, BIN, DATA};
use crate::containers::Cluster;
use crate::wait;
use anyhow::{bail, Context};
use std::time::Duration;

pub const PRIMARY: &str = "n1";
pub const STANDBY: &str = "n2";

/// Lets the pair stream WAL from each other, as the superuser, and nobody else.
pub fn hba(cluster: &Cluster) -> anyhow::Result<String> {
    let line = |node: &str| Ok::<_, anyhow::Error>(format!("host replication postgres {}/32 trust", cluster.planned_ip(node)?));
    Ok(format!("{}\\n{}", line(PRIMARY)?, line(STANDBY)?))
}
/// Marks a node whose data directory already came from the primary (a restart keeps it).
const BASE_BACKUP_DONE: &str = "/var/lib/postgresql/lockchaos-base-backup";

/// Replaces the standby's fresh cluster with a base backup of the primary, configured to
/// follow it (-R: standby.signal and primary_conninfo). Once per node.
pub async fn prepare_standby(cluster: &Cluster, node: &str) -> anyhow::Result<()> {
    let primary = cluster.planned_ip(PRIMARY)?;
    let script = format!(
        "set -e; [ -f {BASE_BACKUP_DONE} ] && exit 0; rm -rf {DATA}/*; \
         runuser -u postgres -- {BIN}/pg_basebackup -h {primary} -U postgres -D {DATA} -R -X stream; \
         touch {BASE_BACKUP_DONE}"
    );
    cluster.exec_ok(node, &["sh", "-c", &script]).await.with_context(|| format!("base backup of {PRIMARY} into {node}"))?;
    Ok(())
}

/// Makes the primary wait for its standby on every commit, and waits until it reports the
/// standby as its synchronous one. Set only now, with ALTER SYSTEM (in the primary's data
/// directory, after the base backup copied it): earlier, the schema's own commit would wait
/// for a standby that does not exist yet.
pub async fn make_synchronous(cluster: &Cluster) -> anyhow::Result<()> {
    psql_on(cluster, PRIMARY, "ALTER SYSTEM SET synchronous_standby_names = '*'").await?;
    psql_on(cluster, PRIMARY, "ALTER SYSTEM SET synchronous_commit = on").await?;
    psql_on(cluster, PRIMARY, "SELECT pg_reload_conf()").await?;
    let what = format!("{STANDBY} streaming to {PRIMARY} as its synchronous standby");
    wait::until(&what, Duration::from_secs(20), Duration::from_millis(200), || async {
        let state = psql_on(cluster, PRIMARY, "SELECT sync_state FROM pg_stat_replication").await.unwrap_or_default();
        Ok(wait::ready_if(state.trim() == "sync", format!("pg_stat_replication sync_state {:?}", state.trim())))
    })
    .await
}

/// The other server of the pair.
fn partner(node: &str) -> &'static str {
    if node == PRIMARY {
        STANDBY
    } else {
        PRIMARY
    }
}

/// Kills the server in `node` (the current primary) and promotes its partner; returns when the
/// partner accepts writes.
pub async fn failover(cluster: &Cluster, node: &str) -> anyhow::Result<String> {
    let standby = partner(node);
    if !is_primary(cluster, node).await {
        bail!("cannot fail over from {node}: it is not the primary");
    }
    cluster.exec_ok(node, &["pkill", "-KILL", "-x", super::PROCESS]).await?;
    let promote = format!("{BIN}/pg_ctl -D {DATA} promote -w -t 20");
    cluster
        .exec_ok(standby, &["runuser", "-u", "postgres", "--", "sh", "-c", &promote])
        .await
        .with_context(|| format!("promoting {standby}"))?;
    let what = format!("{standby} out of recovery after pg_ctl promote");
    wait::until(&what, Duration::from_secs(20), Duration::from_millis(100), || async {
        Ok(wait::ready_if(is_primary(cluster, standby).await, "in recovery"))
    })
    .await?;
    Ok(format!("{node}'s postgres killed, {standby} promoted"))
}

/// The node whose server accepts writes now (after a failover: the promoted one).
pub async fn current_primary(cluster: &Cluster) -> anyhow::Result<&'static str> {
    for node in [STANDBY, PRIMARY] {
        if is_primary(cluster, node).await {
            return Ok(node);
        }
    }
    bail!("neither {PRIMARY} nor {STANDBY} accepts writes")
}
