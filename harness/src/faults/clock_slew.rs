//! Clock slew on a node's server: while the fault lasts its clock runs `rate` times as fast as
//! true time (libfaketime's `x` modifier), as a drifting oscillator does, instead of jumping.
//! The clock stays continuous when the slew starts and when it stops; what it gained stays.
//!
//! libfaketime scales the time elapsed since *it started in the process* (s), not since the
//! modifier was written: with offset `o` and rate `r` the server reads t + o + (r − 1)(t − s).
//! So the start writes o = b − (r − 1)(t₀ − s), where b is the offset in force at t₀, and the
//! stop writes o + (r − 1)(t₁ − s) with rate 1: both equal the clock just before the switch.
//! t − s comes from /proc (the server's start time and the uptime), computed by the script in
//! the node at the moment it writes the offset file. Its error (10 ms ticks, and the daemon
//! forks a little after libfaketime started in it) leaves a jump of (r − 1) × that error: about
//! a millisecond at 1.05, up to ~20 ms measured at 2x.
//!
//! Measured, not assumed: around each switch the script reads the server's own clock (the
//! backend's `server_clock` capability: Redis's TIME) against the node's true time, and the
//! history's start and stop records carry the jumps and the time the clock gained. A slew whose
//! clock did not gain (at least half) what its rate says, or whose gain could not be measured,
//! is reported as not taken effect ([`super::NotInEffect`]): the run ends unknown.
//!
//! A restart of the server while it slews starts libfaketime again (a new s): do not combine a
//! slew with a kill or another clock fault on the same node.

use super::clock_jump::clock_capability;
use super::{node_target, BackendView, FaultAction, FaultContext, NotInEffect, StepError};
use crate::libfaketime::OFFSET_FILE;
use crate::target::Target;
use anyhow::Context;
use serde::{Deserialize, Serialize};

/// What the start of a slew left in the node for its stop: the offset it wrote, the rate, and
/// the clock's offset and the true time measured just after the switch.
const STATE_FILE: &str = "/tmp/lockchaos-slew";

/// Rates are carried as parts per million, so the script in the node (integer shell
/// arithmetic) and this file compute the same offsets.
const PPM: i64 = 1_000_000;

/// Below this, what the clock gained cannot be told from the measuring noise (a few ms).
const LEAST_MEASURABLE_GAIN_US: i64 = 10_000;

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClockSlew {
    /// How fast the target node's server clock runs against true time while the fault lasts:
    /// 1.05 gains 50 ms a second; below 1 it runs slow. Between 0.1 and 10, not 1.
    pub rate: f64,
}

/// `rate` in parts per million.
pub fn rate_ppm(rate: f64) -> i64 {
    (rate * PPM as f64).round() as i64
}

/// What a clock running at `ppm` gains (negative: loses) over `elapsed_us` of true time.
pub fn gain_us(elapsed_us: i64, ppm: i64) -> i64 {
    elapsed_us * (ppm - PPM) / PPM
}

/// The offset (µs) to write when the slew starts (`starting`) or stops, `elapsed_cs`
/// centiseconds after libfaketime started in the server, so that its clock does not jump:
/// `offset_us` is the offset in force before the switch (the base offset at the start, the
/// slew's own offset at the stop). The node's script computes the same with shell arithmetic
/// (see [`switch_script`]).
pub fn continuous_offset_us(offset_us: i64, elapsed_cs: i64, ppm: i64, starting: bool) -> i64 {
    let drift = gain_us(elapsed_cs * 10_000, ppm);
    if starting {
        offset_us - drift
    } else {
        offset_us + drift
    }
}

/// libfaketime's text for an offset (µs) and a rate: `+1.250000s x1.050000`. The rate is
/// always written: libfaketime keeps the last rate it read until another `x` replaces it.
pub fn offset_text(offset_us: i64, ppm: i64) -> String {
    let sign = if offset_us < 0 { '-' } else { '+' };
    let abs = offset_us.unsigned_abs();
    format!("{sign}{}.{:06}s x{}.{:06}", abs / 1_000_000, abs % 1_000_000, ppm / PPM, ppm % PPM)
}

/// The offset (µs) in an offset file's text as lockchaos writes it (`+0`, `+20s`, `-1.500s`,
/// `+1.250000s x1.000000`), and its rate in ppm (1 000 000 without one).
pub fn parse_offset(text: &str) -> anyhow::Result<(i64, i64)> {
    let mut words = text.split_whitespace();
    let offset = words.next().context("the offset file is empty")?;
    let secs: f64 = offset.trim_end_matches('s').parse().with_context(|| format!("offset `{offset}` is not a number of seconds"))?;
    let ppm = match words.next() {
        None => PPM,
        Some(rate) => {
            let r: f64 =
                rate.strip_prefix('x').and_then(|r| r.parse().ok()).with_context(|| format!("`{rate}` is not a rate (x1.05)"))?;
            rate_ppm(r)
        }
    };
    Ok(((secs * 1e6).round() as i64, ppm))
}

/// The bash script that switches the rate in the node: measures the server clock's offset
/// against the node's true time, computes the offset for this instant (as
/// [`continuous_offset_us`]), writes it atomically, measures again, and prints
/// `before_offset_us before_real_us before_spread_us after_… written written_at_us`, a
/// measurement that failed being `- - -`. `clock` prints the server's clock as seconds and
/// microseconds on two lines. A measurement is the best of three reads (the one with the
/// shortest round trip, as NTP picks), its true time the round trip's middle and its spread
/// half the round trip: the server read its clock somewhere within it. No single quotes
/// inside: the exec passes it as one argument.
pub fn switch_script(process: &str, clock: &[&str], offset_us: i64, ppm: i64, starting: bool) -> String {
    let clock = clock.join(" ");
    format!(
        "probe() {{ best=; for i in 1 2 3; do a=${{EPOCHREALTIME/./}}; t=$({clock} 2>/dev/null); \
         b=${{EPOCHREALTIME/./}}; set -- $t; [ $# -eq 2 ] || continue; w=$(( b - a )); \
         if [ -z \"$best\" ] || [ $w -lt $bw ]; then bw=$w; \
         best=\"$(( $1 * 1000000 + $2 - (a + b) / 2 )) $(( (a + b) / 2 )) $(( w / 2 ))\"; fi; done; \
         echo ${{best:-- - -}}; }}; \
         pid=$(pgrep -o -x {process}) || {{ echo \"{process} is not running\" >&2; exit 1; }}; \
         before=$(probe); \
         tck=$(getconf CLK_TCK); st=$(sed \"s/.*) //\" /proc/$pid/stat | cut -d\" \" -f20); \
         up=$(cut -d\" \" -f1 /proc/uptime); up=${{up%.*}}${{up#*.}}; \
         el=$(( up - st * 100 / tck )); \
         {offset_shell} \
         echo \"$text\" > {OFFSET_FILE}.new && mv {OFFSET_FILE}.new {OFFSET_FILE}; \
         at=${{EPOCHREALTIME/./}}; after=$(probe); \
         echo $before $after $o $at",
        offset_shell = switch_offset_shell(offset_us, ppm, starting),
    )
}

/// The shell lines that set `$o` and `$text` to the offset a switch writes, from `$el` (the
/// server's age in centiseconds): [`continuous_offset_us`] in shell arithmetic.
fn switch_offset_shell(offset_us: i64, ppm: i64, starting: bool) -> String {
    let op = if starting { '-' } else { '+' };
    offset_shell(&format!("{offset_us} {op} $el * 10000 * ({ppm} - {PPM}) / {PPM}"), if starting { ppm } else { PPM })
}

/// The shell lines that set `$o` to `expr` (µs) and `$text` to its offset text at rate `ppm`,
/// as [`offset_text`] writes it.
fn offset_shell(expr: &str, ppm: i64) -> String {
    format!(
        "o=$(( {expr} )); m=$o; s=+; if [ $m -lt 0 ]; then s=-; m=$(( -m )); fi; \
         text=$(printf \"%s%d.%06ds x%d.%06d\" $s $(( m / 1000000 )) $(( m % 1000000 )) {} {});",
        ppm / PPM,
        ppm % PPM
    )
}

/// One read of the server's clock against the node's true time, all in µs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    /// Server clock − true time.
    pub offset: i64,
    /// The true time of the read (the middle of its round trip).
    pub real: i64,
    /// Half its round trip: the read happened within ± this of `real`.
    pub spread: i64,
}

/// One switch as measured in the node.
#[derive(Debug, PartialEq)]
pub struct Switch {
    /// The reads just before and just after the offset file was written; None when the clock
    /// could not be read.
    pub before: Option<Reading>,
    pub after: Option<Reading>,
    /// The offset written (µs), and the true time (µs) just after it was.
    pub written_us: i64,
    pub written_at: i64,
}

impl Switch {
    pub fn parse(out: &str) -> anyhow::Result<Switch> {
        let words: Vec<&str> = out.split_whitespace().collect();
        let [b_off, b_real, b_spread, a_off, a_real, a_spread, written, at] = words[..] else {
            anyhow::bail!("the slew's switch printed `{}`, not eight words", out.trim());
        };
        let reading = |off: &str, real: &str, spread: &str| {
            Some(Reading { offset: off.parse().ok()?, real: real.parse().ok()?, spread: spread.parse().ok()? })
        };
        Ok(Switch {
            before: reading(b_off, b_real, b_spread),
            after: reading(a_off, a_real, a_spread),
            written_us: written.parse().with_context(|| format!("offset `{written}`"))?,
            written_at: at.parse().with_context(|| format!("time `{at}`"))?,
        })
    }

    /// The jump the switch made (µs), and how far off that can be: the change of offset
    /// between the reads, less what the clock gained meanwhile at the rate in force before the
    /// write (`ppm_before`) and after it (`ppm_after`). At 2x, 20 ms between the reads are a
    /// 20 ms change of offset that is no jump.
    pub fn jump_us(&self, ppm_before: i64, ppm_after: i64) -> Option<(i64, i64)> {
        let (b, a) = (self.before?, self.after?);
        let drift = gain_us(self.written_at - b.real, ppm_before) + gain_us(a.real - self.written_at, ppm_after);
        Some((a.offset - b.offset - drift, a.spread + b.spread))
    }
}

/// The words of a jump for the history: `+0.4 ms (± 0.9 ms)`, or `not measured`.
fn jump_text(jump: Option<(i64, i64)>) -> String {
    match jump {
        Some((us, within)) => format!("{:+.1} ms (± {:.1} ms)", us as f64 / 1000.0, within as f64 / 1000.0),
        None => "not measured (the server's clock could not be read)".into(),
    }
}

/// Whether the clock gained what the rate says over the slew: `gained_us` measured,
/// `expected_us` from the rate and the true time between the two measurements. Ok with the
/// words for the history, or why the slew cannot count as having happened.
pub fn judge_gain(gained_us: i64, expected_us: i64) -> Result<String, String> {
    let words = format!("gained {:+.1} ms (the rate says {:+.1} ms)", gained_us as f64 / 1000.0, expected_us as f64 / 1000.0);
    if expected_us.abs() < LEAST_MEASURABLE_GAIN_US {
        return Err(format!("{words}: too little to tell from the measuring noise, so the slew cannot be shown to have happened"));
    }
    // Same sign and at least half of it: a clock that did not move gains ~0.
    if gained_us.signum() != expected_us.signum() || gained_us.abs() * 2 < expected_us.abs() {
        return Err(format!("{words}: the server's clock did not run at the slew's rate"));
    }
    Ok(words)
}

impl ClockSlew {
    async fn switch(&self, ctx: &FaultContext<'_>, target: &str, offset_us: i64, starting: bool) -> anyhow::Result<Switch> {
        let clock = ctx.backend.server_clock().map_err(|why| anyhow::anyhow!("cannot read the server's clock: {why}"))?;
        let script = switch_script(ctx.backend.server_process(), clock, offset_us, rate_ppm(self.rate), starting);
        let out = ctx.cluster.exec_ok(target, &["bash", "-c", &script]).await?;
        Switch::parse(&out)
    }
}

#[async_trait::async_trait]
impl FaultAction for ClockSlew {
    fn detail(&self) -> Option<String> {
        Some(format!("x{}", self.rate))
    }

    fn check(&self, target: &Target) -> Result<(), StepError> {
        node_target("clock-slew", target)?;
        if !(0.1..=10.0).contains(&self.rate) || rate_ppm(self.rate) == PPM {
            return Err(("rate", format!("a clock-slew needs a `rate` between 0.1 and 10 other than 1, not {}", self.rate)));
        }
        Ok(())
    }

    fn check_backend(&self, _target: &Target, backend: &BackendView<'_>) -> Result<(), StepError> {
        clock_capability(backend)?;
        backend
            .setup
            .server_clock()
            .map(|_| ())
            .map_err(|why| ("fault", format!("a clock-slew must measure the server's clock, and {} cannot: {why}", backend.name)))
    }

    fn moves_clocks(&self) -> bool {
        true
    }

    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        self.inject_measured(ctx, target).await.map(|_| ())
    }

    async fn inject_measured(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<Option<String>> {
        let current = ctx.cluster.exec_ok(target, &["cat", OFFSET_FILE]).await?;
        let (base_us, ppm) = parse_offset(&current)?;
        if ppm != PPM {
            anyhow::bail!("{target}'s clock already runs at another rate (`{}`)", current.trim());
        }
        let switch = self.switch(ctx, target, base_us, true).await?;
        let Some(after) = switch.after else {
            anyhow::bail!("the slew was written, but the server's clock could not be read after it");
        };
        let state = format!("{} {} {} {}", switch.written_us, rate_ppm(self.rate), after.offset, after.real);
        ctx.cluster.exec_ok(target, &["sh", "-c", &format!("echo {state} > {STATE_FILE}")]).await?;
        Ok(Some(format!("began with a jump of {}", jump_text(switch.jump_us(PPM, rate_ppm(self.rate))))))
    }

    async fn heal(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        self.heal_measured(ctx, target).await.map(|_| ())
    }

    async fn heal_measured(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<Option<String>> {
        let (code, state) = ctx.cluster.exec(target, &["cat", STATE_FILE]).await?;
        if code != 0 {
            // The start failed (its failure is already named). If it failed after writing its
            // rate, the clock runs fast: stop it, unmeasured, or it would run so to the end.
            let current = ctx.cluster.exec_ok(target, &["cat", OFFSET_FILE]).await?;
            let (offset_us, ppm) = parse_offset(&current)?;
            if ppm == PPM {
                return Ok(None);
            }
            self.switch(ctx, target, offset_us, false).await?;
            return Ok(Some("stopped a slew whose start failed after writing its rate (not measured)".into()));
        }
        let words: Vec<i64> = state.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        let [written_us, ppm, start_off, start_real] = words[..] else {
            anyhow::bail!("{STATE_FILE} in {target} reads `{}`", state.trim());
        };
        let switch = match self.switch(ctx, target, written_us, false).await {
            Ok(switch) => switch,
            Err(e) => return Err(NotInEffect(format!("the slew could not be stopped and measured: {e:#}")).into()),
        };
        ctx.cluster.exec_ok(target, &["rm", "-f", STATE_FILE]).await?;
        let Some(Reading { offset: end_off, real: end_real, .. }) = switch.before else {
            return Err(NotInEffect("the server's clock could not be read at the end of the slew".into()).into());
        };
        let judged = judge_gain(end_off - start_off, gain_us(end_real - start_real, ppm)).map_err(NotInEffect)?;
        Ok(Some(format!("{judged} in {:.1} s; ended with a jump of {}", (end_real - start_real) as f64 / 1e6, jump_text(switch.jump_us(ppm, PPM)))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offsets_keep_the_clock_continuous() {
        // libfaketime's clock: t + o + (r − 1)(t − s), with t − s = el (all in µs here).
        let fake = |t: i64, o: i64, ppm: i64, el: i64| t + o + gain_us(el, ppm);
        let ppm = rate_ppm(1.05);
        assert_eq!(ppm, 1_050_000);
        // A server that started 30 s ago, at offset +2 s, starts slewing at t0.
        let (t0, el0, base) = (1_000_000_000_000, 3_000, 2_000_000);
        let o = continuous_offset_us(base, el0, ppm, true);
        assert_eq!(o, 2_000_000 - 1_500_000, "30 s since start × 0.05");
        assert_eq!(fake(t0, o, ppm, el0 * 10_000), t0 + base, "no jump at the start");
        // 10 s later it has gained 0.5 s, and the stop keeps it.
        let (t1, el1) = (t0 + 10_000_000, el0 + 1_000);
        assert_eq!(fake(t1, o, ppm, el1 * 10_000), t1 + base + 500_000);
        let stopped = continuous_offset_us(o, el1, ppm, false);
        assert_eq!(fake(t1, stopped, PPM, el1 * 10_000), t1 + base + 500_000, "no jump at the stop");
        // Slow clocks lose time.
        assert_eq!(gain_us(10_000_000, rate_ppm(0.9)), -1_000_000);
    }

    #[test]
    fn offsets_are_written_and_read_in_libfaketime_format() {
        assert_eq!(offset_text(-1_500_000, 1_050_000), "-1.500000s x1.050000");
        assert_eq!(offset_text(250, PPM), "+0.000250s x1.000000");
        assert_eq!(offset_text(-3, 900_000), "-0.000003s x0.900000");
        for (text, want) in [
            ("+0\n", (0, PPM)),
            ("+20s", (20_000_000, PPM)),
            ("-1.500s", (-1_500_000, PPM)),
            ("-1.500000s x1.050000", (-1_500_000, 1_050_000)),
            ("+0.000250s x1.000000", (250, PPM)),
        ] {
            assert_eq!(parse_offset(text).unwrap(), want, "{text}");
        }
        assert!(parse_offset("").is_err());
        assert!(parse_offset("+1s y2").is_err());
    }

    /// The node computes the offset with shell arithmetic: the same numbers as this file.
    #[test]
    fn the_script_computes_what_the_rust_computes() {
        for (offset, el, rate, starting) in [(0, 3_000, 1.05, true), (2_000_000, 123_456, 1.005, true), (-1_500_000, 4_000, 1.05, false), (0, 777, 0.9, true)]
        {
            let ppm = rate_ppm(rate);
            let out_ppm = if starting { ppm } else { PPM };
            let script = format!("el={el}; {} echo \"$o $text\"", switch_offset_shell(offset, ppm, starting));
            let out = std::process::Command::new("bash").args(["-c", &script]).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let want = continuous_offset_us(offset, el, ppm, starting);
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("{want} {}", offset_text(want, out_ppm)), "{script}");
        }
        let script = switch_script("redis-server", &["redis-cli", "TIME"], -5, 1_050_000, true);
        assert!(!script.contains('\''), "{script}");
        let out = std::process::Command::new("bash").args(["-n", "-c", &script]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    #[test]
    fn a_switch_is_read_from_the_script_and_a_clock_that_did_not_move_is_no_slew() {
        let s = Switch::parse("120 1000 300 1480 3000 200 -1500000 1800\n").unwrap();
        let reading = |offset, real, spread| Some(Reading { offset, real, spread });
        assert_eq!((s.before, s.after, s.written_us, s.written_at), (reading(120, 1000, 300), reading(1480, 3000, 200), -1_500_000, 1800));
        // A start at 2x: 1200 µs of the change are the clock running fast after the write.
        assert_eq!(s.jump_us(PPM, 2 * PPM), Some((160, 500)));
        // A stop from 2x: 800 µs before the write.
        assert_eq!(s.jump_us(2 * PPM, PPM), Some((560, 500)));
        let s = Switch::parse("- - - 480 2000 200 7 1500").unwrap();
        assert_eq!((s.before, s.jump_us(PPM, PPM)), (None, None));
        assert!(Switch::parse("oops").is_err());

        // 20 s at 1.05: 1 s expected.
        let expected = gain_us(20_000_000, 1_050_000);
        assert!(judge_gain(990_000, expected).is_ok());
        assert!(judge_gain(600_000, expected).is_ok());
        let never_moved = judge_gain(1_200, expected).unwrap_err();
        assert!(never_moved.contains("did not run at the slew's rate"), "{never_moved}");
        assert!(judge_gain(-990_000, expected).is_err(), "the wrong way");
        assert!(judge_gain(4_000, gain_us(1_000_000, 1_005_000)).unwrap_err().contains("too little to tell"));
        // A slow clock loses.
        assert!(judge_gain(-95_000, gain_us(1_000_000, 900_000)).is_ok());
    }
}
