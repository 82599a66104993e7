//! What names an environment's stage: a hash of everything that goes into it (the image it
//! derives from, the packages, the requirements, the build command, and every byte of the files
//! it reads), and the tar archive of those files that the builder receives. Both walk the same
//! files in the same order, so what is hashed is what is built.

use super::spec::{EnvSpec, Stage};
use anyhow::{bail, Context};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Sources larger than this are no client's (a build folder or a virtualenv left in
/// `clients/`): the environment is refused rather than a gigabyte copied on every change.
pub const SOURCES_LIMIT: u64 = 256 << 20;
const FILES_LIMIT: usize = 100_000;
/// Caches a build or an interpreter leaves beside the sources; never inputs.
const SKIPPED: [&str; 3] = ["__pycache__", ".git", "target"];

/// One file of the sources, relative to the project root.
struct Source {
    relative: PathBuf,
    absolute: PathBuf,
    /// A symlink's target, kept as a link (never followed out of the project).
    link: Option<PathBuf>,
    mode: u32,
}

/// A stage's identity: hex SHA-256 over a versioned, field-separated encoding of its own inputs
/// and `base`, the hash of what it builds on (the node image's inputs, or the stage before).
/// `recipe`: the commands the stage runs (builder::recipe).
pub fn hash(spec: &EnvSpec, stage: Stage, base: &str, recipe: &[String]) -> anyhow::Result<String> {
    let mut h = Sha256::new();
    let mut field = |name: &str, items: &[&[u8]]| {
        h.update(name.as_bytes());
        h.update((items.len() as u64).to_le_bytes());
        for item in items {
            h.update((item.len() as u64).to_le_bytes());
            h.update(item);
        }
    };
    field("lockchaos client environment v1", &[stage.name().as_bytes(), base.as_bytes()]);
    field("recipe", &recipe.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
    match stage {
        Stage::Packages => {
            field("debian", &spec.debian.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
            field("python", &spec.python.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
            let requirements = spec.requirements.as_ref().map(|r| r.to_string_lossy().into_owned()).unwrap_or_default();
            field("requirements", &[requirements.as_bytes()]);
        }
        Stage::Build => {
            let build = spec.build.clone().unwrap_or_default();
            field("build", &build.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
        }
    }
    for source in walk(&spec.project, &spec.sources_of(stage))? {
        let path = source.relative.to_string_lossy().into_owned();
        match &source.link {
            Some(target) => field("link", &[path.as_bytes(), target.to_string_lossy().as_bytes()]),
            None => {
                let bytes = std::fs::read(&source.absolute).with_context(|| format!("cannot read {}", source.absolute.display()))?;
                field("file", &[path.as_bytes(), &source.mode.to_le_bytes(), &bytes]);
            }
        }
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// A stage's files as a tar archive rooted at the project: `clients/...`.
pub fn archive(spec: &EnvSpec, stage: Stage) -> anyhow::Result<Vec<u8>> {
    let mut tar = tar::Builder::new(vec![]);
    tar.follow_symlinks(false);
    for source in walk(&spec.project, &spec.sources_of(stage))? {
        tar.append_path_with_name(&source.absolute, &source.relative)
            .with_context(|| format!("cannot add {} to the build's sources", source.absolute.display()))?;
    }
    Ok(tar.into_inner()?)
}

/// Every file under `roots`, sorted by path, within the limits.
fn walk(project: &Path, roots: &[PathBuf]) -> anyhow::Result<Vec<Source>> {
    let mut found = vec![];
    let mut total = 0u64;
    for root in roots {
        collect(project, root, &mut found, &mut total)?;
    }
    found.sort_by(|a, b| a.relative.cmp(&b.relative));
    found.dedup_by(|a, b| a.relative == b.relative);
    Ok(found)
}

fn collect(project: &Path, relative: &Path, found: &mut Vec<Source>, total: &mut u64) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let absolute = project.join(relative);
    let meta = std::fs::symlink_metadata(&absolute).with_context(|| format!("cannot read {}", absolute.display()))?;
    if found.len() >= FILES_LIMIT {
        bail!("the build's sources hold more than {FILES_LIMIT} files; name fewer in [client] sources");
    }
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&absolute)?;
        found.push(Source { relative: relative.into(), absolute, link: Some(target), mode: 0o777 });
    } else if meta.is_dir() {
        let mut entries =
            std::fs::read_dir(&absolute).with_context(|| format!("cannot list {}", absolute.display()))?.collect::<Result<Vec<_>, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name();
            if SKIPPED.iter().any(|s| name == *s) {
                continue;
            }
            collect(project, &relative.join(name), found, total)?;
        }
    } else if meta.is_file() {
        *total += meta.len();
        if *total > SOURCES_LIMIT {
            bail!(
                "the build's sources pass {} MiB at {}; name what the build reads in [client] sources",
                SOURCES_LIMIT >> 20,
                relative.display()
            );
        }
        found.push(Source { relative: relative.into(), absolute, link: None, mode: meta.permissions().mode() & 0o777 });
    }
    // Sockets, fifos and devices are no source: skipped.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(project: &Path) -> EnvSpec {
        EnvSpec {
            debian: vec!["golang-go".into()],
            python: vec![],
            requirements: None,
            build: Some(vec!["go".into(), "build".into()]),
            sources: vec!["clients".into()],
            project: project.into(),
        }
    }

    #[test]
    fn the_hash_follows_every_input_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("clients/lock/__pycache__")).unwrap();
        std::fs::write(dir.path().join("clients/lock/main.go"), "package main").unwrap();
        let s = spec(dir.path());
        let first = hash(&s, Stage::Build, "node-1", &[]).unwrap();
        assert_eq!(first, hash(&s, Stage::Build, "node-1", &[]).unwrap(), "the same inputs, the same name");
        // A cache is no input.
        std::fs::write(dir.path().join("clients/lock/__pycache__/x.pyc"), "cache").unwrap();
        assert_eq!(first, hash(&s, Stage::Build, "node-1", &[]).unwrap());
        assert_ne!(first, hash(&s, Stage::Build, "node-2", &[]).unwrap(), "a new node image");
        assert_ne!(first, hash(&s, Stage::Build, "node-1", &["make".into()]).unwrap(), "a new way of building");
        let mut other = s.clone();
        other.debian.push("gcc".into());
        assert_eq!(first, hash(&other, Stage::Build, "node-1", &[]).unwrap(), "the build stage's own inputs only");
        assert_ne!(
            hash(&s, Stage::Packages, "node-1", &[]).unwrap(),
            hash(&other, Stage::Packages, "node-1", &[]).unwrap(),
            "a package more"
        );
        let mut other = s.clone();
        other.build = Some(vec!["go".into(), "vet".into()]);
        assert_ne!(first, hash(&other, Stage::Build, "node-1", &[]).unwrap(), "another command");
        std::fs::write(dir.path().join("clients/lock/main.go"), "package main // edited").unwrap();
        assert_ne!(first, hash(&s, Stage::Build, "node-1", &[]).unwrap(), "an edited source");
    }

    #[test]
    fn fields_do_not_run_into_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = spec(dir.path());
        a.sources = vec![];
        a.debian = vec!["ab".into(), "c".into()];
        let mut b = a.clone();
        b.debian = vec!["a".into(), "bc".into()];
        assert_ne!(hash(&a, Stage::Packages, "n", &[]).unwrap(), hash(&b, Stage::Packages, "n", &[]).unwrap());
    }

    #[test]
    fn the_archive_holds_the_hashed_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("clients/lock")).unwrap();
        std::fs::write(dir.path().join("clients/lock/main.go"), "package main").unwrap();
        std::fs::create_dir_all(dir.path().join("clients/.git")).unwrap();
        std::fs::write(dir.path().join("clients/.git/HEAD"), "ref").unwrap();
        let bytes = archive(&spec(dir.path()), Stage::Build).unwrap();
        let mut tar = tar::Archive::new(bytes.as_slice());
        let names: Vec<String> = tar.entries().unwrap().map(|e| e.unwrap().path().unwrap().display().to_string()).collect();
        assert_eq!(names, vec!["clients/lock/main.go"]);
    }
}
