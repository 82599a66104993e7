//! The node image: one Debian bookworm image with every backend (Redis, etcd, PostgreSQL,
//! PgBouncer) plus the fault tools (libfaketime, iptables, iproute2, procps).
//!
//! The build inputs under `docker/` are embedded in the binary, so `lockchaos` can build the
//! image from anywhere. The image carries the label [`INPUTS_LABEL`] = [`inputs_hash`]; an
//! image whose label matches is up to date and is never rebuilt (unless forced). Nothing is
//! ever pulled: the Dockerfile is used only when its base image is already present locally,
//! otherwise `docker/build-offline.sh` (mmdebstrap + `docker import`) builds it.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use futures_util::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// The image every node (and worker) container runs.
pub const IMAGE: &str = "lockchaos-node:bookworm";
/// Base image of `docker/Dockerfile`; used only if already present locally.
pub const BASE_IMAGE: &str = "debian:bookworm";
/// Image label holding the hash of the build inputs.
pub const INPUTS_LABEL: &str = "lockchaos.image.inputs";
/// In the image: symlink to the arch-specific libfaketime (for LD_PRELOAD); also in the
/// image env as `LOCKCHAOS_LIBFAKETIME`.
pub const LIBFAKETIME: &str = "/opt/lockchaos/libfaketime.so.1";
/// In the image: directory holding the jemalloc stand-in; put it on LD_LIBRARY_PATH of
/// redis-server/redis-sentinel whenever libfaketime is preloaded, or Redis hangs at start.
/// Also in the image env as `LOCKCHAOS_JEMALLOC_STUB_DIR`.
pub const JEMALLOC_STUB_DIR: &str = "/opt/lockchaos/jemalloc-stub";

/// One file of the image (the jemalloc stand-in, for a host that lacks it): read from a
/// container created from the image and never started, removed at once. The container carries
/// the run and controller labels, so `lockchaos clean` removes it if this process dies first.
pub async fn read_file(docker: &bollard::Docker, path: &str, labels: std::collections::HashMap<String, String>) -> Result<Vec<u8>> {
    use bollard::models::ContainerCreateBody;
    use bollard::query_parameters::{DownloadFromContainerOptions, RemoveContainerOptions};
    let body =
        ContainerCreateBody { image: Some(IMAGE.into()), cmd: Some(vec!["true".into()]), labels: Some(labels), ..Default::default() };
    let created = docker.create_container(None, body).await.with_context(|| format!("cannot create a container of {IMAGE}"))?;
    let mut stream = docker.download_from_container(&created.id, Some(DownloadFromContainerOptions { path: path.into() }));
    let mut archive = vec![];
    let mut failed = None;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => archive.extend_from_slice(&bytes),
            Err(e) => failed = Some(e),
        }
    }
    let _ = docker.remove_container(&created.id, Some(RemoveContainerOptions { force: true, ..Default::default() })).await;
    if let Some(e) = failed {
        return Err(e).with_context(|| format!("cannot read {path} from {IMAGE}"));
    }
    let mut tar = tar::Archive::new(archive.as_slice());
    let mut entry = tar.entries()?.next().with_context(|| format!("{path} is not in {IMAGE}"))??;
    let mut bytes = vec![];
    std::io::Read::read_to_end(&mut entry, &mut bytes)?;
    Ok(bytes)
}

/// The build inputs, in the order they are hashed (build-offline.sh hashes the same files
/// in the same order, so a hand-built image gets the same label).
const INPUTS: [(&str, &str); 4] = [
    ("build-offline.sh", include_str!("../../docker/build-offline.sh")),
    ("Dockerfile", include_str!("../../docker/Dockerfile")),
    ("jemalloc-stub.c", include_str!("../../docker/jemalloc-stub.c")),
    ("packages.txt", include_str!("../../docker/packages.txt")),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum BuildMethod {
    /// Dockerfile if `debian:bookworm` is present locally, else offline. Never pulls.
    #[default]
    Auto,
    /// mmdebstrap + docker import (needs mmdebstrap, gcc, the docker CLI, Debian's mirror).
    Offline,
    /// docker/Dockerfile through the daemon (needs `debian:bookworm` locally or a registry).
    Dockerfile,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EnsureOutcome {
    AlreadyPresent,
    Built { secs: f64 },
}

/// Hex sha256 of the embedded build inputs, concatenated in order
/// (= `cat build-offline.sh Dockerfile jemalloc-stub.c packages.txt | sha256sum`).
pub fn inputs_hash() -> String {
    sha256_hex(INPUTS.iter().map(|(_, text)| text.as_bytes()))
}

/// Lowercase hex SHA-256 of `parts` concatenated, as `sha256sum` prints it (the label must
/// match what build-offline.sh computes).
fn sha256_hex<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// An exclusive lock held for the duration of a build, released when dropped.
fn lock_builds() -> Result<nix::fcntl::Flock<std::fs::File>> {
    lock_file(&std::env::temp_dir().join("lockchaos-node-image-build.lock"))
}

/// An exclusive lock on `path` (created if missing), released when dropped: one build of an
/// image at a time among this machine's lockchaos processes.
pub fn lock_file(path: &std::path::Path) -> Result<nix::fcntl::Flock<std::fs::File>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| anyhow::anyhow!("cannot lock {}: {e}", path.display()))
}

/// Where the last build's full output is kept (overwritten by each build).
pub fn build_log_path() -> PathBuf {
    std::env::temp_dir().join("lockchaos-node-image-build.log")
}

/// Make sure [`IMAGE`] exists and matches the embedded inputs; build it otherwise (or when
/// `force`). Build output lines go to `progress` (shortened) and to [`build_log_path`].
pub async fn ensure_image(
    docker: &bollard::Docker,
    method: BuildMethod,
    force: bool,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<EnsureOutcome> {
    let want = inputs_hash();
    let up_to_date = |img: &Option<(String, Option<String>)>| img.as_ref().and_then(|(_, label)| label.as_deref()) == Some(want.as_str());
    if !force && up_to_date(&inspect(docker, IMAGE).await?) {
        return Ok(EnsureOutcome::AlreadyPresent);
    }
    // Runs started together (parallel tests) must not build twice: the others wait here and
    // then find the image up to date.
    progress(&format!("waiting for another build of {IMAGE}"));
    let _build_lock = tokio::task::spawn_blocking(lock_builds).await??;
    let old = inspect(docker, IMAGE).await?;
    if !force && up_to_date(&old) {
        return Ok(EnsureOutcome::AlreadyPresent);
    }
    let method = match method {
        BuildMethod::Auto if inspect(docker, BASE_IMAGE).await?.is_some() => BuildMethod::Dockerfile,
        BuildMethod::Auto => BuildMethod::Offline,
        m => m,
    };
    let log_path = build_log_path();
    let mut log = std::fs::File::create(&log_path).with_context(|| format!("cannot create build log {}", log_path.display()))?;
    let start = Instant::now();
    let built = match method {
        BuildMethod::Offline => build_offline(progress, &mut log).await,
        _ => build_dockerfile(docker, &want, progress, &mut log).await,
    };
    if let Err(e) = built {
        let how = if method == BuildMethod::Offline { "docker/build-offline.sh" } else { "docker/Dockerfile" };
        bail!("building {IMAGE} with {how} failed: {e:#} (full log: {})", log_path.display());
    }
    // The label is what makes the next call a no-op: check it really landed.
    let new = inspect(docker, IMAGE).await?;
    let got = new.as_ref().and_then(|(_, label)| label.as_deref());
    if got != Some(want.as_str()) {
        bail!("built {IMAGE} but its {INPUTS_LABEL} label is {got:?}, expected {want} (full log: {})", log_path.display());
    }
    // The replaced image is now untagged: remove it rather than leave ~300 MB dangling
    // (fails harmlessly if a container still uses it).
    if let (Some((old_id, _)), Some((new_id, _))) = (&old, &new) {
        if old_id != new_id {
            let _ = docker.remove_image(old_id, None::<bollard::query_parameters::RemoveImageOptions>, None).await;
        }
    }
    Ok(EnsureOutcome::Built { secs: start.elapsed().as_secs_f64() })
}

/// Whether the node image is built and matches the embedded inputs; `None` when absent.
pub async fn is_up_to_date(docker: &bollard::Docker) -> Result<Option<bool>> {
    let want = inputs_hash();
    Ok(inspect(docker, IMAGE).await?.map(|(_, label)| label.as_deref() == Some(want.as_str())))
}

/// `(id, inputs label)` of `image`, `None` if there is no such image.
async fn inspect(docker: &bollard::Docker, image: &str) -> Result<Option<(String, Option<String>)>> {
    match docker.inspect_image(image).await {
        Ok(i) => {
            let label = i.config.and_then(|c| c.labels).and_then(|mut l| l.remove(INPUTS_LABEL));
            Ok(Some((i.id.unwrap_or_default(), label)))
        }
        Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => Ok(None),
        Err(e) => Err(anyhow!(e).context(format!("inspecting image {image}"))),
    }
}

/// Passes `line` to `progress` and appends it to the log.
fn note(progress: &(dyn Fn(&str) + Sync), log: &mut std::fs::File, line: &str) {
    use std::io::Write;
    let _ = writeln!(log, "{line}");
    let short = line.trim();
    if !short.is_empty() {
        progress(&short.chars().take(100).collect::<String>());
    }
}

/// Temp dir with the embedded inputs; removed on drop (also on error).
struct InputsDir(PathBuf);

impl InputsDir {
    fn create() -> Result<Self> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos();
        let dir = std::env::temp_dir().join(format!("lockchaos-node-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let this = InputsDir(dir);
        for (name, text) in INPUTS {
            std::fs::write(this.0.join(name), text)?;
        }
        Ok(this)
    }
}

impl Drop for InputsDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn build_offline(progress: &(dyn Fn(&str) + Sync), log: &mut std::fs::File) -> Result<()> {
    let dir = InputsDir::create()?;
    let script = dir.0.join("build-offline.sh");
    let mut child = tokio::process::Command::new("bash")
        .arg(&script)
        .arg(IMAGE)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("cannot run bash")?;
    // Merge stdout and stderr (mmdebstrap reports on stderr) into one stream of lines.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    forward_lines(child.stdout.take().expect("piped"), tx.clone());
    forward_lines(child.stderr.take().expect("piped"), tx);
    // For the error: the script's own one-line diagnosis if it gave one, else the last line.
    let (mut last, mut diagnosis) = (String::new(), None);
    while let Some(line) = rx.recv().await {
        note(progress, log, &line);
        if let Some(msg) = line.strip_prefix("build-offline.sh: ") {
            diagnosis = Some(msg.to_string());
        } else if !line.trim().is_empty() {
            last = line;
        }
    }
    let status = child.wait().await?;
    if !status.success() {
        bail!("{}", diagnosis.unwrap_or_else(|| format!("{status}: {}", last.trim())));
    }
    Ok(())
}

fn forward_lines(pipe: impl AsyncRead + Unpin + Send + 'static, tx: tokio::sync::mpsc::UnboundedSender<String>) {
    tokio::spawn(async move {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        while matches!(reader.read_until(b'\n', &mut buf).await, Ok(n) if n > 0) {
            // Progress meters redraw with '\r': keep the last part only.
            let text = String::from_utf8_lossy(&buf);
            let line = text.trim_end_matches(['\n', '\r']).rsplit('\r').next().unwrap_or("");
            if tx.send(line.to_string()).is_err() {
                break;
            }
            buf.clear();
        }
    });
}

async fn build_dockerfile(docker: &bollard::Docker, hash: &str, progress: &(dyn Fn(&str) + Sync), log: &mut std::fs::File) -> Result<()> {
    let tar = build_context()?;
    let options = bollard::query_parameters::BuildImageOptions {
        t: Some(IMAGE.to_string()),
        labels: Some([(INPUTS_LABEL.to_string(), hash.to_string())].into()),
        pull: None, // never pull: Auto picks this method only when the base image is local
        rm: true,
        forcerm: true,
        ..Default::default()
    };
    let mut stream = docker.build_image(options, None, Some(bollard::body_full(tar.into())));
    while let Some(item) = stream.next().await {
        let info = item.context("docker build")?;
        for line in info.stream.iter().chain(info.status.iter()).flat_map(|s| s.lines()) {
            note(progress, log, line);
        }
    }
    Ok(())
}

/// The Dockerfile build context: the embedded inputs as a tar archive (the daemon wants
/// tar). Entries are plain files, mode 644, owner 0 and mtime 0, so the same inputs give the
/// same bytes.
fn build_context() -> Result<Vec<u8>> {
    let mut tar = tar::Builder::new(Vec::new());
    for (name, text) in INPUTS {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_size(text.len() as u64);
        tar.append_data(&mut header, name, text.as_bytes()).with_context(|| format!("adding {name} to the build context"))?;
    }
    tar.into_inner().context("finishing the build context")
}

#[cfg(test)]
fn inputs_dir_hash(dir: &std::path::Path) -> Result<String> {
    let mut files = Vec::new();
    for (name, _) in INPUTS {
        files.push(std::fs::read(dir.join(name)).with_context(|| format!("reading {name}"))?);
    }
    Ok(sha256_hex(files.iter().map(Vec::as_slice)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_known_vectors() {
        let one = |data: &[u8]| sha256_hex([data]);
        assert_eq!(one(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(one(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        // two blocks (56-byte message forces an extra padding block)
        assert_eq!(
            one(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        // parts hash as their concatenation, as `cat a b | sha256sum` does
        assert_eq!(sha256_hex([b"a".as_slice(), b"", b"bc"]), one(b"abc"));
    }

    /// The image label must be what build-offline.sh computes, or a hand-built image would look
    /// stale (and an image built by one version of the hashing stale to another).
    #[test]
    fn inputs_hash_equals_sha256sum_of_the_concatenated_files() {
        let h = inputs_hash();
        assert_eq!(h.len(), 64);
        assert!(h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
        // Same as what build-offline.sh computes from the checked-out files.
        let docker_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docker");
        assert_eq!(h, inputs_dir_hash(&docker_dir).unwrap());
        // And the same as sha256sum itself prints, where it exists (coreutils).
        let order: Vec<_> = INPUTS.iter().map(|(name, _)| docker_dir.join(name)).collect();
        let script = "cat \"$@\" | sha256sum | cut -d' ' -f1";
        match std::process::Command::new("sh").arg("-c").arg(script).arg("sh").args(&order).output() {
            Ok(out) if out.status.success() && !out.stdout.is_empty() => {
                assert_eq!(h, String::from_utf8(out.stdout).unwrap().trim());
            }
            other => eprint_line!("sha256sum not run ({other:?}); compared with the files only"),
        }
    }

    #[test]
    fn build_context_is_a_tar_of_the_inputs() {
        let bytes = build_context().unwrap();
        assert_eq!(bytes.len() % 512, 0);
        assert_eq!(bytes, build_context().unwrap(), "same inputs, same bytes");
        let mut archive = tar::Archive::new(bytes.as_slice());
        let mut got = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            assert_eq!(entry.header().entry_type(), tar::EntryType::Regular);
            assert_eq!(entry.header().mode().unwrap(), 0o644);
            let name = entry.path().unwrap().to_str().unwrap().to_string();
            let mut text = String::new();
            std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
            got.push((name, text));
        }
        let want: Vec<_> = INPUTS.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
        assert_eq!(got, want);
    }

    /// Builds (if needed) and then checks that a second call is a no-op.
    /// `cargo test -p harness node_image -- --ignored` (needs Docker; first build ~1 min).
    #[tokio::test]
    #[ignore]
    async fn ensure_image_twice() {
        let docker = bollard::Docker::connect_with_unix(
            "/var/run/docker.sock",
            120,
            &bollard::ClientVersion { major_version: 1, minor_version: 41 },
        )
        .unwrap()
        .negotiate_version()
        .await
        .unwrap();
        ensure_image(&docker, BuildMethod::Auto, false, &|_| {}).await.unwrap();
        let t = Instant::now();
        let second = ensure_image(&docker, BuildMethod::Auto, false, &|_| {}).await.unwrap();
        assert_eq!(second, EnsureOutcome::AlreadyPresent);
        assert!(t.elapsed().as_secs_f64() < 2.0);
    }
}
