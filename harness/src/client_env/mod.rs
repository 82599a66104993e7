//! A client program's environment: what the program needs beyond the node image (Debian
//! packages, pip requirements, a compiled binary), built once into an image derived from the
//! node image, named by a hash of everything that goes into it, and reused by every run after.
//! A scenario in, an image tag (or the node image) out: `ensure`.
//!
//! spec.rs reads the `[client]` fields, inputs.rs hashes and packs the sources, builder.rs runs
//! the build in a container and commits it, images.rs lists and prunes what is cached. Runs
//! never reach a network beyond their own; only the build does (builder.rs says how).

mod builder;
mod images;
mod inputs;
pub mod spec;

pub use builder::{OUT, PYTHON_PACKAGES};
pub use images::{list, prune, CachedEnv};
pub use spec::{EnvSpec, Stage};

use crate::node_image;
use anyhow::Context;
use bollard::Docker;
use std::path::PathBuf;

/// Where a client's container holds the project: its `clients/` is mounted here, read-only,
/// and the program runs from here, in a run as in a build.
pub const PROJECT_MOUNT: &str = "/lockchaos/project";
/// Environments are tagged `lockchaos-client-env:<first 16 hex of the hash>`.
pub const REPOSITORY: &str = "lockchaos-client-env";
/// The full hash of an environment's inputs.
pub const INPUTS_LABEL: &str = "lockchaos.client_env.inputs";
/// What is in it, one line (`EnvSpec::summary`).
pub const SUMMARY_LABEL: &str = "lockchaos.client_env.summary";
/// The scenario whose run built it.
pub const SCENARIO_LABEL: &str = "lockchaos.client_env.scenario";

/// An environment's image: its tag and the hash it is named by.
#[derive(Clone, Debug, PartialEq)]
pub struct EnvImage {
    pub tag: String,
    pub hash: String,
}

impl EnvImage {
    fn of_hash(hash: String) -> Self {
        EnvImage { tag: format!("{REPOSITORY}:{}", &hash[..16]), hash }
    }

    /// Where its build's output is kept.
    pub fn log_path(&self) -> PathBuf {
        builder::logs_dir().join(format!("{}.log", &self.hash[..16]))
    }
}

/// Why a build failed, as the one line a user reads (`BuildError` adds the scenario and log).
#[derive(Debug, thiserror::Error)]
pub enum BuildFailure {
    #[error("step `{step}` failed (exit {exit_code}): {last_error}")]
    Step { step: String, exit_code: i64, last_error: String },
    #[error("step `{step}`: `{program}` is not in the environment; {}", missing_hint(program))]
    MissingTool { step: String, program: String },
    #[error("{0}")]
    Setup(String),
}

/// Where a tool usually comes from, for the missing-tool line.
fn missing_hint(program: &str) -> String {
    let package = match program.rsplit('/').next().unwrap_or(program) {
        "go" | "gofmt" => Some("golang-go"),
        "javac" | "java" | "jar" => Some("default-jdk-headless"),
        "cargo" | "rustc" => Some("cargo"),
        "mvn" => Some("maven"),
        "gradle" => Some("gradle"),
        "gcc" | "cc" => Some("gcc"),
        "g++" => Some("g++"),
        "make" => Some("make"),
        "pip" | "pip3" => Some("python3-pip"),
        _ => None,
    };
    match package {
        Some(p) => format!("add its Debian package to [client] debian (`{program}` is in {p})"),
        None => "add the Debian package that has it to [client] debian".into(),
    }
}

/// A failed build: one line naming the scenario, the step and the tool's last error line, with
/// the whole log in a file. No run starts.
#[derive(Debug, thiserror::Error)]
#[error("scenario {scenario}: building the client environment {tag}: {failure} (whole log: {})", log.display())]
pub struct BuildError {
    pub scenario: String,
    pub tag: String,
    pub failure: BuildFailure,
    pub log: PathBuf,
}

/// Whether `ensure` found the environment or built it.
#[derive(Clone, Debug, PartialEq)]
pub enum Ensured {
    /// The scenario needs nothing beyond the node image.
    NodeImage,
    /// Its last stage was cached.
    Cached(EnvImage),
    /// `stages` were built (the packages may have been cached, the build not).
    Built { image: EnvImage, stages: Vec<Stage>, secs: f64 },
}

impl Ensured {
    /// run.json's `client_env`: the image, and the stages this run built (none: all cached).
    pub fn record(&self) -> serde_json::Value {
        match self {
            Ensured::NodeImage => serde_json::json!({"image": node_image::IMAGE}),
            Ensured::Cached(image) => serde_json::json!({"image": image.tag, "built": []}),
            Ensured::Built { image, stages, secs } => serde_json::json!({
                "image": image.tag,
                "built": stages.iter().map(|s| s.name()).collect::<Vec<_>>(),
                "build_secs": (secs * 10.0).round() / 10.0,
            }),
        }
    }

    /// The image its clients run in.
    pub fn image(&self) -> &str {
        match self {
            Ensured::NodeImage => node_image::IMAGE,
            Ensured::Cached(image) | Ensured::Built { image, .. } => &image.tag,
        }
    }
}

/// The environment `spec` (of the scenario `scenario`), each stage built if it is not cached
/// (the node image must be up to date already: the environment derives from it); the node
/// image for none. Build output lines go to `progress`.
pub async fn ensure(docker: &Docker, spec: Option<EnvSpec>, scenario: &str, progress: &(dyn Fn(&str) + Sync)) -> anyhow::Result<Ensured> {
    let Some(spec) = spec else { return Ok(Ensured::NodeImage) };
    let start = std::time::Instant::now();
    let mut base = (node_image::IMAGE.to_string(), node_image::inputs_hash());
    let mut built = vec![];
    let mut last = None;
    for stage in spec.stages() {
        let hash = inputs::hash(&spec, stage, &base.1, &builder::recipe(&spec, stage))
            .with_context(|| format!("scenario {scenario}: the client environment's {} stage", stage.name()))?;
        let image = EnvImage::of_hash(hash);
        let job = builder::StageBuild { spec: &spec, stage, base: &base.0, image: &image, scenario };
        if ensure_stage(docker, &job, progress).await? {
            built.push(stage);
        }
        base = (image.tag.clone(), image.hash.clone());
        last = Some(image);
    }
    let image = last.expect("an environment has a stage");
    Ok(match built.is_empty() {
        true => Ensured::Cached(image),
        false => Ensured::Built { image, stages: built, secs: start.elapsed().as_secs_f64() },
    })
}

/// Builds one stage unless it is cached; true when it was built.
async fn ensure_stage(docker: &Docker, job: &builder::StageBuild<'_>, progress: &(dyn Fn(&str) + Sync)) -> anyhow::Result<bool> {
    let image = job.image;
    if images::is_built(docker, image).await? {
        return Ok(false);
    }
    // Runs started together (a matrix with --jobs) build each stage once: the others wait here,
    // then find it built.
    let logs = builder::logs_dir();
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    progress(&format!("waiting for another build of {}", image.tag));
    let lock_path = logs.join(format!("{}.lock", &image.hash[..16]));
    let _lock = tokio::task::spawn_blocking(move || node_image::lock_file(&lock_path)).await??;
    if images::is_built(docker, image).await? {
        return Ok(false);
    }
    let log_path = image.log_path();
    let mut log = std::fs::File::create(&log_path).with_context(|| format!("cannot create {}", log_path.display()))?;
    progress(&format!("building {} ({} stage: {})", image.tag, job.stage.name(), job.spec.up_to(job.stage).summary()));
    builder::build(docker, job, &mut log, progress).await.map_err(|failure| BuildError {
        scenario: job.scenario.to_string(),
        tag: image.tag.clone(),
        failure,
        log: log_path.clone(),
    })?;
    Ok(true)
}
