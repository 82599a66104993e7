//! Building a stage of an environment: a container of the image below it (the node image, or
//! the packages stage) on Docker's default network (the only time a client's code has a
//! network beyond its run's), the steps run in it one by one, each named so that a failure says
//! which, and the result committed as the stage's image.
//!
//! The builder reaches PyPI and Debian's mirror as this machine does: the host's proxy variables
//! are passed on, and the host's CA bundle is mounted beside (not over) the image's own, so a
//! proxy that re-signs TLS is trusted by pip and cargo as it is on the host.

use super::spec::{EnvSpec, Stage};
use super::{BuildFailure, EnvImage};
use crate::containers::{controller_id, CONTROLLER_LABEL, RUN_LABEL};
use anyhow::Context;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerConfig, ContainerCreateBody, HostConfig};
use bollard::query_parameters::{CommitContainerOptions, RemoveContainerOptions, UploadToContainerOptions};
use bollard::Docker;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the sources are copied in the builder (the layout a run mounts them in), removed
/// before the commit: at run time the project's own `clients/` is mounted there.
const PROJECT: &str = super::PROJECT_MOUNT;
/// What `build` writes and the environment keeps.
pub const OUT: &str = "/out";
/// Where pip installs the requirements; on PYTHONPATH in the environment, so they come before
/// the node image's Debian packages of the same name.
pub const PYTHON_PACKAGES: &str = "/opt/lockchaos/python";
const HOST_CA: &str = "/lockchaos/host-ca.crt";
const HOST_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
const PROXY_VARIABLES: [&str; 9] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_TRUSTED_HOST",
];
/// A build is a compiler or pip: more room than a run's worker.
const MEMORY: i64 = 4 << 30;
const PIDS: i64 = 4096;

/// One command of the build, run as root in the builder.
struct Step {
    name: &'static str,
    cmd: Vec<String>,
    dir: &'static str,
    env: Vec<String>,
}

/// What a stage runs, every step's command in order: part of the stage's name, so a change to
/// how lockchaos builds (not only to what the scenario asks for) builds it again.
pub fn recipe(spec: &EnvSpec, stage: Stage) -> Vec<String> {
    steps(spec, stage).into_iter().map(|s| format!("{}\0{}\0{}\0{}", s.name, s.dir, s.env.join("\0"), s.cmd.join("\0"))).collect()
}

/// The steps of `stage`, in order.
fn steps(spec: &EnvSpec, stage: Stage) -> Vec<Step> {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut packages = spec.debian.clone();
    let wants_pip = !spec.python.is_empty() || spec.requirements.is_some();
    if wants_pip && !packages.iter().any(|p| p == "python3-pip") {
        packages.push("python3-pip".into());
    }
    let mut steps = vec![];
    if stage == Stage::Build {
        let build = spec.build.clone().unwrap_or_default();
        steps.push(Step { name: "build", cmd: build, dir: PROJECT, env: vec![] });
        // The program runs as nobody: everything the build made is readable. The copy of the
        // sources goes, so that a run sees only its own mount, and so do the tools' caches
        // (Go's, cargo's registry, Maven's), which only the build needed.
        let finish =
            format!("rm -rf {PROJECT} /root/.cache /root/.cargo /root/go /root/.m2 /tmp/* && mkdir -p {PROJECT} && chmod -R a+rX {OUT}");
        steps.push(Step { name: "finish", cmd: strings(&["sh", "-c", &finish]), dir: "/", env: vec![] });
        return steps;
    }
    if !spec.debian.is_empty() {
        // The node image leaves LLVM and z3 out of its packages (PostgreSQL's JIT is all that
        // uses them there), and its dpkg keeps leaving them out; a toolchain links them
        // (rustc does): here they come back, the packages already installed without them too.
        let restore = "sed -i -e '/libLLVM/d' -e '/libz3/d' /etc/dpkg/dpkg.cfg.d/*";
        steps.push(Step { name: "dpkg excludes", cmd: strings(&["sh", "-c", restore]), dir: "/", env: vec![] });
    }
    if !packages.is_empty() {
        steps.push(Step { name: "apt-get update", cmd: strings(&["apt-get", "update"]), dir: "/", env: vec![] });
        let mut install = strings(&["apt-get", "install", "-y", "--no-install-recommends"]);
        install.extend(packages);
        steps.push(Step { name: "apt-get install", cmd: install, dir: "/", env: vec!["DEBIAN_FRONTEND=noninteractive".into()] });
        if !spec.debian.is_empty() {
            let reinstall = "pkgs=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\n' 'libz3-*' 'libllvm*' | awk '/^ii/ {print $2}'); \
                             [ -z \"$pkgs\" ] || apt-get install -y --reinstall $pkgs";
            let env = vec!["DEBIAN_FRONTEND=noninteractive".into()];
            steps.push(Step { name: "apt-get reinstall LLVM", cmd: strings(&["sh", "-c", reinstall]), dir: "/", env });
        }
    }
    if wants_pip {
        let mut pip = strings(&[
            "python3",
            "-m",
            "pip",
            "install",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--root-user-action=ignore",
            "--break-system-packages",
            "--target",
            PYTHON_PACKAGES,
        ]);
        pip.extend(spec.python.iter().cloned());
        if let Some(r) = &spec.requirements {
            pip.extend(["-r".to_string(), r.to_string_lossy().into_owned()]);
        }
        steps.push(Step { name: "pip install", cmd: pip, dir: PROJECT, env: vec![] });
    }
    let finish = format!(
        "rm -rf {PROJECT} /var/lib/apt/lists/* /root/.cache && mkdir -p {PROJECT} {PYTHON_PACKAGES} && chmod -R a+rX {PYTHON_PACKAGES}"
    );
    steps.push(Step { name: "finish", cmd: strings(&["sh", "-c", &finish]), dir: "/", env: vec![] });
    steps
}

/// What a stage is built on and as.
pub struct StageBuild<'a> {
    pub spec: &'a EnvSpec,
    pub stage: Stage,
    /// The image below: the node image, or the packages stage's.
    pub base: &'a str,
    pub image: &'a EnvImage,
    pub scenario: &'a str,
}

/// Builds the stage and commits it as its image. Every line of output goes to `log` and,
/// shortened, to `progress`.
pub async fn build(
    docker: &Docker,
    job: &StageBuild<'_>,
    log: &mut std::fs::File,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(), BuildFailure> {
    let (spec, image) = (job.spec, job.image);
    let container = start(docker, job.base, &image.hash).await.map_err(|e| BuildFailure::Setup(format!("{e:#}")))?;
    let built = async {
        let sources = super::inputs::archive(spec, job.stage).map_err(|e| BuildFailure::Setup(format!("{e:#}")))?;
        exec(
            docker,
            &container,
            &Step { name: "setup", cmd: vec!["mkdir".into(), "-p".into(), PROJECT.into(), OUT.into()], dir: "/", env: vec![] },
            log,
            progress,
        )
        .await?;
        let options = UploadToContainerOptions { path: PROJECT.into(), ..Default::default() };
        docker
            .upload_to_container(&container, Some(options), bollard::body_full(sources.into()))
            .await
            .map_err(|e| BuildFailure::Setup(format!("cannot copy the sources into the builder: {e}")))?;
        for step in steps(spec, job.stage) {
            exec(docker, &container, &step, log, progress).await?;
        }
        commit(docker, &container, job).await.map_err(|e| BuildFailure::Setup(format!("{e:#}")))
    }
    .await;
    let _ = docker.remove_container(&container, Some(RemoveContainerOptions { force: true, v: true, ..Default::default() })).await;
    built
}

/// The builder: labelled as a run of its own with this process as controller, so that
/// `lockchaos clean` removes it if this process dies mid-build.
async fn start(docker: &Docker, base: &str, hash: &str) -> anyhow::Result<String> {
    let labels =
        HashMap::from([(RUN_LABEL.to_string(), format!("client-env-{}", &hash[..12])), (CONTROLLER_LABEL.to_string(), controller_id())]);
    let mut env: Vec<String> =
        PROXY_VARIABLES.iter().filter_map(|v| std::env::var(v).ok().filter(|x| !x.is_empty()).map(|x| format!("{v}={x}"))).collect();
    let mut binds = vec![];
    if Path::new(HOST_CA_BUNDLE).is_file() {
        binds.push(format!("{HOST_CA_BUNDLE}:{HOST_CA}:ro"));
        for v in ["PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CARGO_HTTP_CAINFO", "GIT_SSL_CAINFO"] {
            env.push(format!("{v}={HOST_CA}"));
        }
    }
    let body = ContainerCreateBody {
        image: Some(base.into()),
        cmd: Some(vec!["sleep".into(), "infinity".into()]),
        env: Some(env),
        labels: Some(labels),
        host_config: Some(HostConfig {
            binds: Some(binds),
            init: Some(true),
            memory: Some(MEMORY),
            memory_swap: Some(MEMORY),
            pids_limit: Some(PIDS),
            network_mode: Some("bridge".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let created = docker.create_container(None, body).await.context("cannot create the environment's builder container")?;
    docker.start_container(&created.id, None).await.context("cannot start the environment's builder container")?;
    Ok(created.id)
}

/// Runs one step to its end; its output goes to the log line by line.
async fn exec(
    docker: &Docker,
    container: &str,
    step: &Step,
    log: &mut std::fs::File,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(), BuildFailure> {
    let shown = step.cmd.join(" ");
    let _ = writeln!(log, "== {}: {shown}", step.name);
    let setup = |e: bollard::errors::Error| BuildFailure::Setup(format!("cannot run step `{}` in the builder: {e}", step.name));
    let config = CreateExecOptions {
        cmd: Some(step.cmd.clone()),
        env: Some(step.env.clone()),
        working_dir: Some(step.dir.to_string()),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        ..Default::default()
    };
    let created = docker.create_exec(container, config).await.map_err(setup)?;
    let mut tail = Tail::default();
    match docker.start_exec(&created.id, None).await.map_err(setup)? {
        StartExecResults::Attached { mut output, .. } => {
            let mut partial = String::new();
            while let Some(chunk) = output.next().await {
                let Ok(chunk) = chunk else { break };
                partial.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
                while let Some(end) = partial.find(['\n', '\r']) {
                    let line: String = partial.drain(..=end).collect();
                    tail.note(line.trim_end(), log, progress);
                }
            }
            tail.note(partial.trim_end(), log, progress);
        }
        StartExecResults::Detached => {}
    }
    let code = docker.inspect_exec(&created.id).await.map_err(setup)?.exit_code.unwrap_or(-1);
    let _ = writeln!(log, "== {}: exit {code}", step.name);
    if code == 0 {
        return Ok(());
    }
    // A shell names the program it could not find: `sh: 1: go: not found`.
    let named = tail.lines.iter().rev().find_map(|l| l.strip_suffix(": not found").and_then(|l| l.rsplit(": ").next()).map(String::from));
    let program = named.or_else(|| step.cmd.first().cloned()).unwrap_or_default();
    // 127: the shell's and Docker's "no such program"; 126 with the runtime's words for it.
    let missing = code == 127
        || (code == 126 && tail.lines.iter().any(|l| l.contains("executable file not found") || l.contains("no such file or directory")));
    if missing {
        return Err(BuildFailure::MissingTool { step: step.name.into(), program });
    }
    Err(BuildFailure::Step { step: step.name.into(), exit_code: code, last_error: tail.last_error() })
}

/// The last lines of a step's output: what a failure is told by.
#[derive(Default)]
struct Tail {
    lines: std::collections::VecDeque<String>,
}

impl Tail {
    const KEPT: usize = 40;

    fn note(&mut self, line: &str, log: &mut std::fs::File, progress: &(dyn Fn(&str) + Sync)) {
        if line.trim().is_empty() {
            return;
        }
        let _ = writeln!(log, "{line}");
        progress(&line.trim().chars().take(100).collect::<String>());
        if self.lines.len() == Self::KEPT {
            self.lines.pop_front();
        }
        self.lines.push_back(line.trim().chars().take(300).collect());
    }

    /// The tool's last error line: the last that says error (as pip, go, javac and apt say
    /// it), else the last line.
    fn last_error(&self) -> String {
        let says_error = |l: &&String| {
            let lower = l.to_lowercase();
            lower.contains("error") || lower.starts_with("e:") || lower.contains("cannot find") || lower.contains("not found")
        };
        self.lines.iter().rev().find(says_error).or(self.lines.back()).cloned().unwrap_or_else(|| "(no output)".into())
    }
}

/// The builder as the stage's image: the settings of the image below (not the builder's proxy
/// variables), with the Python packages on PYTHONPATH, labelled with its inputs.
async fn commit(docker: &Docker, container: &str, job: &StageBuild<'_>) -> anyhow::Result<()> {
    let (spec, image) = (job.spec.up_to(job.stage), job.image);
    let base = docker.inspect_image(job.base).await.with_context(|| format!("inspecting {}", job.base))?;
    let mut env = base.config.and_then(|c| c.env).unwrap_or_default();
    let python_path = format!("PYTHONPATH={PYTHON_PACKAGES}");
    if job.stage == Stage::Packages && (!spec.python.is_empty() || spec.requirements.is_some()) && !env.contains(&python_path) {
        env.push(python_path);
    }
    let labels = HashMap::from([
        (super::INPUTS_LABEL.to_string(), image.hash.clone()),
        (super::SUMMARY_LABEL.to_string(), spec.summary()),
        (super::SCENARIO_LABEL.to_string(), job.scenario.to_string()),
    ]);
    let config = ContainerConfig { env: Some(env), cmd: Some(vec!["bash".into()]), labels: Some(labels), ..Default::default() };
    let (repo, tag) = image.tag.split_once(':').expect("an environment's tag has a colon");
    let options = CommitContainerOptions {
        container: Some(container.into()),
        repo: Some(repo.into()),
        tag: Some(tag.into()),
        comment: Some(format!("lockchaos client environment: {}", spec.summary())),
        pause: true,
        ..Default::default()
    };
    docker.commit_container(options, config).await.with_context(|| format!("cannot commit the builder as {}", image.tag))?;
    Ok(())
}

/// Where a build's log is kept: `$XDG_CACHE_HOME/lockchaos/client-envs`, else `~/.cache/...`,
/// else the temp dir.
pub fn logs_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("lockchaos").join("client-envs")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> EnvSpec {
        EnvSpec { debian: vec![], python: vec![], requirements: None, build: None, sources: vec![], project: "/p".into() }
    }

    #[test]
    fn python_brings_pip_and_a_build_comes_last() {
        let mut s = spec();
        s.python = vec!["redis==8.2.0".into()];
        s.build = Some(vec!["true".into()]);
        let names: Vec<_> = steps(&s, Stage::Packages).iter().map(|s| s.name).collect();
        assert_eq!(names, ["apt-get update", "apt-get install", "pip install", "finish"]);
        s.debian = vec!["cargo-web".into()];
        let names: Vec<_> = steps(&s, Stage::Packages).iter().map(|s| s.name).collect();
        assert_eq!(names, ["dpkg excludes", "apt-get update", "apt-get install", "apt-get reinstall LLVM", "pip install", "finish"]);
        s.debian = vec![];
        let names: Vec<_> = steps(&s, Stage::Build).iter().map(|s| s.name).collect();
        assert_eq!(names, ["build", "finish"]);
        let install = &steps(&s, Stage::Packages)[1].cmd;
        assert_eq!(install.last().map(String::as_str), Some("python3-pip"));
        let pip = &steps(&s, Stage::Packages)[2].cmd;
        assert_eq!(pip.last().map(String::as_str), Some("redis==8.2.0"));
    }

    #[test]
    fn a_build_alone_installs_nothing() {
        let mut s = spec();
        s.build = Some(vec!["make".into()]);
        assert_eq!(s.stages(), [Stage::Build]);
        s.debian = vec!["make".into()];
        assert_eq!(s.stages(), [Stage::Packages, Stage::Build]);
    }

    #[test]
    fn the_last_error_line_is_the_one_that_says_so() {
        let mut tail = Tail::default();
        let mut log = tempfile::tempfile().unwrap();
        for line in ["Collecting redis==99", "ERROR: No matching distribution found for redis==99", "[notice] pip is old"] {
            tail.note(line, &mut log, &|_| {});
        }
        assert_eq!(tail.last_error(), "ERROR: No matching distribution found for redis==99");
    }
}
