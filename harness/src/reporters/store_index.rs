//! store/index.html, rewritten after each run from every run folder's results.json.

use crate::events::{Event, Reporter};

pub struct StoreIndex;

impl Reporter for StoreIndex {
    fn report(&mut self, event: &Event) {
        if let Event::RunFinished { dir, .. } = event {
            // The run folder's parent's parent is the store: STORE/<scenario>/<time>/.
            let Some(store) = dir.parent().and_then(|p| p.parent()) else { return };
            // The index is a convenience: a run is complete without it.
            match crate::run_store::write_index(store) {
                Ok(left_out) => {
                    for e in left_out {
                        eprint_line!("warning: {}/index.html leaves out a run: {e}", store.display());
                    }
                }
                Err(e) => eprint_line!("warning: cannot update {}/index.html: {e:#}", store.display()),
            }
        }
    }
}
