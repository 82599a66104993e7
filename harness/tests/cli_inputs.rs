//! Command-line inputs that used to be taken silently or answered with an error naming nothing:
//! each now gets one error line that names what is wrong (exit 2), before anything starts.

use std::process::Command;

fn lockchaos(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockchaos"));
    cmd.current_dir(root).args(args).env("CI", "true");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn zero_runs_are_refused_not_run_once() {
    for args in [&["scenario", "redis-single-baseline", "--test-count", "0"][..], &["matrix", "--runs", "0"]] {
        let (code, text) = lockchaos(args, &[]);
        assert_eq!(code, Some(2), "{args:?}: {text}");
        assert!(text.contains("invalid value '0'") && !text.contains("outcome"), "{args:?}: {text}");
    }
}

#[test]
fn a_store_that_cannot_be_made_is_named() {
    let (code, text) = lockchaos(&["scenario", "redis-single-baseline", "--time-limit", "1", "--store", "/proc/lockchaos-store"], &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("/proc/lockchaos-store"), "{text}");
}

#[test]
fn an_empty_docker_host_is_unset_and_a_matrix_without_docker_says_so_first() {
    let (code, text) = lockchaos(&["clean"], &[("DOCKER_HOST", "")]);
    assert_eq!(code, Some(0), "an empty DOCKER_HOST means the default socket: {text}");
    let (code, text) = lockchaos(
        &["matrix", "--scenarios", "redis-single-baseline", "--store", "/tmp/lockchaos-no-docker"],
        &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")],
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(text.starts_with("error: no Docker daemon answers at unix:///nonexistent/docker.sock"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
}
