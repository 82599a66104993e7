//! What reaches ssh's command line from a nodes-file (the user after `-l`, the key after `-i`,
//! the known-hosts file in `-o UserKnownHostsFile=`) must be plainly a name or a path: never
//! something ssh could read as an option (`-oProxyCommand=…`), nor text it expands (`%h`, `~`,
//! which a ProxyCommand can paste into a shell) or splits (a known-hosts path at its spaces).
//! The address never reaches ssh (it is given the resolved IP) but is held to a host name too.
//! Each check returns what is wrong, for the nodes-file's error line.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// A user: a letter, digit or `_` first, then those and `.` `-`, at most 32.
pub(super) fn check_user(user: &str) -> Result<(), String> {
    let first_ok = user.chars().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let rest_ok = user.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if first_ok && rest_ok && user.len() <= 32 {
        return Ok(());
    }
    Err(format!(
        "{user:?} is not a user name: a letter, digit or _ first, then only letters, digits, _ . - (at most 32), so that ssh takes it as a name and nothing else"
    ))
}

/// An address: an IPv4 address or a host name (RFC 1123: labels of letters, digits and `-`,
/// neither first nor last in a label), so that it can never read as an option.
pub(super) fn check_address(address: &str) -> Result<(), String> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if address.parse::<Ipv4Addr>().is_ok() || (address.len() <= 253 && address.split('.').all(label_ok)) {
        return Ok(());
    }
    Err(format!("{address:?} is neither an IPv4 address nor a host name (letters, digits and - between dots, no - first)"))
}

/// A path given to ssh, as `written` in the file and made `absolute`: not written with a `-`
/// first, and only letters, digits and `/ . _ - + @ , : =` in it. Returns the absolute path.
pub(super) fn check_ssh_path(written: &Path, absolute: PathBuf) -> Result<PathBuf, String> {
    let shown = absolute.display().to_string();
    if written.as_os_str().as_encoded_bytes().first() == Some(&b'-') {
        return Err(format!("{:?} starts with '-', which ssh would read as an option", written.display().to_string()));
    }
    let bad = match absolute.to_str() {
        None => Some("bytes that are not UTF-8".to_string()),
        Some(p) => p
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+' | '@' | ',' | ':' | '=')))
            .map(|c| format!("{c:?}")),
    };
    match bad {
        None => Ok(absolute),
        Some(what) => Err(format!(
            "{shown:?} holds {what}: a path ssh is given may hold only letters, digits and / . _ - + @ , : = (ssh expands % and ~ in it, and splits a known-hosts path at its spaces)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths_that_could_be_options_or_be_expanded_are_refused() {
        for user in ["root", "ops.team-1", "_svc", "9lives"] {
            assert_eq!(check_user(user), Ok(()), "{user}");
        }
        for user in ["-oProxyCommand=x", "", ".hidden", "a b", "ops$(id)", "x%u", &"a".repeat(33)] {
            assert!(check_user(user).unwrap_err().contains("is not a user name"), "{user}");
        }
        for address in ["10.0.0.11", "db-1.lab.example", "localhost"] {
            assert_eq!(check_address(address), Ok(()), "{address}");
        }
        for address in ["-oProxyCommand=x", "a..b", "host-", "a b", "x;y", ""] {
            assert!(check_address(address).is_err(), "{address}");
        }
        let ok = |p: &str| check_ssh_path(Path::new(p), PathBuf::from("/lab").join(p));
        assert_eq!(ok("keys/id_ed25519"), Ok(PathBuf::from("/lab/keys/id_ed25519")));
        assert!(ok("-oProxyCommand=x").unwrap_err().contains("starts with '-'"));
        assert!(ok("key%h").unwrap_err().contains("holds '%'"));
        assert!(ok("known hosts").unwrap_err().contains("holds ' '"));
    }
}
