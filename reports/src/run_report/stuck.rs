//! The report's stuck section: the stretches in which the lock was free, nobody was granted it
//! and clients still asked past the bound (the checker's `stuck` property, informational), each
//! in words: when, who asked, what freed the lock before it, how it ended.

use super::verdict_class;
use checker::Stuck;
use maud::{html, Markup};

/// Nothing for a run whose clients never asked for a lock (or an older results.json).
pub(crate) fn section(s: &Stuck) -> Markup {
    if !s.applies {
        return html! {};
    }
    html! {
        section id="stuck" {
            h2 { "Stuck" }
            p {
                "Whether the lock stayed free with clients asking and nobody granted it for longer than "
                (format_args!("{:.1}", s.bound_ms as f64 / 1000.0)) " s, with no fault active: "
                span class=(verdict_class(s.verdict)) { (s.verdict) }
                ". Informational: liveness, not part of the outcome."
            }
            @if s.stretches.is_empty() && s.verdict == checker::Verdict::Valid {
                p { "The lock was never stuck." }
            }
            @if !s.stretches.is_empty() {
                ol class="stuck" {
                    @for st in &s.stretches { li { (st.in_words()) } }
                }
            }
            @if s.evidence_omitted > 0 {
                p class="note" { (s.evidence_omitted) " more stuck stretch(es) not listed." }
            }
            @if !s.notes.is_empty() {
                ul class="notes" { @for n in &s.notes { li { (n) } } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::{check, CheckOptions, Event, EventType, Process};
    use results::{Expectation, Outcome, RunResults};

    const MS: u64 = 1_000_000;

    /// Client 1's release fails at 2 s with `error`; client 2 asks and is refused to 20 s.
    fn stuck_history(error: &str) -> Vec<Event> {
        let op = |ms: u64, p: u64, kind: EventType, f: &str| Event::new(ms * MS, Process::Client(p), kind, f);
        let mut events = vec![op(0, 1, EventType::Invoke, "acquire"), op(10, 1, EventType::Ok, "acquire")];
        events.push(op(1900, 1, EventType::Invoke, "release"));
        let mut failed = op(2000, 1, EventType::Info, "release");
        failed.error = Some(error.into());
        events.push(failed);
        for t in (2100..20_000).step_by(500) {
            events.extend([op(t, 2, EventType::Invoke, "acquire"), op(t + 400, 2, EventType::Fail, "acquire")]);
        }
        for (i, e) in events.iter_mut().enumerate() {
            e.index = i as u64;
        }
        events
    }

    fn results(history: &[Event]) -> RunResults {
        let properties = check(history, &CheckOptions::default());
        RunResults {
            scenario: "s".into(),
            description: "d".into(),
            expect: Expectation::Safe,
            outcome: Outcome::of_verdict(properties.outcome),
            matches_expectation: false,
            run_id: "r".into(),
            backend: "b".into(),
            seed: 1,
            clients: 2,
            time_limit_secs: 20,
            started_at: "2026-01-01T00:00:00Z".into(),
            duration_secs: 20.0,
            interrupted: false,
            workers: vec![],
            warnings: vec![],
            not_applied: vec![],
            refused_requests: Default::default(),
            unknown_cause: None,
            properties,
            claims: vec![],
        }
    }

    #[test]
    fn a_stuck_run_shows_each_stretch_in_words_and_on_the_timeline() {
        let history = stuck_history("connection reset");
        let page = super::super::render(&results(&history), &history);
        assert!(page.contains(r#"<section id="stuck">"#), "{page}");
        assert!(page.contains("longer than 10.0 s, with no fault active: <span class=\"bad\">invalid</span>"), "{page}");
        assert!(
            page.contains(
                "<li>from 2.0 s to 20.0 s (18.0 s) the lock was free and nobody was granted it while client 2 asked; \
                 it began when client 1's release failed (connection reset); it lasted to the end of the history</li>"
            ),
            "{page}"
        );
        assert!(page.contains(r#"<rect class="stuck""#), "the stretch is marked on the timeline");
        assert!(page.contains("sw stuck"), "and in its legend");
        // In the properties table, marked informational.
        assert!(page.contains("stuck stretches: 1"), "{page}");
    }

    #[test]
    fn the_words_from_the_run_are_escaped() {
        let history = stuck_history("<script>alert(1)</script>");
        let page = super::super::render(&results(&history), &history);
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    }

    #[test]
    fn no_section_without_a_lock_nor_a_band_without_a_stretch() {
        assert_eq!(section(&Stuck::not_checked()).into_string(), "");
        let calm = check(&stuck_history("e")[..6], &CheckOptions::default());
        assert!(calm.stuck.applies && calm.stuck.stretches.is_empty());
        let page = section(&calm.stuck).into_string();
        assert!(page.contains("id=\"stuck\"") && !page.contains("<ol"), "{page}");
    }
}
