//! The nodes-file: the hosts a run's nodes are (n1 is the first `[[host]]`, n2 the second, …),
//! how to reach them over SSH, and where the clients' containers find them. Read once, before
//! anything starts; every error is one line naming the file, the line and the field.
//!
//! ```toml
//! [[host]]
//! address = "10.0.0.11"     # an IPv4 address or a name that resolves to one
//! user = "root"             # default root; another user needs passwordless sudo
//! port = 22                 # default 22
//! key = "keys/lockchaos"    # private key, relative to this file
//!
//! [ssh]
//! known_hosts_file = "known_hosts"  # default: ssh's own (~/.ssh/known_hosts)
//! accept_new_host_keys = false      # true: a host not yet known is added (never a changed key)
//! connect_timeout_secs = 10
//!
//! [workers]                 # optional: see `WorkerNetwork`
//! docker_network = "staging"
//! first_address = "10.0.0.101"
//! ```

use super::ssh_args::{check_address, check_ssh_path, check_user};
use crate::toml_lines::{key_at_offset, line_of_field, line_of_offset};
use checker::bounded_read::{self, SizeLimit};
use serde::Deserialize;
use std::net::{Ipv4Addr, ToSocketAddrs};
use std::path::{Path, PathBuf};

/// A nodes-file that could not be used: `file:line: field 'host[1].key': what is wrong`.
pub type NodesFileError = crate::toml_lines::FileError;

/// The largest nodes-file read: a host takes four lines, so even 150 hosts fit in a few KiB.
pub const NODES_FILE_LIMIT: SizeLimit = SizeLimit::new(1 << 20, "a nodes file");

/// The largest private key read (to see that it can be): a few KiB at most, even RSA 16384.
const KEY_LIMIT: SizeLimit = SizeLimit::new(1 << 20, "an ssh key");

/// The longest `connect_timeout_secs`: ssh takes an int, and a host that needs more than this to
/// answer is not one to run on.
const MAX_CONNECT_TIMEOUT_SECS: u64 = 3600;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Shape {
    host: Vec<HostShape>,
    #[serde(default)]
    ssh: SshShape,
    workers: Option<WorkerNetwork>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostShape {
    address: String,
    #[serde(default = "default_user")]
    user: String,
    #[serde(default = "default_port")]
    port: u16,
    key: PathBuf,
}

fn default_user() -> String {
    "root".into()
}

fn default_port() -> u16 {
    22
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SshShape {
    known_hosts_file: Option<PathBuf>,
    #[serde(default)]
    accept_new_host_keys: bool,
    #[serde(default = "default_connect_timeout")]
    connect_timeout_secs: u64,
}

impl Default for SshShape {
    fn default() -> Self {
        SshShape { known_hosts_file: None, accept_new_host_keys: false, connect_timeout_secs: default_connect_timeout() }
    }
}

fn default_connect_timeout() -> u64 {
    10
}

/// One host, as node `nK`.
#[derive(Clone, Debug)]
pub struct HostEntry {
    /// `n1`, `n2`, … in the file's order.
    pub node: String,
    /// As written in the file (what errors name).
    pub address: String,
    /// What it resolved to: what clients connect to and partitions cut.
    pub ip: Ipv4Addr,
    pub user: String,
    pub port: u16,
    /// Absolute.
    pub key: PathBuf,
}

impl HostEntry {
    /// `n1 (root@10.0.0.11:22)`: how every message names the host.
    pub fn label(&self) -> String {
        format!("{} ({}@{}:{})", self.node, self.user, self.address, self.port)
    }
}

/// How ssh checks the hosts' keys.
#[derive(Clone, Debug)]
pub struct SshOptions {
    /// Absolute; None: ssh's own.
    pub known_hosts_file: Option<PathBuf>,
    pub accept_new_host_keys: bool,
    pub connect_timeout_secs: u64,
}

/// The clients run in containers on this machine. A host sees them through this machine's NAT,
/// all from one address, unless they also join a Docker network the hosts are on: then each
/// client has an address of its own there (client-K: `first_address` + K − 1), and a partition
/// can cut one client off. Without it, faults that cut a client off are refused.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkerNetwork {
    pub docker_network: String,
    pub first_address: Ipv4Addr,
}

impl WorkerNetwork {
    /// Client K's (1-based) address on the network.
    pub fn client_ip(&self, k: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.first_address) + k - 1)
    }
}

/// A nodes-file, read and checked (keys readable, addresses resolved).
#[derive(Clone, Debug)]
pub struct NodesFile {
    pub path: PathBuf,
    pub hosts: Vec<HostEntry>,
    pub ssh: SshOptions,
    pub workers: Option<WorkerNetwork>,
}

impl NodesFile {
    pub fn load(path: &Path) -> Result<NodesFile, NodesFileError> {
        let text = bounded_read::read_to_string(path, NODES_FILE_LIMIT).map_err(|e| NodesFileError {
            file: path.to_path_buf(),
            line: None,
            field: None,
            message: e.problem.to_string(),
        })?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<NodesFile, NodesFileError> {
        let at = |field: &str, message: String| NodesFileError {
            file: path.to_path_buf(),
            line: line_of_field(text, field),
            field: Some(field.to_string()),
            message,
        };
        let shape: Shape = serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            // TOML's own errors (a number past i64) come before serde knows a field: the key
            // written where the error is names it.
            let field = if field == "." { inner.span().and_then(|s| key_at_offset(text, s.start)) } else { Some(field) };
            NodesFileError {
                file: path.to_path_buf(),
                line: inner.span().map(|s| line_of_offset(text, s.start)).or_else(|| field.as_deref().and_then(|f| line_of_field(text, f))),
                field,
                message: inner.message().trim().to_string(),
            }
        })?;
        if shape.host.is_empty() {
            return Err(at("host", "names no host: add a [[host]] table per node".into()));
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        // Absolute, so that what ssh is given starts with `/`.
        let absolute = |p: &Path| std::path::absolute(dir.join(p)).unwrap_or_else(|_| dir.join(p));
        let mut hosts = vec![];
        for (i, h) in shape.host.into_iter().enumerate() {
            let field = |name: &str| format!("host[{i}].{name}");
            check_address(&h.address).map_err(|why| at(&field("address"), why))?;
            check_user(&h.user).map_err(|why| at(&field("user"), why))?;
            let key = check_ssh_path(&h.key, absolute(&h.key)).map_err(|why| at(&field("key"), why))?;
            // A regular file that can be read: a folder opens too, and a FIFO would block.
            bounded_read::open(&key, KEY_LIMIT).map_err(|e| at(&field("key"), format!("cannot use the key: {e}")))?;
            let ip = resolve(&h.address, h.port).map_err(|why| at(&field("address"), why))?;
            if hosts.iter().any(|o: &HostEntry| o.ip == ip) {
                return Err(at(&field("address"), format!("{} is named twice: each node needs a host of its own", h.address)));
            }
            hosts.push(HostEntry { node: format!("n{}", i + 1), address: h.address, ip, user: h.user, port: h.port, key });
        }
        if !(1..=MAX_CONNECT_TIMEOUT_SECS).contains(&shape.ssh.connect_timeout_secs) {
            return Err(at("ssh.connect_timeout_secs", format!("must be from 1 to {MAX_CONNECT_TIMEOUT_SECS}")));
        }
        let known_hosts_file = match &shape.ssh.known_hosts_file {
            Some(file) => Some(check_ssh_path(file, absolute(file)).map_err(|why| at("ssh.known_hosts_file", why))?),
            None => None,
        };
        let ssh = SshOptions {
            known_hosts_file,
            accept_new_host_keys: shape.ssh.accept_new_host_keys,
            connect_timeout_secs: shape.ssh.connect_timeout_secs,
        };
        Ok(NodesFile { path: path.to_path_buf(), hosts, ssh, workers: shape.workers })
    }

    /// The error for a rule about the whole file (too few hosts for a backend).
    pub fn error(&self, field: Option<&str>, message: String) -> NodesFileError {
        let text = bounded_read::read_to_string(&self.path, NODES_FILE_LIMIT).unwrap_or_default();
        NodesFileError {
            file: self.path.clone(),
            line: field.and_then(|f| line_of_field(&text, f)),
            field: field.map(String::from),
            message,
        }
    }
}

/// An address as written, to the IPv4 address it names.
fn resolve(address: &str, port: u16) -> Result<Ipv4Addr, String> {
    if let Ok(ip) = address.parse::<Ipv4Addr>() {
        return Ok(ip);
    }
    let found = (address, port).to_socket_addrs().map_err(|e| format!("cannot resolve {address}: {e}"))?;
    found
        .filter_map(|a| match a.ip() {
            std::net::IpAddr::V4(ip) => Some(ip),
            std::net::IpAddr::V6(_) => None,
        })
        .next()
        .ok_or_else(|| format!("{address} has no IPv4 address"))
}

#[cfg(test)]
mod tests {
    use super::NodesFile;
    use std::path::Path;

    fn with_key(text: &str) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("key"), "not really a key").unwrap();
        (dir, text.to_string())
    }

    #[test]
    fn hosts_become_nodes_in_order_with_defaults_and_paths_beside_the_file() {
        let (dir, text) = with_key(
            "[[host]]\naddress = \"10.0.0.11\"\nkey = \"key\"\n\n[[host]]\naddress = \"localhost\"\nuser = \"ops\"\nport = 2222\nkey = \"key\"\n\n[ssh]\nknown_hosts_file = \"kh\"\n\n[workers]\ndocker_network = \"lab\"\nfirst_address = \"10.0.0.101\"\n",
        );
        let path = dir.path().join("nodes.toml");
        let f = NodesFile::parse(&text, &path).unwrap();
        assert_eq!(f.hosts.len(), 2);
        assert_eq!(f.hosts[0].label(), "n1 (root@10.0.0.11:22)");
        assert_eq!(f.hosts[1].label(), "n2 (ops@localhost:2222)");
        assert_eq!(f.hosts[1].ip, std::net::Ipv4Addr::LOCALHOST);
        assert_eq!(f.hosts[0].key, dir.path().join("key"));
        assert_eq!(f.ssh.known_hosts_file.as_deref(), Some(dir.path().join("kh").as_path()));
        assert_eq!(f.workers.unwrap().client_ip(3).to_string(), "10.0.0.103");
    }

    #[test]
    fn bad_input_is_one_line_naming_the_file_the_line_and_the_field() {
        let (dir, _) = with_key("");
        let path = dir.path().join("nodes.toml");
        let cases = [
            ("[[host]]\naddress = \"10.0.0.11\"\nkey = \"key\"\nprot = 22\n", ":4: ", "unknown field `prot`"),
            ("[[host]]\naddress = \"10.0.0.11\"\nkey = \"missing\"\n", ":3: field 'host[0].key'", "cannot use the key"),
            (
                "[[host]]\naddress = \"10.0.0.11\"\nkey = \"key\"\n[[host]]\naddress = \"10.0.0.11\"\nkey = \"key\"\n",
                ":5: field 'host[1].address'",
                "named twice",
            ),
            ("[[host]]\naddress = \"no-such-host.invalid\"\nkey = \"key\"\n", ":2: field 'host[0].address'", "cannot resolve"),
            ("[[host]]\naddress = \"10.0.0.11\"\nkey = \"key\"\n[workers]\ndocker_network = \"lab\"\n", "workers", "first_address"),
            ("host = []\n", "field 'host'", "names no host"),
        ];
        for (text, place, message) in cases {
            let err = NodesFile::parse(text, &path).unwrap_err().to_string();
            assert!(err.starts_with(&path.display().to_string()), "{err}");
            assert!(err.contains(place) && err.contains(message), "{text:?} gave {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
        assert!(NodesFile::load(Path::new("/nonexistent/nodes.toml")).unwrap_err().to_string().contains("cannot read"));
    }

    #[test]
    fn a_nodes_file_that_is_a_device_or_too_large_is_refused_unread_naming_the_limit() {
        let err = NodesFile::load(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(err, "/dev/zero: a character device, not a regular file: refused as a nodes file");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nodes.toml");
        // Sparse: a gibibyte of zeros that costs no disk.
        std::fs::File::create(&path).unwrap().set_len(1 << 30).unwrap();
        let err = NodesFile::load(&path).unwrap_err().to_string();
        assert_eq!(err, format!("{}: larger than 1 MiB, the limit for a nodes file", path.display()));
    }

    #[test]
    fn a_key_must_be_a_regular_file() {
        let (dir, _) = with_key("");
        std::fs::create_dir(dir.path().join("keys")).unwrap();
        let path = dir.path().join("nodes.toml");
        let err = NodesFile::parse("[[host]]\naddress = \"10.0.0.11\"\nkey = \"keys\"\n", &path).unwrap_err().to_string();
        assert!(err.contains(":3: field 'host[0].key'") && err.contains("a folder, not a regular file"), "{err}");
    }

    #[test]
    fn what_reaches_ssh_s_command_line_is_refused_unless_it_is_plainly_a_name_or_a_path() {
        let (dir, _) = with_key("");
        std::fs::write(dir.path().join("key%h"), "k").unwrap();
        std::fs::write(dir.path().join("-oProxyCommand=touch x"), "k").unwrap();
        let path = dir.path().join("nodes.toml");
        let host = |field: &str| format!("[[host]]\naddress = \"10.0.0.11\"\nkey = \"key\"\n{field}\n");
        let cases = [
            (host("user = \"-oProxyCommand=touch /tmp/x\""), ":4: field 'host[0].user'"),
            (host("user = \"ops$(id)\""), ":4: field 'host[0].user'"),
            ("[[host]]\naddress = \"-oProxyCommand=x\"\nkey = \"key\"\n".into(), ":2: field 'host[0].address'"),
            ("[[host]]\naddress = \"10.0.0.11\"\nkey = \"-oProxyCommand=touch x\"\n".into(), ":3: field 'host[0].key'"),
            ("[[host]]\naddress = \"10.0.0.11\"\nkey = \"key%h\"\n".into(), ":3: field 'host[0].key'"),
            (host("[ssh]\nknown_hosts_file = \"known hosts\""), ":5: field 'ssh.known_hosts_file'"),
        ];
        for (text, place) in cases {
            let err = NodesFile::parse(&text, &path).map(|_| ()).unwrap_err().to_string();
            assert!(err.contains(place), "{text:?} gave {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
        // A user name with a dot or a dash inside, and a path with both, are fine.
        let fine =
            "[[host]]\naddress = \"localhost\"\nuser = \"ops.team-1\"\nkey = \"key\"\n[ssh]\nknown_hosts_file = \"lab/known_hosts-2\"\n";
        assert!(NodesFile::parse(fine, &path).is_ok());
    }

    #[test]
    fn a_connect_timeout_past_any_integer_is_named_by_its_field() {
        let (dir, _) = with_key("");
        let path = dir.path().join("nodes.toml");
        let text = "[[host]]\naddress = \"10.0.0.11\"\nkey = \"key\"\n\n[ssh]\nconnect_timeout_secs = 99999999999999999999\n";
        let err = NodesFile::parse(text, &path).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains(":6: field 'ssh.connect_timeout_secs'"), "{err}");
        // Within an integer, but past what ssh takes or anyone waits.
        let err = NodesFile::parse(&text.replace("99999999999999999999", "4000"), &path).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains(":6: field 'ssh.connect_timeout_secs': must be from 1 to 3600"), "{err}");
    }
}
