use super::*;
use crate::history::{EventType, Process};
use EventType::*;

const BOUND: Duration = Duration::from_secs(10);

/// A history built by process, sorted by time (stably) when done.
#[derive(Default)]
struct H(Vec<Event>);

impl H {
    fn op(&mut self, ms: u64, p: u64, kind: EventType, f: &str) -> &mut Self {
        self.0.push(Event::new(ms * NS_PER_MS, Process::Client(p), kind, f));
        self
    }
    /// An invoke at `from` and its completion at `to`.
    fn call(&mut self, p: u64, f: &str, from: u64, to: u64, kind: EventType) -> &mut Self {
        self.op(from, p, Invoke, f).op(to, p, kind, f)
    }
    /// Acquires refused every 500 ms (each taking 400 ms), from `from` until `until`.
    fn refused(&mut self, p: u64, from: u64, until: u64) -> &mut Self {
        for t in (from..until).step_by(500) {
            self.call(p, "acquire", t, (t + 400).min(until), Fail);
        }
        self
    }
    fn fault(&mut self, ms: u64, f: &str, node: &str, phase: &str, error: Option<&str>) -> &mut Self {
        let mut e = Event::new(ms * NS_PER_MS, Process::Named(Process::NEMESIS.into()), Info, f);
        e.node = Some(node.into());
        e.value = phase.into();
        e.error = error.map(str::to_string);
        self.0.push(e);
        self
    }
    fn events(&self) -> Vec<Event> {
        let mut events = self.0.clone();
        events.sort_by_key(|e| e.time);
        for (i, e) in events.iter_mut().enumerate() {
            e.index = i as u64;
        }
        events
    }
    fn check(&self) -> Stuck {
        check_stuck(&self.events(), BOUND, 10)
    }
}

fn s(ms: u64) -> u64 {
    ms * NS_PER_MS
}

#[test]
fn a_failed_release_then_everyone_waiting_is_stuck() {
    let mut h = H::default();
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 2000, 2100, Info);
    h.0.last_mut().unwrap().error = Some("connection reset".into());
    h.refused(2, 50, 20_000).refused(3, 300, 20_000);
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Invalid);
    assert!(r.applies);
    assert_eq!((r.bound_ms, r.stuck_stretches, r.evidence_omitted), (10_000, 1, 0));
    let st = &r.stretches[0];
    assert_eq!((st.from_ns, st.to_ns, st.length_ms), (s(2100), s(20_000), 17_900.0));
    assert_eq!((st.freed_by, st.ended_by, st.granted_to), (FreedBy::ReleaseFailed, StretchEnd::EndOfHistory, None));
    assert_eq!(
        st.last_holder,
        Some(HoldEnding { process: 1, ended: HoldEnd::ReleaseFailed, at_ns: s(2100), error: Some("connection reset".into()) })
    );
    assert_eq!(st.waiting, [2, 3]);
    assert_eq!(r.longest_stuck_ms, 17_900.0);
}

/// Two clients taking turns for a minute: each released lock is granted to the other 10 ms
/// later.
fn contended() -> H {
    let mut h = H::default();
    h.call(1, "acquire", 0, 10, Ok);
    let mut t = 10;
    for round in 0..200 {
        let (holder, waiter) = if round % 2 == 0 { (1, 2) } else { (2, 1) };
        h.op(t + 5, waiter, Invoke, "acquire");
        h.call(holder, "release", t + 290, t + 300, Ok);
        h.op(t + 310, waiter, Ok, "acquire");
        t += 300;
    }
    h.call(1, "release", t + 290, t + 300, Ok);
    h
}

#[test]
fn a_contended_run_is_not_stuck() {
    let r = contended().check();
    assert_eq!(r.verdict, Verdict::Valid, "{r:?}");
    assert!(r.stretches.is_empty());
    // The bound is in time, not in events: the same run checked against 5 ms is stuck
    // between every release and the next grant.
    let tight = check_stuck(&contended().events(), Duration::from_millis(5), 3);
    // (and from the first invoke to the first grant).
    assert_eq!((tight.verdict, tight.stuck_stretches, tight.stretches.len()), (Verdict::Invalid, 201, 3));
    assert_eq!(tight.evidence_omitted, 198);
}

#[test]
fn a_live_holder_holding_long_is_not_stuck() {
    let mut h = H::default();
    // Client 1 holds for 30 s and says nothing until its release.
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 30_000, 30_010, Ok);
    h.refused(2, 50, 30_000).call(2, "acquire", 30_000, 30_020, Ok).call(2, "release", 30_300, 30_310, Ok);
    assert_eq!(h.check().verdict, Verdict::Valid, "{:?}", h.check());
}

/// Client 1 releases at 2 s; client 2 asks all along and is granted at `granted_at`.
fn freed_late(granted_at: u64) -> H {
    let mut h = H::default();
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 1990, 2000, Ok);
    h.refused(2, 50, granted_at - 100).call(2, "acquire", granted_at - 100, granted_at, Ok);
    h.call(2, "release", granted_at + 300, granted_at + 310, Ok);
    h
}

#[test]
fn a_lock_freed_late_is_stuck_only_past_the_bound() {
    let r = freed_late(14_000).check();
    assert_eq!(r.verdict, Verdict::Invalid);
    let st = &r.stretches[0];
    assert_eq!((st.from_ns, st.to_ns, st.length_ms), (s(2000), s(14_000), 12_000.0));
    assert_eq!((st.freed_by, st.ended_by, st.granted_to), (FreedBy::ReleaseOk, StretchEnd::Grant, Some(2)));
    assert_eq!(st.waiting, [2]);

    let r = freed_late(10_000).check();
    assert_eq!((r.verdict, r.stuck_stretches), (Verdict::Valid, 0), "8 s is within the bound");
}

/// Client 1's release fails at 2 s, client 2 asks and is granted at 28.5 s.
fn waited_out(h: &mut H) -> &mut H {
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 1900, 2000, Info);
    h.refused(2, 50, 28_400).call(2, "acquire", 28_400, 28_500, Ok).call(2, "release", 28_800, 28_810, Ok)
}

#[test]
fn unavailable_only_while_a_fault_is_active_is_not_stuck() {
    let mut h = H::default();
    waited_out(&mut h).fault(1500, "partition", "n1", "start", None).fault(28_000, "partition", "n1", "stop", None);
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Valid, "{r:?}");

    // Without the fault, the same history is stuck from the release.
    let r = waited_out(&mut H::default()).check();
    assert_eq!((r.verdict, r.stretches[0].from_ns), (Verdict::Invalid, s(2000)));

    // A start that failed, or a skipped step, was no fault; another fault's stop heals nothing.
    let mut h = H::default();
    waited_out(&mut h)
        .fault(1500, "partition", "n1", "start", Some("iptables: permission denied"))
        .fault(1500, "pause", "n1", "skipped", Some("the same fault was active"))
        .fault(1600, "pause", "n2", "start", None)
        .fault(3000, "pause", "n1", "stop", None)
        .fault(5000, "pause", "n2", "stop", None);
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Invalid);
    let st = &r.stretches[0];
    assert_eq!((st.from_ns, st.freed_by), (s(5000), FreedBy::FaultHealed));
    assert_eq!(st.healed_fault, Some(FaultRef { f: "pause".into(), node: Some("n2".into()) }));
    assert_eq!(st.last_holder.as_ref().map(|h| (h.process, h.ended)), Some((1, HoldEnd::ReleaseFailed)));
}

#[test]
fn a_fault_starting_ends_a_stretch() {
    let mut h = H::default();
    waited_out(&mut h).fault(14_000, "partition", "n1", "start", None).fault(16_000, "partition", "n1", "stop", None);
    let r = h.check();
    assert_eq!(r.stuck_stretches, 2, "{r:?}");
    let ends: Vec<_> = r.stretches.iter().map(|st| (st.from_ns, st.to_ns, st.freed_by, st.ended_by)).collect();
    assert_eq!(
        ends,
        [
            (s(2000), s(14_000), FreedBy::ReleaseFailed, StretchEnd::FaultStarted),
            (s(16_000), s(28_500), FreedBy::FaultHealed, StretchEnd::Grant)
        ]
    );
}

/// Client 1 is granted the lock at 1 s and says nothing more; clients 2 and 3 ask until 20 s.
fn killed_holder(h: &mut H) -> &mut H {
    h.call(1, "acquire", 990, 1000, Ok).refused(2, 0, 20_000).refused(3, 3100, 20_000)
}

#[test]
fn a_killed_holders_lock_never_freed_is_stuck() {
    let r = killed_holder(&mut H::default()).check();
    assert_eq!(r.verdict, Verdict::Invalid);
    let st = &r.stretches[0];
    assert_eq!((st.from_ns, st.to_ns, st.freed_by, st.ended_by), (s(1000), s(20_000), FreedBy::HolderGone, StretchEnd::EndOfHistory));
    assert_eq!(st.last_holder, Some(HoldEnding { process: 1, ended: HoldEnd::HolderGone, at_ns: s(1000), error: None }));
    assert_eq!(st.waiting, [2, 3]);

    // Killed by the nemesis and started again as process 3: the stretch begins at the
    // restart (the kill's heal), and still names the holder that went.
    let mut h = H::default();
    killed_holder(&mut h).fault(1500, "kill", "client-1", "start", None).fault(3000, "kill", "client-1", "stop", None);
    let r = h.check();
    let st = &r.stretches[0];
    assert_eq!((st.from_ns, st.freed_by), (s(3000), FreedBy::FaultHealed));
    assert_eq!(st.healed_fault, Some(FaultRef { f: "kill".into(), node: Some("client-1".into()) }));
    assert_eq!(st.last_holder.as_ref().map(|h| (h.process, h.ended, h.at_ns)), Some((1, HoldEnd::HolderGone, s(1000))));
}

#[test]
fn a_stretch_reads_as_a_sentence() {
    let mut h = H::default();
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 2000, 2100, Info).refused(2, 50, 13_000).refused(3, 300, 13_000);
    h.0[3].error = Some("connection reset".into());
    h.call(2, "acquire", 13_000, 14_000, Ok).call(2, "release", 14_100, 14_110, Ok);
    assert_eq!(
        h.check().stretches[0].in_words(),
        "from 2.1 s to 14.0 s (11.9 s) the lock was free and nobody was granted it while clients 2, 3 asked; \
         it began when client 1's release failed (connection reset); it ended when client 2 was granted it"
    );
    let mut h = H::default();
    killed_holder(&mut h).fault(1500, "kill", "client-1", "start", None).fault(3000, "kill", "client-1", "stop", None);
    assert_eq!(
        h.check().stretches[0].in_words(),
        "from 3.0 s to 20.0 s (17.0 s) the lock was free and nobody was granted it while clients 2, 3 asked; \
         it began when kill on client-1 was healed (before that, at 1.0 s, client 1 stopped while holding it: no release, \
         no more events); it lasted to the end of the history"
    );
}

#[test]
fn a_release_ok_that_leaves_the_lock_taken_is_stuck() {
    let mut h = H::default();
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 1990, 2000, Ok).refused(1, 2100, 20_000).refused(2, 50, 20_000);
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Invalid);
    let st = &r.stretches[0];
    assert_eq!((st.from_ns, st.freed_by, st.ended_by), (s(2000), FreedBy::ReleaseOk, StretchEnd::EndOfHistory));
    assert_eq!(st.waiting, [1, 2]);
}

#[test]
fn asking_only_before_the_bound_passed_is_not_stuck() {
    // Free from 2 s to 20 s, but client 2 gave up at 5 s.
    let mut h = H::default();
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 1990, 2000, Info).refused(2, 50, 5000).op(20_000, 1, Ok, "read");
    assert_eq!(h.check().verdict, Verdict::Valid);
    // Asking once more at 12.5 s is still wanting it after the bound.
    h.call(2, "acquire", 12_500, 12_600, Fail);
    assert_eq!(h.check().verdict, Verdict::Invalid);
}

#[test]
fn a_lock_nobody_asked_for_is_not_stuck_however_long_it_was_free() {
    // Free from 2 s; nobody asks until 19.9 s, and that ask is granted at once.
    let mut h = H::default();
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 1990, 2000, Ok).call(2, "acquire", 19_900, 19_901, Ok);
    h.call(2, "release", 19_950, 19_960, Ok);
    assert_eq!(h.check().verdict, Verdict::Valid, "{:?}", h.check());
    // Asked from 5 s on, granted only at 19.9 s: stuck.
    let mut h = H::default();
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 1990, 2000, Ok).refused(2, 5000, 19_800).call(2, "acquire", 19_850, 19_901, Ok);
    h.call(2, "release", 19_950, 19_960, Ok);
    assert_eq!(h.check().verdict, Verdict::Invalid);
}

#[test]
fn a_short_free_stretch_at_the_end_with_a_refused_waiter_is_unknown() {
    let mut h = H::default();
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 14_990, 15_000, Info).refused(2, 100, 20_000);
    let r = h.check();
    assert_eq!((r.verdict, r.stuck_stretches), (Verdict::Unknown, 0), "{r:?}");
    assert!(r.notes[0].contains("5.0 s after the lock became free (at 15.0 s)"), "{:?}", r.notes);

    // A waiter still pending at the end came to nothing too.
    let mut h = H::default();
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 14_990, 15_000, Ok).op(50, 2, Invoke, "acquire").op(20_000, 1, Ok, "read");
    assert_eq!(h.check().verdict, Verdict::Unknown);

    // Nobody asking at the end: nothing in doubt.
    let mut h = H::default();
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 14_990, 15_000, Info).refused(2, 50, 14_000).op(20_000, 2, Ok, "read");
    assert_eq!(h.check().verdict, Verdict::Valid);
}

#[test]
fn a_history_without_acquires_does_not_apply() {
    let mut h = H::default();
    h.call(1, "apply", 0, 10, Ok).call(2, "apply", 20, 30_000, Info).fault(5, "pause", "n1", "start", None);
    let r = h.check();
    assert!(!r.applies);
    assert_eq!(r.verdict, Verdict::Valid);
    let r = check_stuck(&[], BOUND, 10);
    assert_eq!((r.applies, r.verdict), (false, Verdict::Valid));
}

#[test]
fn a_stretch_from_the_start_and_the_words_it_serialises_in() {
    // Nobody is granted the lock for 12 s from the first event.
    let mut h = H::default();
    h.refused(1, 0, 12_000).call(1, "acquire", 12_000, 12_100, Ok).call(1, "release", 12_200, 12_210, Ok);
    let r = h.check();
    assert_eq!(r.stretches[0].freed_by, FreedBy::Start);
    assert_eq!(r.stretches[0].last_holder, None);
    let json = serde_json::to_value(&r.stretches[0]).unwrap();
    assert_eq!((json["freed_by"].as_str(), json["ended_by"].as_str()), (Some("start"), Some("grant")));
    assert_eq!(serde_json::to_value(FreedBy::ReleaseFailed).unwrap(), "release-failed");
    assert_eq!(serde_json::to_value(StretchEnd::EndOfHistory).unwrap(), "end-of-history");
}

#[test]
fn several_keys_are_judged_as_one_lock_with_a_note() {
    let mut h = H::default();
    h.call(1, "acquire", 0, 10, Ok).call(1, "release", 20, 30, Ok).call(2, "acquire", 40, 50, Ok).call(2, "release", 60, 70, Ok);
    h.0[0].key = Some("a".into());
    h.0[4].key = Some("b".into());
    let r = h.check();
    assert_eq!(r.verdict, Verdict::Valid);
    assert!(r.notes[0].contains("2 keys"), "{:?}", r.notes);
}
