//! Paths between the store's files: absolute, and one seen from a folder (`../../x`), for the
//! links between pages and a found scenario's project.

use reports::href::Href;
use std::path::{Component, Path, PathBuf};

/// The link from a page in the folder `page` to the file `target`: relative (`../../x/report.html`),
/// each segment percent-encoded, wherever the two are.
pub fn link(page: &Path, target: &Path) -> anyhow::Result<Href> {
    let path = relative(&absolute(page), &absolute(target));
    Href::to_path(&path).ok_or_else(|| anyhow::anyhow!("cannot link {} from a page in {}", target.display(), page.display()))
}

/// `p` made absolute: resolved when it exists, else joined to the current folder.
pub fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| std::env::current_dir().map(|d| d.join(p)).unwrap_or_else(|_| p.to_path_buf()))
}

/// `to` as seen from the folder `from` (both absolute): `../../..`.
pub fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to_parts: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to_parts).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for c in &to_parts[common..] {
        out.push(c.as_os_str());
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::relative;
    use std::path::Path;

    #[test]
    fn a_page_links_a_file_anywhere_by_a_relative_encoded_path() {
        let link = |page: &str, target: &str| super::link(Path::new(page), Path::new(target)).unwrap().to_string();
        assert_eq!(link("/s", "/s/demo/20260101T000000Z/report.html"), "demo/20260101T000000Z/report.html");
        assert_eq!(link("/merged", "/shard 1/x:y/r/report.html"), "../shard%201/x%3Ay/r/report.html");
        assert_eq!(link("/s/sweeps/1", "/s/demo/2/report.html"), "../../demo/2/report.html");
    }

    #[test]
    fn a_path_is_seen_from_a_folder_by_climbing_to_what_they_share() {
        assert_eq!(relative(Path::new("/w/p/store/explore/x"), Path::new("/w/p")), Path::new("../../.."));
        assert_eq!(relative(Path::new("/tmp/s/explore/x"), Path::new("/w/p")), Path::new("../../../../w/p"));
        assert_eq!(relative(Path::new("/w/p"), Path::new("/w/p")), Path::new("."));
    }
}
