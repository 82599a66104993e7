//! What a client program's environment is made of, read from the scenario's `[client]`: Debian
//! packages, pip requirements, a build command and the sources it reads. `check_fields` holds the
//! rules that need nothing but the file (validate.rs calls it); `EnvSpec::resolve` the ones that
//! need the project's files.

use crate::client_program::ClientParams;
use std::path::{Component, Path, PathBuf};

/// The only part of a project a client's container sees (run/provision.rs mounts it); the
/// environment's files come from here too, so a build reads nothing a run would not.
pub const CLIENTS_DIR: &str = "clients";

/// An environment to build: everything that goes into it, with the project's paths resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct EnvSpec {
    pub debian: Vec<String>,
    pub python: Vec<String>,
    /// The requirements file, relative to the project root.
    pub requirements: Option<PathBuf>,
    pub build: Option<Vec<String>>,
    /// What `build` reads, relative to the project root (all of `clients/` by default).
    pub sources: Vec<PathBuf>,
    pub project: PathBuf,
}

/// An environment is built in up to two stages, each an image of its own on the one before, as
/// a Dockerfile's layers are cached: the packages (apt-get, pip), then the build. An edited
/// source reruns the build alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Packages,
    Build,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Packages => "packages",
            Stage::Build => "build",
        }
    }
}

/// Field rules: (dotted field, what is wrong).
pub fn check_fields(client: &ClientParams) -> Result<(), (String, String)> {
    let wants_env = !client.debian.is_empty() || !client.python.is_empty() || client.requirements.is_some() || client.build.is_some();
    if wants_env && client.command.is_none() {
        let field = if client.build.is_some() { "client.build" } else { "client.python" };
        return Err((field.into(), "sets up a client program's environment, but [client] has no `command` to run in it".into()));
    }
    if client.sources.is_some() && client.build.is_none() {
        return Err(("client.sources".into(), "names what `build` reads, and there is no `build`".into()));
    }
    for (i, package) in client.debian.iter().enumerate() {
        if !is_debian_name(package) {
            return Err((
                format!("client.debian[{i}]"),
                format!("{package:?} is not a Debian package name (lowercase letters, digits, + - .)"),
            ));
        }
    }
    for (i, requirement) in client.python.iter().enumerate() {
        let r = requirement.trim();
        if r.is_empty() || r.starts_with('-') || r.contains('\n') {
            return Err((
                format!("client.python[{i}]"),
                format!("{requirement:?} is not a requirement (`name==version`); pip options go in a requirements file"),
            ));
        }
    }
    if let Some(build) = &client.build {
        if build.first().is_none_or(|p| p.trim().is_empty()) {
            return Err((
                "client.build".into(),
                "names no program: e.g. [\"go\", \"build\", \"-o\", \"/out/lock\", \"./clients/lock\"]".into(),
            ));
        }
    }
    if let Some(path) = &client.requirements {
        inside_clients(path).map_err(|why| ("client.requirements".to_string(), why))?;
    }
    for (i, path) in client.sources.iter().flatten().enumerate() {
        inside_clients(path).map_err(|why| (format!("client.sources[{i}]"), why))?;
    }
    Ok(())
}

/// Debian policy's package names: `[a-z0-9][a-z0-9+.-]+`.
fn is_debian_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.len() >= 2
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))
}

/// A relative path under `clients/`, with no `..`: the part of the project a client sees.
fn inside_clients(path: &Path) -> Result<(), String> {
    let mut parts = path.components();
    let first = parts.next();
    let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
    if !plain || first != Some(Component::Normal(CLIENTS_DIR.as_ref())) {
        return Err(format!(
            "{} is not a path under {CLIENTS_DIR}/ relative to the project root (the only part a client's container sees)",
            path.display()
        ));
    }
    Ok(())
}

impl EnvSpec {
    /// The environment `client` asks for in `project`, `None` when it needs only the node
    /// image. An error is (dotted field, what is wrong): a file it names that is not there.
    pub fn resolve(client: &ClientParams, project: PathBuf) -> Result<Option<EnvSpec>, (String, String)> {
        if client.debian.is_empty() && client.python.is_empty() && client.requirements.is_none() && client.build.is_none() {
            return Ok(None);
        }
        let mut sources = match (&client.build, &client.sources) {
            (None, _) => vec![],
            (Some(_), Some(named)) => named.clone(),
            (Some(_), None) => vec![PathBuf::from(CLIENTS_DIR)],
        };
        if let Some(requirements) = &client.requirements {
            if !project.join(requirements).is_file() {
                let why = format!("{} is not a file in the project {}", requirements.display(), project.display());
                return Err(("client.requirements".into(), why));
            }
        }
        for (i, source) in client.sources.iter().flatten().enumerate() {
            if !project.join(source).exists() {
                let why = format!("{} is not in the project {}", source.display(), project.display());
                return Err((format!("client.sources[{i}]"), why));
            }
        }
        if client.build.is_some() && client.sources.is_none() && !project.join(CLIENTS_DIR).is_dir() {
            let why = format!("the project {} has no {CLIENTS_DIR}/ folder for the build to read", project.display());
            return Err(("client.build".into(), why));
        }
        sources.sort();
        sources.dedup();
        Ok(Some(EnvSpec {
            debian: client.debian.clone(),
            python: client.python.clone(),
            requirements: client.requirements.clone(),
            build: client.build.clone(),
            sources,
            project,
        }))
    }

    /// The stages this environment needs, in order.
    pub fn stages(&self) -> Vec<Stage> {
        let packages = !self.debian.is_empty() || !self.python.is_empty() || self.requirements.is_some();
        let mut stages = vec![];
        if packages {
            stages.push(Stage::Packages);
        }
        if self.build.is_some() {
            stages.push(Stage::Build);
        }
        stages
    }

    /// What a stage copies into its builder and hashes, relative to the project root.
    pub fn sources_of(&self, stage: Stage) -> Vec<PathBuf> {
        match stage {
            Stage::Packages => self.requirements.iter().cloned().collect(),
            Stage::Build => self.sources.clone(),
        }
    }

    /// The environment up to and including `stage`, for its image's summary.
    pub fn up_to(&self, stage: Stage) -> EnvSpec {
        let mut s = self.clone();
        if stage == Stage::Packages {
            s.build = None;
            s.sources = vec![];
        }
        s
    }

    /// One line for `image ls` and the image's label: what is in it.
    pub fn summary(&self) -> String {
        let mut parts = vec![];
        if !self.debian.is_empty() {
            parts.push(format!("debian: {}", self.debian.join(" ")));
        }
        if !self.python.is_empty() {
            parts.push(format!("python: {}", self.python.join(" ")));
        }
        if let Some(r) = &self.requirements {
            parts.push(format!("python: -r {}", r.display()));
        }
        if let Some(build) = &self.build {
            parts.push(format!("build: {}", build.join(" ")));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(f: impl FnOnce(&mut ClientParams)) -> ClientParams {
        let mut c = ClientParams { command: Some(vec!["python3".into(), "clients/x.py".into()]), ..Default::default() };
        f(&mut c);
        c
    }

    #[test]
    fn fields_are_checked_and_named() {
        assert!(check_fields(&client(|c| c.python = vec!["redis==8.2.0".into()])).is_ok());
        let field = |c: ClientParams| check_fields(&c).unwrap_err().0;
        assert_eq!(field(client(|c| c.python = vec!["--index-url=http://x".into()])), "client.python[0]");
        assert_eq!(field(client(|c| c.debian = vec!["golang-go".into(), "Go Lang".into()])), "client.debian[1]");
        assert_eq!(field(client(|c| c.requirements = Some("../reqs.txt".into()))), "client.requirements");
        assert_eq!(field(client(|c| c.requirements = Some("/etc/passwd".into()))), "client.requirements");
        assert_eq!(field(client(|c| c.sources = Some(vec!["clients/go".into()]))), "client.sources");
        assert_eq!(field(client(|c| c.build = Some(vec![" ".into()]))), "client.build");
        let no_command = ClientParams { build: Some(vec!["go".into()]), ..Default::default() };
        assert_eq!(field(no_command), "client.build");
        assert!(check_fields(&client(|c| {
            c.build = Some(vec!["go".into(), "build".into()]);
            c.sources = Some(vec!["clients/go-lock".into()]);
            c.debian = vec!["golang-go".into(), "libstdc++6".into()];
        }))
        .is_ok());
    }
}
