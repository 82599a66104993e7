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
    let mut all = Vec::new();
    for (_, text) in INPUTS {
        all.extend_from_slice(text.as_bytes());
    }
    sha256_hex(&all)
}

/// An exclusive lock held for the duration of a build, released when dropped.
fn lock_builds() -> Result<nix::fcntl::Flock<std::fs::File>> {
    let path = std::env::temp_dir().join("lockchaos-node-image-build.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
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
    let mut tar = Vec::new();
    for (name, text) in INPUTS {
        tar_append(&mut tar, name, text.as_bytes());
    }
    tar.resize(tar.len() + 1024, 0); // end-of-archive marker
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

/// Appends one regular file to a ustar archive (the daemon wants the build context as tar).
fn tar_append(tar: &mut Vec<u8>, name: &str, data: &[u8]) {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    let octal = |h: &mut [u8; 512], at: usize, width: usize, v: u64| {
        let s = format!("{v:0w$o}\0", w = width - 1);
        h[at..at + width].copy_from_slice(s.as_bytes());
    };
    octal(&mut h, 100, 8, 0o644); // mode
    octal(&mut h, 108, 8, 0); // uid
    octal(&mut h, 116, 8, 0); // gid
    octal(&mut h, 124, 12, data.len() as u64); // size
    octal(&mut h, 136, 12, 0); // mtime
    h[148..156].fill(b' '); // checksum is computed with its own field as spaces
    h[156] = b'0'; // regular file
    h[257..265].copy_from_slice(b"ustar\x0000");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    tar.extend_from_slice(&h);
    tar.extend_from_slice(data);
    tar.resize(tar.len().next_multiple_of(512), 0);
}

/// SHA-256 (FIPS 180-4), std only: the label must match `sha256sum` in build-offline.sh.
fn sha256_hex(data: &[u8]) -> String {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
        0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
        0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
        0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
        0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
        0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ];
    let mut h: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh.wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            (hh, g, f, e, d, c, b, a) = (g, f, e, d.wrapping_add(t1), c, b, a, t1.wrapping_add(t2));
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

#[cfg(test)]
fn inputs_dir_hash(dir: &std::path::Path) -> Result<String> {
    let mut all = Vec::new();
    for (name, _) in INPUTS {
        all.extend(std::fs::read(dir.join(name)).with_context(|| format!("reading {name}"))?);
    }
    Ok(sha256_hex(&all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_known_vectors() {
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        // two blocks (56-byte message forces an extra padding block)
        assert_eq!(
            sha256_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }

    #[test]
    fn inputs_hash_is_stable_and_matches_the_files() {
        let h = inputs_hash();
        assert_eq!(h, inputs_hash());
        assert_eq!(h.len(), 64);
        assert!(h.bytes().all(|b| b.is_ascii_hexdigit()));
        // Same as what build-offline.sh computes from the checked-out files.
        let docker_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docker");
        assert_eq!(h, inputs_dir_hash(&docker_dir).unwrap());
    }

    #[test]
    fn tar_entry_is_well_formed() {
        let mut tar = Vec::new();
        tar_append(&mut tar, "a.txt", b"hello");
        assert_eq!(tar.len(), 1024);
        assert_eq!(&tar[257..263], b"ustar\0");
        assert_eq!(&tar[124..136], b"00000000005\0");
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
