//! The linearizability failure drawn as porcupine draws it: the operations around the point
//! where the search got stuck, a lane per process, each operation a bar from invoke to
//! completion; the end of the longest linearizable prefix in green (numbered in linearization
//! order) and the operations that could not come next in red.

use super::esc;
use checker::linearizability::PartitionFailure;
use checker::{Event, EventType, Process};
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

/// The figure for one failing partition; empty when its operations are not in the history.
pub(crate) fn render(failure: &PartitionFailure, history: &[Event]) -> String {
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
        return String::new();
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
    let mut svg = format!(
        "<svg class=\"linearizability\" viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" role=\"img\" aria-label=\"operations around the linearizability failure\">\n"
    );
    for (name, lane) in &lanes {
        let y = 20.0 + *lane as f64 * LANE;
        // lane-label is end-anchored (report.css), like the timeline's.
        svg.push_str(&format!("<text class=\"lane-label\" x=\"{:.1}\" y=\"{:.1}\">{}</text>\n", LEFT - 8.0, y + 13.0, esc(name)));
    }
    for op in &ops {
        let lane = lanes[&process_name(&op.invoke.process)];
        let y = 20.0 + lane as f64 * LANE;
        let (x0, x1) = (x(op.invoke.time), x(op.end).max(x(op.invoke.time) + 2.0));
        let (class, label) = match op.order {
            Some(n) => ("op placed", format!("{n}. {}", op.invoke.f)),
            None => ("op unplaceable", format!("✗ {}", op.invoke.f)),
        };
        let what = match op.order {
            Some(n) => format!("#{} {} — linearized as operation {n}", op.invoke.index, op.invoke.f),
            None => format!("#{} {} — cannot come next after the prefix", op.invoke.index, op.invoke.f),
        };
        // A bar too narrow for its label keeps it in the tooltip only, so labels never overlap.
        let text = if x1 - x0 >= 60.0 || op.order.is_none() {
            format!("<text x=\"{:.1}\" y=\"{:.1}\">{}</text>", x0 + 3.0, y + 13.0, esc(&label))
        } else {
            String::new()
        };
        svg.push_str(&format!(
            "<g class=\"{class}\"><title>{}</title><rect x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"18\"></rect>{text}</g>\n",
            esc(&what),
            x1 - x0,
        ));
    }
    svg.push_str("</svg>\n");
    format!(
        "<figure class=\"linearizability\">{svg}<figcaption>Partition {}: the last {} operation(s) of the longest linearizable prefix (green, in linearization order) and the {} operation(s) that could not come next (red). Model state after the prefix: {}.</figcaption></figure>\n",
        esc(&failure.partition),
        failure.longest_prefix.len() - skip,
        failure.unplaceable.len(),
        esc(&failure.state)
    )
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
        let failure =
            PartitionFailure { partition: "ledger".into(), longest_prefix: vec![0], unplaceable: vec![2], state: "Some(1)".into() };
        let fig = render(&failure, &h);
        assert!(fig.contains("<g class=\"op placed\"><title>#0 acquire — linearized as operation 1</title>"), "{fig}");
        assert!(fig.contains("<g class=\"op unplaceable\"><title>#2 acquire — cannot come next after the prefix</title>"), "{fig}");
        assert!(fig.contains(">client 1</text>") && fig.contains(">client 2</text>"), "{fig}");
        assert!(render(&PartitionFailure { unplaceable: vec![99], longest_prefix: vec![], ..failure }, &h).is_empty());
    }
}
