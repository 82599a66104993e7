//! From events to operations: pairs each client's invoke with its completion.
//!
//! Only numbered (client) processes make operations: the nemesis and the resource are named
//! processes and are not clients of the object under test. A process is single-threaded, so
//! its next completion closes its open invoke.

use super::model::{HistoryOp, Model};
use crate::history::{Event, EventType, Process};
use std::collections::HashMap;

/// Notes kept; the rest are counted in one last note.
const MAX_NOTES: usize = 20;

pub(crate) struct Paired<I, O> {
    pub ops: Vec<HistoryOp<I, O>>,
    pub indeterminate: usize,
    pub notes: Vec<String>,
}

/// Reads every client operation with `model`. `Err` names the event that could not be read.
pub(crate) fn pair<M: Model>(model: &M, events: &[Event]) -> Result<Paired<M::Input, M::Output>, String> {
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut out = Paired { ops: Vec::new(), indeterminate: 0, notes: Vec::new() };
    let mut omitted_notes = 0usize;
    let mut note = |notes: &mut Vec<String>, text: String| {
        if notes.len() < MAX_NOTES {
            notes.push(text);
        } else {
            omitted_notes += 1;
        }
    };

    for (pos, event) in events.iter().enumerate() {
        let Process::Client(process) = event.process else {
            continue;
        };
        if event.kind == EventType::Invoke {
            // A new invoke while one is open: the worker restarted without recording an
            // outcome. The open operation's outcome is unknown, which is what info means.
            if let Some(prev) = open.insert(process, pos) {
                note(
                    &mut out.notes,
                    format!(
                        "event {}: process {process} invoked again before event {} completed; \
                         treated as indeterminate",
                        event.index, events[prev].index
                    ),
                );
                out.add(model, events, prev, None, process)?;
            }
            continue;
        }
        let Some(call) = open.remove(&process) else {
            // E.g. a client's own marker event; it cannot be paired, and says nothing about
            // the object.
            note(
                &mut out.notes,
                format!("event {}: {} completion of process {process} with no open invoke; ignored", event.index, type_name(event.kind)),
            );
            continue;
        };
        if events[call].f != event.f {
            return Err(format!(
                "event {}: completion f {:?} does not match invoke event {} f {:?}",
                event.index, event.f, events[call].index, events[call].f
            ));
        }
        out.add(model, events, call, Some(pos), process)?;
    }
    // Invokes never completed (the run ended, or the worker died): indeterminate.
    let mut still_open: Vec<(u64, usize)> = open.into_iter().collect();
    still_open.sort_by_key(|&(_, call)| call);
    for (process, call) in still_open {
        out.add(model, events, call, None, process)?;
    }
    out.ops.sort_by_key(|op| op.call);
    if omitted_notes > 0 {
        out.notes.push(format!("{omitted_notes} more notes omitted"));
    }
    Ok(out)
}

impl<I, O> Paired<I, O> {
    /// Adds the operation invoked at `call` and completed at `done` (`None`: never completed).
    fn add<M: Model<Input = I, Output = O>>(
        &mut self,
        model: &M,
        events: &[Event],
        call: usize,
        done: Option<usize>,
        process: u64,
    ) -> Result<(), String> {
        let invoke = &events[call];
        let kind = done.map(|d| events[d].kind);
        let (completion, ret) = match kind {
            Some(EventType::Ok) => (done.map(|d| &events[d]), done),
            _ => (None, None),
        };
        let op = model.operation(invoke, completion).map_err(|e| format!("event {}: {e}", invoke.index))?;
        // fail: the operation did not happen; it was read only to validate it.
        let (Some(op), false) = (op, kind == Some(EventType::Fail)) else {
            return Ok(());
        };
        debug_assert!(ret.is_some() || op.output.is_none());
        if ret.is_none() {
            self.indeterminate += 1;
        }
        self.ops.push(HistoryOp { index: invoke.index, process, call, ret, op });
        Ok(())
    }
}

fn type_name(kind: EventType) -> &'static str {
    match kind {
        EventType::Invoke => "invoke",
        EventType::Ok => "ok",
        EventType::Fail => "fail",
        EventType::Info => "info",
    }
}
