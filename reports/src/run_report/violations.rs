//! The violations section: each property's evidence in words, with the events it involves.
//!
//! Evidence names events by `Event.index`; the events themselves come from the history, so a
//! reader sees times, processes, values and tokens without opening history.jsonl.

use super::{esc, secs};
use checker::{CheckResults, Event, Interleaving, Process, ResourceSafety};
use std::collections::{HashMap, HashSet};

pub(super) fn section(c: &CheckResults, history: &[Event]) -> String {
    // One block per property; a new property with evidence adds a call here.
    let body = resource_safety(&c.resource_safety, history);
    format!("<section id=\"violations\">\n<h2>Violations</h2>\n{body}</section>\n")
}

fn resource_safety(rs: &ResourceSafety, history: &[Event]) -> String {
    let mut out = String::new();
    if rs.lost_updates == 0 && rs.interleaved_sections == 0 && rs.acknowledged_missing == 0 {
        out.push_str("<p class=\"good\">No violation of resource safety.</p>\n");
    } else if rs.lost_updates == 0 && rs.interleaved_sections == 0 {
        out.push_str("<p class=\"bad\">Resource safety violated.</p>\n");
    } else {
        out.push_str(&format!(
            "<p class=\"bad\">Resource safety violated: {} interleaved critical section(s), \
             {} lost update(s).</p>\n",
            rs.interleaved_sections, rs.lost_updates
        ));
    }
    if rs.fenced_interleavings > 0 {
        out.push_str(&format!(
            "<p>{} critical section(s) overlapped another client's but their stale write was \
             rejected by fencing: the lock failed, the resource held.</p>\n",
            rs.fenced_interleavings
        ));
    }
    if rs.acknowledged_missing > 0 {
        let listed: Vec<String> = rs.acknowledged_missing_evidence.iter().map(|i| format!("#{i}")).collect();
        out.push_str(&format!(
            "<p class=\"bad\">{} write(s) acknowledged to clients are not in the resource's record \
             (lost with the resource's state, e.g. in a failover): events {}.</p>\n",
            rs.acknowledged_missing,
            esc(&listed.join(", "))
        ));
    }
    if rs.evidence.is_empty() {
        return out;
    }
    let events = lookup(history, &rs.evidence);
    out.push_str("<ol class=\"violations\">\n");
    for ev in &rs.evidence {
        out.push_str(&interleaving(ev, &events));
    }
    out.push_str("</ol>\n");
    if rs.evidence_omitted > 0 {
        out.push_str(&format!("<p>&hellip; and {} more interleaved section(s), not listed.</p>\n", rs.evidence_omitted));
    }
    out
}

/// The events the evidence refers to, found in one pass (histories can be large; evidence is
/// bounded by the checker).
fn lookup<'a>(history: &'a [Event], evidence: &[Interleaving]) -> HashMap<u64, &'a Event> {
    let wanted: HashSet<u64> =
        evidence.iter().flat_map(|ev| [ev.read_index, ev.write_index].into_iter().chain(ev.other_writes.iter().map(|w| w.index))).collect();
    history.iter().filter(|e| wanted.contains(&e.index)).map(|e| (e.index, e)).collect()
}

fn interleaving(ev: &Interleaving, events: &HashMap<u64, &Event>) -> String {
    let others: Vec<String> = ev.clients.iter().filter(|c| **c != ev.client).map(|c| format!("client {c}")).collect();
    let others = if others.is_empty() { "other clients".to_string() } else { others.join(", ") };
    let plural = if ev.other_writes_total == 1 { "" } else { "s" };
    let mut rows = event_row("section read", ev.read_index, events);
    for w in &ev.other_writes {
        rows.push_str(&event_row("other write", w.index, events));
    }
    let unlisted = ev.other_writes_total.saturating_sub(ev.other_writes.len() as u64);
    if unlisted > 0 {
        rows.push_str(&format!("<tr><td colspan=\"11\">&hellip; and {unlisted} more accepted write(s) by other clients</td></tr>\n"));
    }
    rows.push_str(&event_row("section write", ev.write_index, events));
    format!(
        "<li class=\"violation\"><p class=\"bad\">Client {client} read key &ldquo;{key}&rdquo; \
         (event #{read}) and wrote it back (event #{write}); the resource accepted that write \
         although, in between, it had accepted {n} write{plural} by {others}. The stale write \
         overwrote their increments: a lost update.</p>\n<table class=\"events\">\n{head}{rows}</table></li>\n",
        client = ev.client,
        key = esc(&ev.key),
        read = ev.read_index,
        write = ev.write_index,
        n = ev.other_writes_total,
        head = EVENT_HEAD,
    )
}

const EVENT_HEAD: &str = "<tr><th>role</th><th>#</th><th>time (s)</th><th>process</th>\
<th>client</th><th>type</th><th>f</th><th>key</th><th>value</th><th>token</th><th>error</th></tr>\n";

/// One history event as a table row; `role` says what the event is to the evidence.
fn event_row(role: &str, index: u64, events: &HashMap<u64, &Event>) -> String {
    let Some(e) = events.get(&index) else {
        return format!("<tr><td>{role}</td><td>{index}</td><td colspan=\"9\">not found in the history</td></tr>\n");
    };
    let process = match &e.process {
        Process::Client(c) => format!("client {c}"),
        Process::Named(n) => esc(n),
    };
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let value = if e.value.is_null() { String::new() } else { esc(&e.value.to_string()) };
    format!(
        "<tr><td>{role}</td><td>{index}</td><td>{}</td><td>{process}</td><td>{}</td>\
         <td>{}</td><td>{}</td><td>{}</td><td>{value}</td><td>{}</td><td>{}</td></tr>\n",
        secs(e.time),
        opt(e.client),
        event_type(e),
        esc(&e.f),
        esc(e.key.as_deref().unwrap_or("")),
        opt(e.token),
        esc(e.error.as_deref().unwrap_or("")),
    )
}

fn event_type(e: &Event) -> &'static str {
    match e.kind {
        checker::EventType::Invoke => "invoke",
        checker::EventType::Ok => "ok",
        checker::EventType::Fail => "fail",
        checker::EventType::Info => "info",
    }
}
