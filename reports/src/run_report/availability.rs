//! The report's availability section: what the fault cost in time. How often and how fast the
//! lock was granted, the longest stretch without a grant (the workload's edges included), a
//! killed holder's lock and when it was freed, and the scenario's claimed figures beside what
//! was measured.

use super::secs;
use checker::{Availability, Percentiles};
use maud::{html, Markup};
use results::ClaimCheck;

pub(crate) fn section(a: &Availability, claims: &[ClaimCheck]) -> Markup {
    html! {
        section id="availability" {
            h2 { "Availability" }
            ul class="counts" {
                li { "acquires: " (a.attempts) " (granted " (a.granted) ", refused " (a.refused) ", unknown " (a.unknown) ")" }
                @if let Some(l) = a.latency_ms { li { "acquire latency: " (latency(l)) } }
                @if let (Some(ms), Some([from, to])) = (a.longest_gap_ms, a.longest_gap_between_ns) {
                    li { "longest time without a grant: " (format_args!("{ms:.0}")) " ms (" (secs(from)) " s to " (secs(to)) " s)" }
                }
                @if a.unavailable_at_end {
                    li class="bad" { "the lock was still unavailable when the workload ended: its last holder never released it, and every client that asked after that grant was refused" }
                }
            }
            @if !a.freed_after_kill.is_empty() {
                h3 { "Killed clients" }
                table {
                    tr { th { "client" } th { "killed at (s)" } th { "lock granted again after" } }
                    @for k in &a.freed_after_kill {
                        tr {
                            td { (k.client) }
                            td { (secs(k.killed_at_ns)) }
                            @match k.freed_after_ms {
                                Some(ms) => td { (format_args!("{ms:.0}")) " ms" },
                                None => td class="bad" { "never, to the end of the workload" },
                            }
                        }
                    }
                }
            }
            @if !claims.is_empty() {
                h3 { "Claimed figures" }
                table {
                    tr { th { "the scenario claims" } th { "measured" } th { "" } }
                    @for c in claims {
                        tr {
                            td { (c.claim) }
                            td { (c.measured) }
                            td class=(if c.met { "good" } else { "bad" }) { (if c.met { "holds" } else { "does NOT hold" }) }
                        }
                    }
                }
            }
        }
    }
}

fn latency(l: Percentiles) -> String {
    format!("p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms", l.p50, l.p99, l.max)
}
