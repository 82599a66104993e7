//! What the history targets share.

use checker::linearizability::{self, ModelKind, Options};
use checker::{CheckOptions, HistoryFormat};
use std::time::Duration;

/// Parses `data` as a history in `format`; a history that reads is checked, its errors and
/// results printed (Display and serialisation must not panic either).
pub fn history(data: &[u8], format: HistoryFormat) {
    match checker::parse_history(data, Some(format)) {
        Err(e) => {
            let _ = e.to_string();
        }
        Ok(parsed) => {
            let results = checker::check(&parsed.events, &CheckOptions::default());
            let _ = serde_json::to_string(&results);
            // A small budget, one thread: the search may be exponential, which is a verdict
            // (unknown), not a bug. `Err` = the history does not fit the model.
            let mut opts = Options::new(Duration::from_millis(20));
            opts.threads = 1;
            for model in ModelKind::ALL {
                if let Ok(l) = linearizability::check_with(&parsed.events, model, &opts) {
                    let _ = serde_json::to_string(&l);
                }
            }
        }
    }
}
