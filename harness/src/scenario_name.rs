//! A scenario's name: its file's stem, and so the folder of its runs in the store
//! (`store/<name>/`), the start of every run id, container, network and iptables comment of its
//! runs, and a link in the store's pages. Only a name safe in all of these is one:
//! `[A-Za-z0-9][A-Za-z0-9._-]*` (Docker's rule for container names), no `..`, at most
//! [`MAX_LEN`] characters. So no name climbs out of the store (`..`), reads as a URL scheme
//! (`javascript:`) or carries markup.

use serde::Serialize;
use std::path::Path;

/// Long enough for any descriptive name, short enough that the names built from it (a run id
/// with its start time, a container's name, an iptables comment of at most 255) stay in bounds.
pub const MAX_LEN: usize = 100;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ScenarioName(String);

impl ScenarioName {
    pub fn new(name: &str) -> Result<ScenarioName, BadName> {
        let mut chars = name.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
        let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if first_ok && rest_ok && !name.contains("..") && name.len() <= MAX_LEN {
            Ok(ScenarioName(name.to_string()))
        } else {
            Err(BadName(name.to_string()))
        }
    }

    /// The name of the scenario in `file`: its stem (`scenarios/redis-single-pause.toml`).
    pub fn of_file(file: &Path) -> Result<ScenarioName, BadName> {
        ScenarioName::new(&file.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for ScenarioName {
    type Err = BadName;
    fn from_str(name: &str) -> Result<ScenarioName, BadName> {
        ScenarioName::new(name)
    }
}

impl std::fmt::Display for ScenarioName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, so `{:<40}` lines names up in tables.
        f.pad(&self.0)
    }
}

impl AsRef<str> for ScenarioName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl AsRef<Path> for ScenarioName {
    fn as_ref(&self) -> &Path {
        Path::new(&self.0)
    }
}

/// A name that is not a scenario name, and the rule it breaks, on one line (the name quoted
/// with its control characters escaped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{}` is not a scenario name: a letter or digit, then letters, digits, `.`, `_` or `-`, no `..`, at most {MAX_LEN} characters",
    .0.escape_debug()
)]
pub struct BadName(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_safe_as_a_folder_an_id_and_a_link_are_names() {
        for good in ["redis-single-pause", "a", "A1", "v2.1_x-y", &"x".repeat(MAX_LEN)] {
            assert_eq!(ScenarioName::new(good).map(|n| n.to_string()), Ok(good.to_string()));
        }
        let bad = [
            "",
            ".",
            "..",
            ".hidden",
            "-flag",
            "_x",
            "a..b",
            "a/b",
            "a b",
            "javascript:alert(1)",
            "x<!--",
            "\"'<>&",
            "é",
            "a\nb",
            &"x".repeat(MAX_LEN + 1),
        ];
        for name in bad {
            assert_eq!(ScenarioName::new(name), Err(BadName(name.to_string())), "{name:?}");
        }
        assert_eq!(format!("{:<6}|", ScenarioName::new("abc").unwrap()), "abc   |");
        let shown = BadName("a\nb".into()).to_string();
        assert!(shown.starts_with("`a\\nb` is not a scenario name") && !shown.contains('\n'), "{shown}");
    }

    #[test]
    fn a_files_name_is_its_stem() {
        assert_eq!(ScenarioName::of_file(Path::new("scenarios/redis-single-pause.toml")).unwrap().as_str(), "redis-single-pause");
        assert!(ScenarioName::of_file(Path::new("...toml")).is_err());
        assert!(ScenarioName::of_file(Path::new("/")).is_err());
    }
}
