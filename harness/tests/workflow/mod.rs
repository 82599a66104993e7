//! A GitHub workflow's jobs as the nightly tests read them: a job's steps from the workflow's
//! text (as it is laid out here, not any YAML), and the expressions a runner expands in a shell
//! step. `merge_job` runs the merge job's shell steps with them.

pub mod merge_job;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The repository's root, where the workflows and their scripts are.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The nightly workflow's text.
pub fn nightly() -> String {
    std::fs::read_to_string(root().join(".github/workflows/nightly-chaos.yml")).unwrap()
}

/// One step of a job, as the workflow writes it: its keys, `run`'s script as bash gets it, and
/// `env`'s and `with`'s entries in order.
#[derive(Debug, Default)]
pub struct Step {
    pub name: String,
    pub id: String,
    pub if_: String,
    pub uses: String,
    pub run: String,
    pub env: Vec<(String, String)>,
    pub with: Vec<(String, String)>,
}

impl Step {
    pub fn with(&self, key: &str) -> &str {
        self.with.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).unwrap_or("")
    }
}

/// The lines from `i` on that are blank or indented past `at`, dedented, as one text; and the
/// index of the first line after them.
fn block<S: AsRef<str>>(lines: &[S], mut i: usize, at: usize) -> (String, usize) {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let from = i;
    while i < lines.len() && (lines[i].as_ref().trim().is_empty() || indent(lines[i].as_ref()) > at) {
        i += 1;
    }
    let body = &lines[from..i];
    let cut = body.iter().map(AsRef::as_ref).filter(|l| !l.trim().is_empty()).map(indent).min().unwrap_or(0);
    let text: Vec<&str> = body.iter().map(|l| l.as_ref().get(cut..).unwrap_or("")).collect();
    (text.join("\n").trim_end().to_string() + "\n", i)
}

/// A job's steps, read from the workflow's text as it is laid out here: jobs at two spaces,
/// steps at six (`- `), their keys at eight, `|` blocks below a key.
pub fn job_steps(workflow: &str, job: &str) -> Vec<Step> {
    let start = workflow.find(&format!("\n  {job}:\n")).unwrap_or_else(|| panic!("no job {job}")) + 1;
    let job_lines: Vec<&str> = workflow[start..].lines().skip(1).take_while(|l| l.is_empty() || l.starts_with("   ")).collect();
    let first = job_lines.iter().position(|l| l.trim() == "steps:").expect("the job's steps") + 1;
    let lines = &job_lines[first..];
    let mut steps: Vec<Step> = vec![];
    let mut i = 0;
    while i < lines.len() {
        let line = match lines[i].strip_prefix("      - ") {
            Some(rest) => {
                steps.push(Step::default());
                rest
            }
            None => lines[i].trim_start(),
        };
        i += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let step = steps.last_mut().expect("a step begins with `- `");
        let (key, value) = line.split_once(':').unwrap_or_else(|| panic!("not a key: {line:?}"));
        let mut value = value.trim().to_string();
        if value == "|" || value.is_empty() {
            (value, i) = block(lines, i, 8);
        }
        match key {
            "name" => step.name = value,
            "id" => step.id = value,
            "if" => step.if_ = value,
            "uses" => step.uses = value,
            "run" => step.run = value,
            "env" | "with" => {
                let body: Vec<&str> = value.lines().collect();
                let mut entries = vec![];
                let mut j = 0;
                while j < body.len() {
                    let (k, v) = body[j].split_once(':').unwrap_or_else(|| panic!("not an entry: {:?}", body[j]));
                    j += 1;
                    let mut v = v.trim().to_string();
                    if v == "|" {
                        (v, j) = block(&body, j, 0);
                    }
                    entries.push((k.to_string(), v.trim_end().to_string()));
                }
                if key == "env" {
                    step.env = entries;
                } else {
                    step.with = entries;
                }
            }
            _ => {}
        }
    }
    steps
}

/// `${{ github.run_id }}` and `${{ steps.ID.outputs.KEY }}` as the runner expands them (an
/// output never set is empty); any other expression is not expected in a shell step.
pub fn expand(text: &str, run_id: &str, outputs: &HashMap<String, HashMap<String, String>>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${{") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("}}").expect("an expression ends") + at;
        let expr = rest[at + 3..end].trim();
        let parts: Vec<&str> = expr.split('.').collect();
        match parts.as_slice() {
            ["github", "run_id"] => out.push_str(run_id),
            ["steps", id, "outputs", key] => out.push_str(outputs.get(*id).and_then(|o| o.get(*key)).map(String::as_str).unwrap_or("")),
            _ => panic!("the simulation does not know {expr:?}"),
        }
        rest = &rest[end + 2..];
    }
    out + rest
}
