//! The violations section: each property's evidence in words, with the events it involves.
//!
//! Evidence names events by `Event.index`; the events themselves come from the history, so a
//! reader sees times, processes, values and tokens without opening history.jsonl.

use super::secs;
use checker::{CheckResults, Event, ExactlyOnce, Interleaving, Process, ResourceSafety};
use maud::{html, Markup};
use std::collections::{HashMap, HashSet};

pub(super) fn section(c: &CheckResults, history: &[Event]) -> Markup {
    // One block per property; a new property with evidence adds a call here.
    html! {
        section id="violations" {
            h2 { "Violations" }
            (resource_safety(&c.resource_safety, history))
            @if c.exactly_once.applies { (exactly_once(&c.exactly_once, history)) }
        }
    }
}

fn resource_safety(rs: &ResourceSafety, history: &[Event]) -> Markup {
    html! {
        @if rs.lost_updates == 0 && rs.interleaved_sections == 0 && rs.acknowledged_missing == 0 {
            p class="good" { "No violation of resource safety." }
        } @else if rs.lost_updates == 0 && rs.interleaved_sections == 0 {
            p class="bad" { "Resource safety violated." }
        } @else {
            p class="bad" {
                "Resource safety violated: " (rs.interleaved_sections) " interleaved critical section(s), "
                (rs.lost_updates) " lost update(s)."
            }
        }
        @if rs.fenced_interleavings > 0 {
            p {
                (rs.fenced_interleavings) " critical section(s) overlapped another client's but their stale write was \
                 rejected by fencing: the lock failed, the resource held."
            }
        }
        @if rs.acknowledged_missing > 0 {
            p class="bad" {
                (rs.acknowledged_missing) " write(s) acknowledged to clients are not in the resource's record \
                 (lost with the resource's state, e.g. in a failover): events "
                @for (i, index) in rs.acknowledged_missing_evidence.iter().enumerate() {
                    @if i > 0 { ", " }
                    "#" (index)
                }
                "."
            }
        }
        @if !rs.evidence.is_empty() {
            @let events = lookup(history, &rs.evidence);
            ol class="violations" {
                @for ev in &rs.evidence { (interleaving(ev, &events)) }
            }
            @if rs.evidence_omitted > 0 {
                p { "… and " (rs.evidence_omitted) " more interleaved section(s), not listed." }
            }
        }
    }
}

fn exactly_once(o: &ExactlyOnce, history: &[Event]) -> Markup {
    let wanted: HashSet<u64> = o.applied_twice_evidence.iter().flat_map(|a| a.writes.iter().copied()).collect();
    let events: HashMap<u64, &Event> = history.iter().filter(|e| wanted.contains(&e.index)).map(|e| (e.index, e)).collect();
    html! {
        @if o.applied_twice == 0 && o.acknowledged_missing == 0 {
            p class="good" { "No operation applied twice; every acknowledged operation applied." }
        }
        @if o.applied_twice > 0 {
            p class="bad" { (o.applied_twice) " operation(s) applied more than once:" }
            ol class="violations" {
                @for a in &o.applied_twice_evidence {
                    li class="violation" {
                        "Operation “" (a.op) "” applied " (a.total) " times, by the database's record: "
                        @for (i, index) in a.writes.iter().enumerate() {
                            @if i > 0 { ", " }
                            "#" (index)
                            @if let Some(e) = events.get(index) {
                                " (client " (e.client.map(|c| c.to_string()).unwrap_or_default()) " at " (secs(e.time)) " s, value " (e.value) ")"
                            }
                        }
                        "."
                    }
                }
            }
            @if o.applied_twice > o.applied_twice_evidence.len() as u64 {
                p { "… and " (o.applied_twice - o.applied_twice_evidence.len() as u64) " more, not listed." }
            }
        }
        @if o.acknowledged_missing > 0 {
            p class="bad" {
                (o.acknowledged_missing) " operation(s) acknowledged to a client that the database never applied: events "
                @for (i, index) in o.acknowledged_missing_evidence.iter().enumerate() {
                    @if i > 0 { ", " }
                    "#" (index)
                }
                "."
            }
        }
    }
}

/// The events the evidence refers to, found in one pass (histories can be large; evidence is
/// bounded by the checker).
fn lookup<'a>(history: &'a [Event], evidence: &[Interleaving]) -> HashMap<u64, &'a Event> {
    let wanted: HashSet<u64> =
        evidence.iter().flat_map(|ev| [ev.read_index, ev.write_index].into_iter().chain(ev.other_writes.iter().map(|w| w.index))).collect();
    history.iter().filter(|e| wanted.contains(&e.index)).map(|e| (e.index, e)).collect()
}

fn interleaving(ev: &Interleaving, events: &HashMap<u64, &Event>) -> Markup {
    let others: Vec<String> = ev.clients.iter().filter(|c| **c != ev.client).map(|c| format!("client {c}")).collect();
    let others = if others.is_empty() { "other clients".to_string() } else { others.join(", ") };
    let plural = if ev.other_writes_total == 1 { "" } else { "s" };
    let unlisted = ev.other_writes_total.saturating_sub(ev.other_writes.len() as u64);
    html! {
        li class="violation" {
            p class="bad" {
                "Client " (ev.client) " read key “" (ev.key) "” (event #" (ev.read_index) ") and wrote it back (event #"
                (ev.write_index) "); the resource accepted that write although, in between, it had accepted "
                (ev.other_writes_total) " write" (plural) " by " (others) ". The stale write overwrote their increments: a lost update."
            }
            table class="events" {
                tr {
                    @for h in ["role", "#", "time (s)", "process", "client", "type", "f", "key", "value", "token", "error"] { th { (h) } }
                }
                (event_row("section read", ev.read_index, events))
                @for w in &ev.other_writes { (event_row("other write", w.index, events)) }
                @if unlisted > 0 {
                    tr { td colspan="11" { "… and " (unlisted) " more accepted write(s) by other clients" } }
                }
                (event_row("section write", ev.write_index, events))
            }
        }
    }
}

/// One history event as a table row; `role` says what the event is to the evidence.
fn event_row(role: &str, index: u64, events: &HashMap<u64, &Event>) -> Markup {
    let Some(e) = events.get(&index) else {
        return html! { tr { td { (role) } td { (index) } td colspan="9" { "not found in the history" } } };
    };
    html! {
        tr {
            td { (role) }
            td { (index) }
            td { (secs(e.time)) }
            td {
                @match &e.process {
                    Process::Client(c) => { "client " (c) }
                    Process::Named(n) => { (n) }
                }
            }
            td { @if let Some(c) = e.client { (c) } }
            td { (event_type(e)) }
            td { (e.f) }
            td { @if let Some(k) = &e.key { (k) } }
            td { @if !e.value.is_null() { (e.value.to_string()) } }
            td { @if let Some(t) = e.token { (t) } }
            td { @if let Some(err) = &e.error { (err) } }
        }
    }
}

fn event_type(e: &Event) -> &'static str {
    match e.kind {
        checker::EventType::Invoke => "invoke",
        checker::EventType::Ok => "ok",
        checker::EventType::Fail => "fail",
        checker::EventType::Info => "info",
    }
}
