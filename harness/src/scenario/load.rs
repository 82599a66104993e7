//! Reading a scenario file: serde for the shape, validate.rs for the rules, and one error line
//! naming the file, the line and the field, so a typo in a scenario never costs a container
//! start.

use super::validate::validate;
use super::Scenario;
use crate::scenario_name::ScenarioName;
use crate::toml_lines::{key_at_offset, line_of_field, line_of_offset};
use checker::bounded_read::{self, SizeLimit};
use std::path::{Path, PathBuf};

/// A scenario file that could not be used: `file:line: field 'a.b': what is wrong`.
pub type ScenarioError = crate::toml_lines::FileError;

/// A loaded scenario with where it came from.
#[derive(Clone, Debug)]
pub struct LoadedScenario {
    pub name: ScenarioName,
    pub path: PathBuf,
    pub text: String,
    pub scenario: Scenario,
}

impl LoadedScenario {
    /// The project the scenario belongs to, where client programs live: `[client] project`
    /// when given (relative to the file's folder), else the nearest folder above the file that
    /// holds a `clients/` folder (the repository's root for `scenarios/`), else the folder
    /// holding the file's folder. Absolute, for bind mounts.
    pub fn project_root(&self) -> PathBuf {
        let file = std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
        if let Some(project) = &self.scenario.client.project {
            let named = file.parent().unwrap_or(Path::new("/")).join(project);
            return std::fs::canonicalize(&named).unwrap_or(named);
        }
        let mut above = file.ancestors().skip(1);
        let with_clients = above.find(|dir| dir.join("clients").is_dir());
        with_clients.or_else(|| file.parent().and_then(Path::parent)).unwrap_or(Path::new("/")).to_path_buf()
    }

    /// An error about `field` (dotted: `nemesis.timeline[0].target`) of this file, at the line
    /// where the field is written (or its nearest enclosing table).
    pub fn error_at(&self, field: &str, message: String) -> ScenarioError {
        ScenarioError { file: self.path.clone(), line: line_of_field(&self.text, field), field: Some(field.to_string()), message }
    }
}

/// The largest scenario file read. Ours are a few kilobytes; anything near this is not a
/// scenario (`lockchaos scenario /dev/zero` would otherwise read until memory runs out).
pub const SCENARIO_LIMIT: SizeLimit = SizeLimit::new(1 << 20, "a scenario file");

pub fn load_file(path: &Path) -> Result<LoadedScenario, ScenarioError> {
    let text = bounded_read::read_to_string(path, SCENARIO_LIMIT).map_err(|e| ScenarioError {
        file: path.to_path_buf(),
        line: None,
        field: None,
        message: e.problem.to_string(),
    })?;
    load_text(text, path)
}

/// A scenario from its text; `path` names it (the file stem, which must be a scenario name: it
/// names the runs' folder) and its errors.
pub fn load_text(text: String, path: &Path) -> Result<LoadedScenario, ScenarioError> {
    let name = ScenarioName::of_file(path).map_err(|e| ScenarioError {
        file: path.to_path_buf(),
        line: None,
        field: None,
        message: format!("the file's name: {e}"),
    })?;
    let scenario = parse(&text, path)?;
    Ok(LoadedScenario { name, path: path.to_path_buf(), text, scenario })
}

pub fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
    let err =
        |line: Option<usize>, field: Option<String>, message: String| ScenarioError { file: path.to_path_buf(), line, field, message };
    let de = toml::Deserializer::new(text);
    let scenario: Scenario = serde_path_to_error::deserialize(de).map_err(|e| {
        let mut field = e.path().to_string();
        let inner = e.into_inner();
        let mut message = inner.message().trim().to_string();
        let mut span = inner.span();
        // A fault's parameters are read inside their step: its error names the parameter.
        if let Some((param, rest)) = super::nemesis::split_param_error(&message) {
            field = format!("{field}.{param}");
            message = rest.to_string();
            span = None;
        }
        // TOML's own errors (a number past i64) come before serde knows a field: the key
        // written where the error is names it.
        if field == "." {
            field = span.clone().and_then(|s| key_at_offset(text, s.start)).unwrap_or(field);
        }
        let line = span.map(|s| line_of_offset(text, s.start)).or_else(|| line_of_field(text, &field));
        let field = (field != ".").then_some(field);
        err(line, field, message)
    })?;
    validate(&scenario, true).map_err(|(field, message)| err(line_of_field(text, &field), Some(field), message))?;
    Ok(scenario)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_1_mib_is_refused_by_size_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.toml");
        // Valid TOML (comments), so only its size is wrong with it.
        std::fs::write(&path, "# padding\n".repeat(120_000)).unwrap();
        let err = load_file(&path).unwrap_err().to_string();
        assert_eq!(err, format!("{}: larger than 1 MiB, the limit for a scenario file", path.display()));
    }

    #[test]
    fn a_number_past_any_integer_is_named_by_its_field() {
        let text = "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n[workload]\nwork_ms = 99999999999999999999\n";
        let err = parse(text, Path::new("s.toml")).unwrap_err().to_string();
        assert!(err.starts_with("s.toml:5: field 'workload.work_ms': "), "{err}");
    }

    #[test]
    fn a_fifo_or_a_device_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("s.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        // A FIFO no one writes would block its reader for ever: the answer must come at once.
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || tx.send(load_file(&path).map(|_| ()).unwrap_err().to_string()));
        let err = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("load_file returns on a FIFO");
        assert_eq!(err, format!("{}: a FIFO, not a regular file: refused as a scenario file", fifo.display()));
        let err = load_file(Path::new("/dev/zero")).map(|_| ()).unwrap_err().to_string();
        assert_eq!(err, "/dev/zero: a character device, not a regular file: refused as a scenario file");
    }

    /// Issue 23: a file name becomes the run folder's name and a link in the store's pages.
    #[test]
    fn a_file_whose_name_is_no_scenario_name_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        for stem in ["javascript:document.title=...<!--", "javascript:alert(1)", "..", "a b", "-dash", "x".repeat(101).as_str()] {
            let path = dir.path().join(format!("{stem}.toml"));
            std::fs::write(&path, "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n").unwrap();
            let err = load_file(&path).expect_err(stem).to_string();
            assert!(err.starts_with(&format!("{}: ", path.display())), "{stem}: {err}");
            assert!(err.contains("is not a scenario name"), "{stem}: {err}");
            assert!(!err.contains('\n'), "{stem}: {err}");
        }
        let fine = dir.path().join("redis-single_v2.1.toml");
        std::fs::write(&fine, "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n").unwrap();
        assert_eq!(load_file(&fine).unwrap().name.as_str(), "redis-single_v2.1");
    }
}
