//! The linearizability failure drawn as porcupine draws it: the operations around the point
//! where the search got stuck, a lane per process, each operation a bar from invoke to
//! completion; the end of the longest linearizable prefix in green (numbered in linearization
//! order) and the operations that could not come next in red.

use super::F1;
use checker::linearizability::PartitionFailure;
use checker::{Event, EventType, Process};
use maud::{html, Markup};
use std::collections::{BTreeMap, HashMap};

/// Prefix operations shown before the failure: enough context, a readable picture.
const CONTEXT: usize = 12;
const WIDTH: f64 = 1000.0;
const LEFT: f64 = 90.0;
const LANE: f64 = 26.0;

struct Op<'a> {
    invoke: &'a Event,
    end: u64,
    /// Position in the linearization, or None for an unplaceable operation.
    order: Option<usize>,
}

/// The figure for one failing partition; None when its operations are not in the history.
pub(crate) fn render(failure: &PartitionFailure, history: &[Event]) -> Option<Markup> {
    let by_index: HashMap<u64, usize> = history.iter().enumerate().map(|(i, e)| (e.index, i)).collect();
    let completion = |i: usize| -> u64 {
        let inv = &history[i];
        history[i + 1..]
            .iter()
            .find(|e| e.process == inv.process && e.f == inv.f && e.kind != EventType::Invoke)
            .map(|e| e.time)
            .unwrap_or_else(|| history.last().map(|e| e.time).unwrap_or(inv.time))
    };
    let skip = failure.longest_prefix.len().saturating_sub(CONTEXT);
    let mut ops: Vec<Op> = vec![];
    for (n, idx) in failure.longest_prefix.iter().enumerate().skip(skip) {
        if let Some(&i) = by_index.get(idx) {
            ops.push(Op { invoke: &history[i], end: completion(i), order: Some(n + 1) });
        }
    }
    for idx in &failure.unplaceable {
        if let Some(&i) = by_index.get(idx) {
            ops.push(Op { invoke: &history[i], end: completion(i), order: None });
        }
    }
    if ops.is_empty() {
        return None;
    }
    let lanes: BTreeMap<String, usize> = {
        let mut names: Vec<String> = ops.iter().map(|o| process_name(&o.invoke.process)).collect();
        names.sort();
        names.dedup();
        names.into_iter().enumerate().map(|(i, n)| (n, i)).collect()
    };
    let t0 = ops.iter().map(|o| o.invoke.time).min().unwrap_or(0);
    let t1 = ops.iter().map(|o| o.end).max().unwrap_or(t0).max(t0 + 1);
    let x = |t: u64| LEFT + (t - t0) as f64 / (t1 - t0) as f64 * (WIDTH - LEFT - 10.0);
    let height = 30.0 + lanes.len() as f64 * LANE;
    let lane_y = |lane: usize| 20.0 + lane as f64 * LANE;
    Some(html! {
        figure class="linearizability" {
            svg class="linearizability" viewBox={ "0 0 " (WIDTH) " " (height) } width=(WIDTH) height=(height) role="img"
                aria-label="operations around the linearizability failure" {
                @for (name, lane) in &lanes {
                    // lane-label is end-anchored (report.css), like the timeline's.
                    text class="lane-label" x=(F1(LEFT - 8.0)) y=(F1(lane_y(*lane) + 13.0)) { (name) }
                }
                @for op in &ops {
                    @let y = lane_y(lanes[&process_name(&op.invoke.process)]);
                    @let (x0, x1) = (x(op.invoke.time), x(op.end).max(x(op.invoke.time) + 2.0));
                    g class=(if op.order.is_some() { "op placed" } else { "op unplaceable" }) {
                        title {
                            "#" (op.invoke.index) " " (op.invoke.f) " — "
                            @match op.order {
                                Some(n) => { "linearized as operation " (n) }
                                None => { "cannot come next after the prefix" }
                            }
                        }
                        rect x=(F1(x0)) y=(F1(y)) width=(F1(x1 - x0)) height="18" {}
                        // A bar too narrow for its label keeps it in the tooltip only, so labels never overlap.
                        @if x1 - x0 >= 60.0 || op.order.is_none() {
                            text x=(F1(x0 + 3.0)) y=(F1(y + 13.0)) {
                                @match op.order {
                                    Some(n) => { (n) ". " (op.invoke.f) }
                                    None => { "✗ " (op.invoke.f) }
                                }
                            }
                        }
                    }
                }
            }
            figcaption {
                "Partition " (failure.partition) ": the last " (failure.longest_prefix.len() - skip)
                " operation(s) of the longest linearizable prefix (green, in linearization order) and the "
                (failure.unplaceable.len()) " operation(s) that could not come next (red). Model state after the prefix: "
                (failure.state) "."
            }
        }
    })
}

fn process_name(p: &Process) -> String {
    match p {
        Process::Client(k) => format!("client {k}"),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placed_operations_are_numbered_and_the_stuck_one_is_marked() {
        let mut h = vec![];
        for (i, (ms, p, kind, f)) in [
            (0, 1, EventType::Invoke, "acquire"),
            (5, 1, EventType::Ok, "acquire"),
            (10, 2, EventType::Invoke, "acquire"),
            (15, 2, EventType::Ok, "acquire"),
        ]
        .into_iter()
        .enumerate()
        {
            let mut e = Event::new(ms * 1_000_000, Process::Client(p), kind, f);
            e.index = i as u64;
            h.push(e);
        }
        let failure = PartitionFailure {
            partition: "ledger".into(),
            longest_prefix: vec![0],
            unplaceable: vec![2],
            state: "Some(1)".into(),
            rule: None,
        };
        let fig = render(&failure, &h).unwrap().into_string();
        assert!(fig.contains("<g class=\"op placed\"><title>#0 acquire — linearized as operation 1</title>"), "{fig}");
        assert!(fig.contains("<g class=\"op unplaceable\"><title>#2 acquire — cannot come next after the prefix</title>"), "{fig}");
        assert!(fig.contains(">client 1</text>") && fig.contains(">client 2</text>"), "{fig}");
        assert!(render(&PartitionFailure { unplaceable: vec![99], longest_prefix: vec![], ..failure }, &h).is_none());
    }
}
