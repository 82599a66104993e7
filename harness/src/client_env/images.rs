//! The cached environments: whether one is built, what `lockchaos image ls` shows, and what
//! `image prune` removes. `clean` never touches them: they are a cache, not a run's leftovers.

use super::{EnvImage, INPUTS_LABEL, REPOSITORY, SCENARIO_LABEL, SUMMARY_LABEL};
use anyhow::Context;
use bollard::query_parameters::{ListImagesOptions, RemoveImageOptions};
use bollard::Docker;
use std::collections::HashMap;

/// One cached environment.
#[derive(Clone, Debug)]
pub struct CachedEnv {
    pub image: EnvImage,
    pub summary: String,
    pub scenario: String,
    pub size_bytes: i64,
    /// Unix seconds.
    pub created: i64,
}

/// Whether `image` exists with the inputs its tag promises (a tag alone could be a leftover
/// of a commit that failed half-way, or a hand-made image).
pub async fn is_built(docker: &Docker, image: &EnvImage) -> anyhow::Result<bool> {
    match docker.inspect_image(&image.tag).await {
        Ok(i) => Ok(i.config.and_then(|c| c.labels).and_then(|mut l| l.remove(INPUTS_LABEL)).as_deref() == Some(image.hash.as_str())),
        Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => Ok(false),
        Err(e) => Err(anyhow::anyhow!(e).context(format!("inspecting image {}", image.tag))),
    }
}

/// Every cached environment, newest first.
pub async fn list(docker: &Docker) -> anyhow::Result<Vec<CachedEnv>> {
    let filters = HashMap::from([("label".to_string(), vec![INPUTS_LABEL.to_string()])]);
    let images = docker
        .list_images(Some(ListImagesOptions { filters: Some(filters), ..Default::default() }))
        .await
        .context("listing the cached client environments")?;
    let mut found: Vec<CachedEnv> = images
        .into_iter()
        .filter_map(|i| {
            let hash = i.labels.get(INPUTS_LABEL)?.clone();
            let tag = i.repo_tags.iter().find(|t| t.starts_with(&format!("{REPOSITORY}:")))?.clone();
            Some(CachedEnv {
                image: EnvImage { tag, hash },
                summary: i.labels.get(SUMMARY_LABEL).cloned().unwrap_or_default(),
                scenario: i.labels.get(SCENARIO_LABEL).cloned().unwrap_or_default(),
                size_bytes: i.size,
                created: i.created,
            })
        })
        .collect();
    found.sort_by(|a, b| b.created.cmp(&a.created).then(a.image.tag.cmp(&b.image.tag)));
    Ok(found)
}

/// Removes every cached environment no container uses, with its build log. Returns the ones
/// removed and, for each that stayed, why.
pub async fn prune(docker: &Docker) -> anyhow::Result<(Vec<CachedEnv>, Vec<(CachedEnv, String)>)> {
    let mut removed = vec![];
    let mut kept = vec![];
    for env in list(docker).await? {
        match docker.remove_image(&env.image.tag, None::<RemoveImageOptions>, None).await {
            Ok(_) => {
                let _ = std::fs::remove_file(env.image.log_path());
                let _ = std::fs::remove_file(env.image.log_path().with_extension("lock"));
                removed.push(env);
            }
            Err(e) => kept.push((env, e.to_string())),
        }
    }
    Ok((removed, kept))
}
