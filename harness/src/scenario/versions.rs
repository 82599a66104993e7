//! One scenario across several versions of its client's library: a fix is believed when the old
//! version fails and the new one does not under the same faults. `lockchaos matrix --client-env
//! redis==4.3.4,redis==8.2.0`, or a scenario's `[[client.versions]]`, makes each pin a scenario
//! of its own, named by it (`redis-py-lock-pause.redis-4.3.4`), whose environment has that
//! version from PyPI in place of any other pin of the same project: a row of its own in
//! matrix.html. A scenario's list gives each version its own expectation; `--client-env` keeps
//! the scenario's.

use super::LoadedScenario;
use crate::scenario_name::ScenarioName;
use anyhow::{bail, Context};

/// `project==version`: one exact version of one PyPI project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    pub project: String,
    pub version: String,
}

impl std::str::FromStr for Pin {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Pin> {
        let (project, version) = s.trim().split_once("==").with_context(|| format!("`{s}` is not `project==version`"))?;
        let name_ok = |t: &str, extra: &[char]| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || extra.contains(&c));
        if !name_ok(project, &['.', '_', '-']) || !name_ok(version, &['.', '_', '-', '+', '!']) {
            bail!("`{s}` is not `project==version` (a PyPI project name and one exact version)");
        }
        Ok(Pin { project: project.to_string(), version: version.to_string() })
    }
}

impl std::fmt::Display for Pin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}=={}", self.project, self.version)
    }
}

/// `redis==4.3.4,redis==8.2.0`.
pub fn parse_list(list: &str) -> anyhow::Result<Vec<Pin>> {
    let pins = list.split(',').filter(|p| !p.trim().is_empty()).map(str::parse).collect::<anyhow::Result<Vec<Pin>>>()?;
    if pins.is_empty() {
        bail!("--client-env names no version: give `project==version`, comma-separated");
    }
    Ok(pins)
}

/// PEP 503's normalized name: `Redis_Py` and `redis-py` are one project.
fn normalized(project: &str) -> String {
    project.to_lowercase().replace(['_', '.'], "-")
}

/// The project a requirement names (`redis>=4; python_version > "3"` → `redis`).
fn project_of(requirement: &str) -> String {
    let end = requirement.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))).unwrap_or(requirement.len());
    normalized(&requirement[..end])
}

/// The scenario's own `[[client.versions]]` as scenarios, each with its expectation; the
/// scenario itself when it has none.
pub fn expand(loaded: LoadedScenario) -> anyhow::Result<Vec<LoadedScenario>> {
    let rows = loaded.scenario.client.versions.clone();
    if rows.is_empty() {
        return Ok(vec![loaded]);
    }
    rows.iter()
        .map(|row| {
            let variant = apply(&loaded, &row.pin.parse()?, Some(row.expect))?;
            match &row.claims {
                Some(claims) => with_claims(variant, claims),
                None => Ok(variant),
            }
        })
        .collect()
}

/// `loaded` with `claims` in place of its own.
fn with_claims(loaded: LoadedScenario, claims: &results::Claims) -> anyhow::Result<LoadedScenario> {
    let mut doc: toml_edit::DocumentMut = loaded.text.parse()?;
    let table: toml_edit::DocumentMut = toml::to_string(claims)?.parse()?;
    doc["claims"] = toml_edit::Item::Table(table.as_table().clone());
    let text = doc.to_string();
    let scenario = super::parse(&text, &loaded.path)?;
    Ok(LoadedScenario { text, scenario, ..loaded })
}

/// `loaded` with `pin` in its client's environment, named and described by it, and expecting
/// `expect` when given. The variant has no versions of its own.
pub fn apply(loaded: &LoadedScenario, pin: &Pin, expect: Option<results::Expectation>) -> anyhow::Result<LoadedScenario> {
    let s = &loaded.scenario;
    if s.client.command.is_none() {
        bail!("--client-env {pin}: scenario {} has no client program ([client] command) to install it for", loaded.name);
    }
    let mut python: Vec<String> = s.client.python.iter().filter(|r| project_of(r) != normalized(&pin.project)).cloned().collect();
    python.push(pin.to_string());
    let version: String = pin.version.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' }).collect();
    let name = format!("{}.{}-{version}", loaded.name, normalized(&pin.project));
    let name = ScenarioName::new(&name).map_err(|e| anyhow::anyhow!("--client-env {pin}: {e}"))?;

    let mut doc: toml_edit::DocumentMut = loaded.text.parse().with_context(|| format!("{}", loaded.path.display()))?;
    doc["description"] = toml_edit::value(format!("{} ({pin})", s.description));
    if let Some(expect) = expect {
        doc["expect"] = toml_edit::value(expect.name());
    }
    let client = doc["client"].as_table_mut().context("[client] is a table")?;
    client["python"] = toml_edit::value(python.iter().collect::<toml_edit::Array>());
    client.remove("versions");
    let text = doc.to_string();
    let scenario = super::parse(&text, &loaded.path)?;
    Ok(LoadedScenario { name, path: loaded.path.clone(), text, scenario })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(client: &str) -> LoadedScenario {
        let text = format!("description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n[client]\n{client}\n");
        crate::scenario::load_text(text, std::path::Path::new("scenarios/redis-py-lock-pause.toml")).unwrap()
    }

    #[test]
    fn a_pin_replaces_the_same_project_and_names_the_variant() {
        let base = loaded("command = [\"python3\", \"clients/x.py\"]\npython = [\"Redis>=4\", \"sherlock==0.4.1\"]");
        let pin: Pin = "redis==8.2.0".parse().unwrap();
        let v = apply(&base, &pin, None).unwrap();
        assert_eq!(v.name.as_str(), "redis-py-lock-pause.redis-8.2.0");
        assert_eq!(v.scenario.client.python, ["sherlock==0.4.1", "redis==8.2.0"]);
        assert_eq!(v.scenario.description, "d (redis==8.2.0)");
        // The run folder's scenario.toml says what ran.
        assert!(v.text.contains("python = [\"sherlock==0.4.1\", \"redis==8.2.0\"]"), "{}", v.text);
    }

    #[test]
    fn a_scenarios_versions_are_rows_with_their_own_expectations() {
        let base = loaded(
            "command = [\"python3\", \"clients/x.py\"]\n[[client.versions]]\npin = \"redis==4.3.4\"\nexpect = \"stuck\"\n\
             [[client.versions]]\npin = \"redis==8.2.0\"\nexpect = \"safe\"\nclaims = { stuck = false }",
        );
        let rows = expand(base).unwrap();
        let got: Vec<_> = rows.iter().map(|r| (r.name.as_str(), r.scenario.expect.name(), r.scenario.client.versions.len())).collect();
        assert_eq!(got, [("redis-py-lock-pause.redis-4.3.4", "stuck", 0), ("redis-py-lock-pause.redis-8.2.0", "safe", 0)]);
        assert_eq!(rows[0].scenario.client.python, ["redis==4.3.4"]);
        assert_eq!((rows[0].scenario.claims.stuck, rows[1].scenario.claims.stuck), (None, Some(false)));
    }

    #[test]
    fn only_exact_pins_of_programs() {
        assert!(parse_list("redis==4.3.4, redis==8.2.0").unwrap().len() == 2);
        for bad in ["redis", "redis>=4", "==1", "redis==1 --index-url x", ""] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
        let builtin = crate::scenario::load_text(
            "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n".into(),
            std::path::Path::new("s.toml"),
        )
        .unwrap();
        let err = apply(&builtin, &"redis==8.2.0".parse().unwrap(), None).unwrap_err().to_string();
        assert!(err.contains("has no client program"), "{err}");
    }
}
