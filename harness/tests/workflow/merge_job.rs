//! The nightly workflow's merge job run as a runner runs it, its shell steps in order in a
//! folder of the test's, with a stand-in lockchaos (a status given) or the real one.

use super::{expand, job_steps, nightly, root};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// The build's binary, as the job's steps call it (./target/release/lockchaos).
pub enum Lockchaos {
    /// A script that records its command line and exits with `merge` for `matrix` and with
    /// `history` for `history`: every combination of statuses, without stores that make them.
    StandIn { merge: i32, history: i32 },
    /// This build's lockchaos, linked in: what it really says of the job's stores.
    Real,
}

/// What a simulated merge job did: each step's name, exit status (None: not run) and output;
/// the outputs the steps set, by step id; the stand-in lockchaos's command lines; whether the
/// job failed; tonight's name.
pub struct MergeJob {
    pub steps: Vec<(String, Option<i32>, String)>,
    pub outputs: HashMap<String, HashMap<String, String>>,
    pub calls: Vec<String>,
    pub failed: bool,
    pub night: String,
}

impl MergeJob {
    pub fn step(&self, name: &str) -> (Option<i32>, &str) {
        let (_, status, out) = self.steps.iter().find(|(n, ..)| n == name).unwrap_or_else(|| panic!("no step {name}"));
        (*status, out)
    }

    /// The output `key` that the step `id` set ("" when it set none).
    pub fn output(&self, id: &str, key: &str) -> &str {
        self.outputs.get(id).and_then(|o| o.get(key)).map(String::as_str).unwrap_or("")
    }
}

fn executable(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// Runs the merge job's shell steps in `dir` in order, as a runner does (`bash -e`, the step's
/// env, GITHUB_OUTPUT, CI=true; a step without `if` only while none has failed, `if: always()`
/// anyway). The steps that use actions are not run: what they would leave (the shards' stores,
/// the nights restored) is already in `dir`; nor is the build: its binary is `lockchaos`. `date`
/// says it is 2025-06-01. No Docker is reachable: nothing in this job may need it.
pub fn run_merge_job(dir: &Path, run_id: &str, lockchaos: Lockchaos) -> MergeJob {
    let text = nightly();
    let calls = dir.join(".calls");
    let binary = dir.join("target/release/lockchaos");
    let (merge_status, history_status) = match lockchaos {
        Lockchaos::StandIn { merge, history } => {
            executable(
                &binary,
                "#!/usr/bin/env bash\necho \"$*\" >> \"$FAKE_CALLS\"\ncase \"$1\" in\n  matrix) exit \"$FAKE_MERGE_STATUS\" ;;\n  history) exit \"$FAKE_HISTORY_STATUS\" ;;\nesac\nexit 99\n",
            );
            (merge, history)
        }
        Lockchaos::Real => {
            std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
            let _ = std::fs::remove_file(&binary);
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_lockchaos"), &binary).unwrap();
            (99, 99)
        }
    };
    executable(&dir.join(".bin/date"), "#!/bin/sh\necho 2025-06-01\n");
    executable(&dir.join(".github/scripts/keep-night.sh"), &std::fs::read_to_string(root().join(".github/scripts/keep-night.sh")).unwrap());
    let path = format!("{}:{}", dir.join(".bin").display(), std::env::var("PATH").unwrap());

    let mut outputs: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut job = MergeJob { steps: vec![], outputs: HashMap::new(), calls: vec![], failed: false, night: String::new() };
    for (n, step) in job_steps(&text, "merge").into_iter().enumerate() {
        if !step.uses.is_empty() || step.run.starts_with("cargo ") {
            continue;
        }
        let runs = match step.if_.as_str() {
            "" => !job.failed,
            "always()" => true,
            other => panic!("the simulation does not know `if: {other}`"),
        };
        if !runs {
            job.steps.push((step.name, None, String::new()));
            continue;
        }
        let (script, output) = (dir.join(format!(".step-{n}.sh")), dir.join(format!(".output-{n}")));
        std::fs::write(&script, expand(&step.run, run_id, &outputs)).unwrap();
        std::fs::write(&output, "").unwrap();
        let out = Command::new("bash")
            .arg("-e")
            .arg(&script)
            .current_dir(dir)
            .envs(step.env.iter().map(|(k, v)| (k.clone(), expand(v, run_id, &outputs))))
            .env("PATH", &path)
            .env("GITHUB_OUTPUT", &output)
            // A runner says CI=true to every step.
            .env("CI", "true")
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .env("FAKE_CALLS", &calls)
            .env("FAKE_MERGE_STATUS", merge_status.to_string())
            .env("FAKE_HISTORY_STATUS", history_status.to_string())
            .env_remove("KEEP_NIGHTS")
            .output()
            .unwrap();
        let set = std::fs::read_to_string(&output).unwrap();
        let set = set.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string()));
        outputs.entry(step.id.clone()).or_default().extend(set);
        job.failed |= !out.status.success();
        job.steps.push((
            step.name,
            out.status.code(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        ));
    }
    job.calls = std::fs::read_to_string(&calls).unwrap_or_default().lines().map(String::from).collect();
    job.night = outputs["night"]["name"].clone();
    job.outputs = outputs;
    job
}
