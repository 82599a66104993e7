//! `lockchaos sweep` against a real Redis: every point is a run in the store, measured into
//! sweep.json and sweep.html, and the ceiling check can fail: a lock whose lease (50 ms) is
//! shorter than its work (200 ms) lets several clients hold it at once, and their writes pass
//! 1000 / work_ms.

use serde_json::Value;
use std::process::Command;

fn scenario(ttl_ms: u64, expect: &str) -> String {
    format!(
        "description = \"sweep test\"\nexpect = \"{expect}\"\nbackend = \"redis-single\"\n\
         [lock]\nttl_ms = {ttl_ms}\nacquire_timeout_ms = 60000\nretry_ms = 10\n\
         [workload]\nwork_ms = 200\nthink_ms = 20\n"
    )
}

#[test]
fn a_sweep_runs_each_point_in_the_store_and_finds_a_lock_above_its_ceiling() {
    let dir = tempfile::Builder::new().prefix("sweep-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (held, expired) = (dir.path().join("held.toml"), dir.path().join("expired.toml"));
    std::fs::write(&held, scenario(5000, "safe")).unwrap();
    std::fs::write(&expired, scenario(50, "violation")).unwrap();
    let store = dir.path().join("store");
    let out = Command::new(env!("CARGO_BIN_EXE_lockchaos"))
        .args(["sweep", "--clients", "1,4", "--time-limit", "6", "--quiet", "--store"])
        .arg(&store)
        .args([&held, &expired])
        .env("CI", "true")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // Every run matched its expectation; the expired lock passing its ceiling makes it 1.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("sweep expired: writes/s per key by clients") && stdout.contains("ABOVE ITS CEILING"), "{stdout}");

    let sweeps: Vec<_> = std::fs::read_dir(store.join("sweeps")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(sweeps.len(), 1);
    let sweep: Value = serde_json::from_str(&std::fs::read_to_string(sweeps[0].join("sweep.json")).unwrap()).unwrap();
    let lines = sweep["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    for line in lines {
        assert_eq!(line["ceiling_per_sec"].as_f64(), Some(5.0));
        let points = line["points"].as_array().unwrap();
        assert_eq!(points.iter().map(|p| p["clients"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 4]);
        for p in points {
            // Each point is a run of its own, its report reachable from the sweep's page.
            let report = sweeps[0].join(p["report"].as_str().unwrap());
            assert!(report.is_file(), "{}", report.display());
            assert!(p["writes"].as_u64() > Some(5), "{p}");
        }
    }
    let above = |line: &Value| -> Vec<bool> { line["points"].as_array().unwrap().iter().map(|p| p["above_ceiling"] == true).collect() };
    assert_eq!(above(&lines[0]), [false, false], "a held lock stays under 5/s: {}", lines[0]);
    // One client cannot overlap itself; four can, with the lease gone after 50 ms.
    assert_eq!(above(&lines[1]), [false, true], "the expired lock passes 5/s with four clients: {}", lines[1]);

    let html = std::fs::read_to_string(sweeps[0].join("sweep.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 3);
    assert!(html.contains("above its ceiling"));
    // Four runs in the store, no more.
    let runs = std::fs::read_dir(store.join("held")).unwrap().count() + std::fs::read_dir(store.join("expired")).unwrap().count();
    assert_eq!(runs, 4);
}
