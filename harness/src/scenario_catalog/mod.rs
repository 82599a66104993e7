//! Finding scenarios: by path, or by name in ./scenarios (else the source tree's scenarios/).
//! A scenario found here has been loaded and held against its backend (the preflight).

use crate::preflight;
use crate::scenario::{self, LoadedScenario, ScenarioError};
use anyhow::bail;
use std::path::{Path, PathBuf};

/// The scenario folder: ./scenarios when it exists, else the one next to this crate's source.
pub fn default_dir() -> PathBuf {
    let local = PathBuf::from("scenarios");
    if local.is_dir() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("scenarios")
}

pub fn resolve(name_or_path: &str) -> anyhow::Result<LoadedScenario> {
    let path = Path::new(name_or_path);
    if path.extension().is_some_and(|e| e == "toml") || path.components().count() > 1 {
        return Ok(load(path)?);
    }
    let file = default_dir().join(format!("{name_or_path}.toml"));
    if !file.exists() {
        // One version of a scenario with `[[client.versions]]`: `NAME.redis-8.2.0`.
        let versions = list(None)?.into_iter().filter_map(Result::ok).filter(|s| !s.scenario.client.versions.is_empty());
        for loaded in versions {
            if let Some(found) = scenario::versions::expand(loaded)?.into_iter().find(|v| v.name.as_str() == name_or_path) {
                return Ok(found);
            }
        }
        let known: Vec<String> = list(None)?.into_iter().filter_map(|s| s.ok().map(|s| s.name.to_string())).collect();
        bail!("no scenario named `{name_or_path}` in {} (known: {})", default_dir().display(), known.join(", "));
    }
    Ok(load(&file)?)
}

/// Loads one file and holds it against its backend.
pub fn load(path: &Path) -> Result<LoadedScenario, ScenarioError> {
    let loaded = scenario::load_file(path)?;
    preflight::check(&loaded)?;
    Ok(loaded)
}

/// Every scenario in the folder, sorted by name; a broken file is listed as its error.
pub fn list(dir: Option<&Path>) -> anyhow::Result<Vec<Result<LoadedScenario, ScenarioError>>> {
    let dir = dir.map(Path::to_path_buf).unwrap_or_else(default_dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| anyhow::anyhow!("cannot read scenario folder {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    Ok(files.iter().map(|f| load(f)).collect())
}

#[cfg(test)]
mod tests;
