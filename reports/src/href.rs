//! Links in the pages: every `href` is an [`Href`], a relative path whose segments are
//! percent-encoded. maud escapes every value as HTML, attribute or text; an attribute-safe string
//! can still be a dangerous URL (`javascript:…`, `?` or `#` cutting the path, `//host`), and run
//! folders are named from files that come from outside. A relative path of encoded segments can
//! be none of these: `:` is encoded, no segment is empty, and nothing starts with `/`.

use maud::Render;
use percent_encoding::{percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::{Deserialize, Serialize};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// Everything but RFC 3986's unreserved characters (letters, digits, `-._~`) is encoded in a
/// segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// A link from a page to a file, relative to the page's folder, as the page's `href` holds it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Href(String);

impl Href {
    /// A link to `path` (relative to the page's folder: names and `..`). None when `path` is
    /// absolute or names nothing: a page links only relative to itself.
    pub fn to_path(path: &Path) -> Option<Href> {
        let mut segments = vec![];
        for c in path.components() {
            match c {
                Component::Normal(name) => segments.push(percent_encode(name.as_bytes(), SEGMENT).to_string()),
                Component::ParentDir => segments.push("..".to_string()),
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => return None,
            }
        }
        (!segments.is_empty()).then(|| Href(segments.join("/")))
    }

    /// A link to the folder `path`: as [`Href::to_path`], ending in `/`.
    pub fn to_folder(path: &Path) -> Option<Href> {
        Href::to_path(path).map(|h| Href(h.0 + "/"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A link read back (matrix.json, sweep.json) is held to what [`Href::to_path`] writes.
impl TryFrom<String> for Href {
    type Error = String;
    fn try_from(text: String) -> Result<Href, String> {
        let segments: Vec<&str> = text.strip_suffix('/').unwrap_or(&text).split('/').collect();
        let encoded = |s: &str| s.bytes().all(|b| b == b'%' || b.is_ascii_alphanumeric() || b"-._~".contains(&b));
        if segments.iter().all(|s| !s.is_empty() && encoded(s)) {
            Ok(Href(text))
        } else {
            Err(format!("`{text}` is not a relative link of percent-encoded segments"))
        }
    }
}

impl From<Href> for String {
    fn from(h: Href) -> String {
        h.0
    }
}

impl Render for Href {
    fn render_to(&self, buffer: &mut String) {
        // Encoded segments hold nothing HTML escapes; escaped all the same, as any attribute.
        self.0.as_str().render_to(buffer);
    }
}

impl std::fmt::Display for Href {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::Href;
    use std::path::Path;

    #[test]
    fn segments_are_encoded_so_no_link_has_a_scheme_a_query_or_a_host() {
        let cases = [
            ("demo/20260101T000000Z/report.html", "demo/20260101T000000Z/report.html"),
            ("javascript:alert(1)/x/report.html", "javascript%3Aalert%281%29/x/report.html"),
            ("a b?c#d/\"'<>&/r.html", "a%20b%3Fc%23d/%22%27%3C%3E%26/r.html"),
            ("../../other store/x", "../../other%20store/x"),
            ("./a//b", "a/b"),
            ("é", "%C3%A9"),
        ];
        for (path, want) in cases {
            assert_eq!(Href::to_path(Path::new(path)).unwrap().as_str(), want, "{path}");
        }
        assert_eq!(Href::to_folder(Path::new("logs")).unwrap().as_str(), "logs/");
        for none in ["/etc/passwd", "", "."] {
            assert_eq!(Href::to_path(Path::new(none)), None, "{none}");
        }
    }

    #[test]
    fn a_link_read_back_must_be_one_this_module_writes() {
        for good in ["demo/x/report.html", "../a%3Ab/report.html", "logs/"] {
            assert_eq!(Href::try_from(good.to_string()).unwrap().as_str(), good);
        }
        for bad in ["javascript:alert(1)", "/abs", "//host/x", "a//b", "a b", "x?y", "<b>", "", "é"] {
            assert!(Href::try_from(bad.to_string()).is_err(), "{bad}");
        }
    }
}
