//! The three-valued verdict every property returns.

use serde::{Deserialize, Serialize};
use std::fmt;

/// `unknown` means the history could not settle the question (nothing tested, or data the
/// property could not interpret); it is never a polite word for "invalid".
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Valid,
    Invalid,
    Unknown,
}

impl Verdict {
    /// Invalid wins over unknown, unknown over valid: one violation anywhere makes the run a
    /// violation, and one unanswered question keeps it from being called valid.
    pub fn combine(self, other: Verdict) -> Verdict {
        use Verdict::*;
        match (self, other) {
            (Invalid, _) | (_, Invalid) => Invalid,
            (Unknown, _) | (_, Unknown) => Unknown,
            _ => Valid,
        }
    }

    /// Combines several verdicts; an empty list is `Valid` (nothing failed).
    pub fn combine_all(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        verdicts.into_iter().fold(Verdict::Valid, Verdict::combine)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::Invalid => "invalid",
            Verdict::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Verdict::{self, *};

    #[test]
    fn serializes_lowercase() {
        assert_eq!(serde_json::to_string(&Invalid).unwrap(), "\"invalid\"");
        let v: Verdict = serde_json::from_str("\"unknown\"").unwrap();
        assert_eq!(v, Unknown);
    }

    #[test]
    fn invalid_beats_unknown_beats_valid() {
        assert_eq!(Verdict::combine_all([Valid, Unknown, Valid]), Unknown);
        assert_eq!(Verdict::combine_all([Unknown, Invalid, Valid]), Invalid);
        assert_eq!(Verdict::combine_all([Valid, Valid]), Valid);
    }
}
