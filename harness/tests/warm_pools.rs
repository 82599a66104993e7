//! Warm pools for real (Docker, the node image, Redis, etcd): runs after the first reuse their
//! backend's nodes, reset and verified clean, with the verdicts cold runs give; the check that
//! vouches for a reset node refuses each kind of dirt a run can leave; a pool whose node died is
//! not used, and the run says so.

mod common;

use harness::containers::{docker_api, teardown, Cluster, ContainerSpec};
use harness::lock_backends::{setup_for, BackendKind, ServerOptions};
use harness::node_image::IMAGE;
use harness::node_source::node_state;
use harness::node_source::warm_pool::WarmPools;
use harness::run::RunOptions;
use harness::{scenario_catalog, series};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

fn run_json(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap()
}

/// `lockchaos scenario NAME --test-count N [--cold]`: the exit code, and each run's folder.
fn series_cli(name: &str, runs: u32, cold: bool, store: &Path) -> (Option<i32>, Vec<std::path::PathBuf>) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lockchaos"));
    cmd.args(["scenario", name, "--quiet", "--test-count", &runs.to_string(), "--store", store.to_str().unwrap()]).env("CI", "true");
    if cold {
        cmd.arg("--cold");
    }
    let out = cmd.output().unwrap();
    let mut dirs: Vec<_> = std::fs::read_dir(store.join(name)).unwrap().flatten().map(|e| e.path()).collect();
    dirs.sort();
    assert_eq!(dirs.len(), runs as usize, "{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code(), dirs)
}

/// A clock jump with a partition (libfaketime's offset file, iptables rules) and a server killed
/// and restarted: warm runs after the first reuse the pool, its reset verified clean, and every
/// run, cold or warm, gives the scenario's expected verdict.
#[test]
fn warm_runs_reuse_their_pool_after_faults_and_give_the_verdicts_cold_runs_give() {
    for name in ["redlock-clock-jump", "redis-single-restart-no-persistence"] {
        let (cold, warm) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (cold_code, cold_dirs) = series_cli(name, 2, true, cold.path());
        let (warm_code, warm_dirs) = series_cli(name, 2, false, warm.path());
        assert_eq!((cold_code, warm_code), (Some(0), Some(0)), "{name}: every run matches, cold and warm");
        for dir in &cold_dirs {
            assert_eq!(run_json(dir)["nodes"]["source"], "fresh-containers", "{}", dir.display());
        }
        let nodes: Vec<Value> = warm_dirs.iter().map(|d| run_json(d)["nodes"].clone()).collect();
        assert_eq!(nodes[0]["run_in_pool"], 1, "{name}: {nodes:?}");
        assert_eq!(nodes[1]["run_in_pool"], 2, "{name}: the second run reused the pool: {nodes:?}");
        assert_eq!(nodes[0]["pool"], nodes[1]["pool"], "{name}");
        assert!(nodes[1].get("built_cold_because").is_none(), "{name}: {nodes:?}");
        // The servers' logs are the run's, as a cold run's are.
        let server_log = if name.starts_with("redlock") { "n5-redis.log" } else { "n1-redis.log" };
        for dir in &warm_dirs {
            assert!(dir.join("logs").join(server_log).is_file(), "{}", dir.display());
        }
    }
}

/// The check that vouches for a reset node reads each kind of dirt a run can leave, and the
/// reset removes it; the servers' own check finds a leftover key.
#[tokio::test(flavor = "multi_thread")]
async fn the_check_refuses_a_node_with_a_rule_an_offset_a_stopped_process_or_a_key() {
    let docker = docker_api::connect().await.unwrap();
    let run_id = format!("warm-dirt-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("logs")).unwrap();
    let cluster = Cluster::create(docker.clone(), &run_id, dir.path(), IMAGE, rand::random()).await.unwrap();
    let result = async {
        let exe = Path::new(env!("CARGO_BIN_EXE_lockchaos"));
        cluster.start(ContainerSpec::node("n1", exe, &dir.path().join("logs"))).await?;
        cluster.confine("n1").await?;
        let paths = vec!["/var/lib/lockchaos-redis".to_string()];
        let clean = node_state::inspect(&cluster, "n1", &paths).await?;
        let egress = cluster.egress();
        for (dirt, what) in [
            ("iptables -A INPUT -s 10.213.0.99/32 -j DROP", "iptables filter"),
            ("echo +20s > /tmp/lockchaos-faketime", "files"),
            ("mkdir -p /var/lib/lockchaos-redis", "files"),
            ("sleep 1000 & kill -STOP $!", "processes"),
        ] {
            cluster.exec_ok("n1", &["bash", "-c", dirt]).await?;
            let dirty = node_state::inspect(&cluster, "n1", &paths).await?;
            let difference = node_state::difference(&clean, &dirty);
            assert!(difference.as_deref().is_some_and(|d| d.starts_with(what)), "{dirt}: {difference:?}");
            let after = node_state::reset(&cluster, "n1", &paths, &egress).await?;
            assert_eq!(node_state::difference(&clean, &after), None, "{dirt}: the reset cleans it");
        }
        // A key the servers still hold.
        let redis = setup_for(BackendKind::RedisSingle, ServerOptions::default());
        redis.start(&cluster).await?;
        let check = redis.warm_reset().map_err(anyhow::Error::msg)?;
        check.verify_empty(&cluster).await?;
        cluster.exec_ok("n1", &["redis-cli", "SET", "leftover", "1"]).await?;
        let refused = check.verify_empty(&cluster).await.expect_err("a leftover key");
        assert!(format!("{refused:#}").contains("holds 1 key(s)"), "{refused:#}");
        anyhow::Ok(())
    }
    .await;
    teardown::remove_labelled(&docker, Some(&run_id), None).await.unwrap();
    result.unwrap();
}

/// A pool whose node died between runs is not used: the next run's nodes are built cold, its
/// run.json says why, and the dead pool is gone.
#[tokio::test(flavor = "multi_thread")]
async fn a_pool_whose_node_died_is_torn_down_and_the_run_built_cold() {
    let docker = docker_api::connect().await.unwrap();
    let store = tempfile::tempdir().unwrap();
    let pools = WarmPools::new(1);
    let opts = RunOptions {
        store: store.path().to_path_buf(),
        time_limit_secs: Some(2),
        exe: Some(env!("CARGO_BIN_EXE_lockchaos").into()),
        pools: Some(pools.clone()),
        ..Default::default()
    };
    let loaded = Arc::new(scenario_catalog::resolve("redis-single-baseline").unwrap());
    let events = harness::events::EventSink::new(vec![]);
    let first = series::run_series(loaded.clone(), &opts, 1, &events).await;
    assert!(first.error.is_none(), "{:?}", first.error);
    let idle = pools.idle_ids();
    assert_eq!(idle.len(), 1, "the first run handed its pool back");
    let node = format!("lockchaos-{}-n1", idle[0]);
    docker.kill_container(&node, None::<bollard::query_parameters::KillContainerOptions>).await.unwrap();

    let second = series::run_series(loaded, &opts, 1, &events).await;
    pools.close().await.unwrap();
    assert!(second.error.is_none(), "{:?}", second.error);
    let nodes = run_json(&second.dirs[0])["nodes"].clone();
    let why = nodes["built_cold_because"].as_str().unwrap_or_default();
    assert!(why.contains(&idle[0]), "{nodes}");
    assert_eq!(nodes["run_in_pool"], 1, "{nodes}");
    assert_eq!(second.runs[0].outcome, results::Outcome::Safe);
    let left = teardown::remove_labelled(&docker, Some(&idle[0]), None).await.unwrap();
    assert_eq!((left.containers, left.networks), (0, 0), "the dead pool was torn down");
}

/// The pools' containers and networks whose controller is the process `pid`.
fn pool_items_of(pid: u32) -> usize {
    let list = |what: &str| {
        let out = std::process::Command::new("docker")
            .args([what, "ls", "-a", "--filter", "label=lockchaos.pool", "--format", "{{.Label \"lockchaos.controller\"}}"])
            .args(if what == "network" { vec![] } else { vec!["--no-trunc"] })
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.split(':').next() == Some(&pid.to_string())).count()
    };
    list("container") + list("network")
}

/// A warm series stopped by Ctrl-C leaves no pool behind; one killed by SIGKILL leaves its pool
/// to `lockchaos clean`, which removes it.
#[test]
fn ctrl_c_leaves_no_pool_and_clean_removes_a_killed_series_pool() {
    use nix::sys::signal::{kill, Signal};
    for signal in [Signal::SIGINT, Signal::SIGKILL] {
        let store = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lockchaos"))
            .args(["scenario", "redis-single-baseline", "--quiet", "--test-count", "5", "--time-limit", "3"])
            .args(["--store", store.path().to_str().unwrap()])
            .env("CI", "true")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Into the second run: the first has handed its pool back, the second took it.
        let runs = store.path().join("redis-single-baseline");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0) < 2 || pool_items_of(child.id()) == 0 {
            assert!(std::time::Instant::now() < deadline, "the second run never started");
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        std::thread::sleep(std::time::Duration::from_millis(1500));
        kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
        child.wait().unwrap();
        if signal == Signal::SIGKILL {
            assert!(pool_items_of(child.id()) > 0, "a killed series cannot remove its pool");
            let clean = std::process::Command::new(env!("CARGO_BIN_EXE_lockchaos")).arg("clean").env("CI", "true").output().unwrap();
            let said = String::from_utf8_lossy(&clean.stdout);
            assert!(said.contains("removed warm pool pool-"), "{said}");
        }
        assert_eq!(pool_items_of(child.id()), 0, "{signal}: a pool of the series is left");
    }
}
