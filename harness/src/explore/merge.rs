//! `lockchaos explore merge STORE...`: the campaigns already in several stores (the shards of
//! one campaign, or campaigns made apart) laid out as one explore.json and explore.html in
//! `--store`, their findings deduplicated by property and shrunk schedule. Nothing is run.

use crate::paths::{absolute, relative};
use checker::bounded_read::{self, SizeLimit};
use results::explore::{ExploreResults, Finding};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The merged explore.json.
#[derive(Serialize)]
pub struct Merged {
    pub campaigns: Vec<ExploreResults>,
    /// Each distinct finding once: where its campaign's folder is (from the merged page), and
    /// the other campaigns that found the same.
    pub found: Vec<MergedFinding>,
}

#[derive(Serialize)]
pub struct MergedFinding {
    /// The base scenario's file, as its campaign names it.
    pub base: String,
    pub folder: String,
    pub finding: Finding,
    pub also_in: Vec<String>,
}

/// The largest explore.json read: ours are tens of kilobytes.
const EXPLORE_JSON_LIMIT: SizeLimit = SizeLimit::new(16 << 20, "an explore.json");

/// Reads every campaign of `stores` and writes the merged page into `out`.
pub fn merge(stores: &[PathBuf], out: &Path) -> anyhow::Result<Merged> {
    std::fs::create_dir_all(out)?;
    let out_abs = absolute(out);
    let mut merged = Merged { campaigns: vec![], found: vec![] };
    for store in stores {
        let explore = store.join("explore");
        let mut folders: Vec<PathBuf> = std::fs::read_dir(&explore)
            .map_err(|e| anyhow::anyhow!("{}: no explore campaigns ({e})", explore.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("explore.json").is_file())
            .collect();
        folders.sort();
        for folder in folders {
            let file = folder.join("explore.json");
            let campaign = read(&file)?;
            let from_page = format!("{}/", relative(&out_abs, &absolute(&folder)).display());
            for f in &campaign.found {
                // The same failure of the same lock: a schedule means nothing apart from its base.
                let same = |m: &MergedFinding| {
                    m.base == campaign.scenario_file && m.finding.property == f.property && m.finding.schedule == f.schedule
                };
                match merged.found.iter_mut().find(|m| same(m)) {
                    Some(m) => m.also_in.push(format!("{from_page}{}", f.scenario)),
                    None => merged.found.push(MergedFinding {
                        base: campaign.scenario_file.clone(),
                        folder: from_page.clone(),
                        finding: f.clone(),
                        also_in: vec![],
                    }),
                }
            }
            merged.campaigns.push(campaign);
        }
    }
    anyhow::ensure!(
        !merged.campaigns.is_empty(),
        "no explore campaign in {}",
        stores.iter().map(|s| s.display().to_string()).collect::<Vec<_>>().join(", ")
    );
    std::fs::write(out.join("explore.json"), serde_json::to_vec_pretty(&merged)?)?;
    let found: Vec<(String, Finding)> = merged.found.iter().map(|m| (m.folder.clone(), m.finding.clone())).collect();
    std::fs::write(
        out.join("explore.html"),
        reports::explore::render_many(&merged.campaigns, &found, "lockchaos explore: merged campaigns"),
    )?;
    Ok(merged)
}

fn read(file: &Path) -> anyhow::Result<ExploreResults> {
    let bytes = bounded_read::read(file, EXPLORE_JSON_LIMIT)?;
    serde_json::from_slice(&bytes).map_err(|e| anyhow::anyhow!("{}: line {}: {e}", file.display(), e.line()))
}
