//! Integers wider than a history's values can hold: an [`crate::Event`]'s value is a
//! `serde_json::Value`, whose integers are i64 or u64. serde_json reads a wider integer literal
//! as a rounded f64, so 10^30 and 10^30 + 1 became one value and a register that changed what it
//! held was judged valid. Such a literal is refused instead, in every history format, with an
//! error naming it: the checker gives no verdict on a value it changed. (serde_json's
//! `arbitrary_precision` feature would keep the digits, but it changes `Number` for every crate
//! in the build.) Floats are floats: read as f64 and compared as such.

use std::fmt;

/// An integer literal that fits neither i64 nor u64, as written (less any `+`, leading zeros
/// and EDN's `N`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WideInteger {
    pub literal: String,
}

impl fmt::Display for WideInteger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the integer {} fits neither i64 nor u64: refused, not compared rounded", self.literal)
    }
}

impl WideInteger {
    /// `None` when `i` fits i64 or u64.
    pub fn of_i128(i: i128) -> Option<WideInteger> {
        let fits = i64::try_from(i).is_ok() || u64::try_from(i).is_ok();
        (!fits).then(|| WideInteger { literal: i.to_string() })
    }
}

/// A wide integer found in a JSON text, with the top-level field it is in (`None` when the
/// text is not an object, or the literal is not under a key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WideJsonInteger {
    pub field: Option<String>,
    pub integer: WideInteger,
}

impl fmt::Display for WideJsonInteger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "field `{field}`: {}", self.integer),
            None => self.integer.fmt(f),
        }
    }
}

/// The first integer literal in JSON `text` (outside strings) that fits neither i64 nor u64.
/// A lexer pass, not a parse: `text` need not be valid JSON (on invalid JSON the answer is only
/// as good as the tokens are), and it reads no value, so nothing is rounded before it looks.
pub fn find_in_json(text: &[u8]) -> Option<WideJsonInteger> {
    if !may_hold_wide_integer(text) {
        return None;
    }
    let mut depth = 0usize;
    // The last string closed at depth 1, and the key the current top-level entry is under.
    let mut last_string: Option<(usize, usize)> = None;
    let mut field: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                let start = i + 1;
                i = start;
                while i < text.len() && text[i] != b'"' {
                    // An escape takes the next byte with it (`\"` does not end the string).
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 {
                    last_string = Some((start, i.min(text.len())));
                }
            }
            b':' if depth == 1 => field = last_string,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < text.len() && matches!(text[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                    i += 1;
                }
                let token = &text[start..i];
                if let Some(integer) = wide_json_integer(token) {
                    let field = field.map(|(s, e)| String::from_utf8_lossy(&text[s..e]).into_owned());
                    return Some(WideJsonInteger { field, integer });
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The fewest digits a wide integer has: i64's and u64's limits have 19 and 20, so any integer
/// of 18 digits fits (leading zeros only add digits).
const MIN_WIDE_DIGITS: usize = 19;
/// Aligned 4-byte blocks of digits in a row that any run of [`MIN_WIDE_DIGITS`] digits covers,
/// wherever it starts; a run of 11 (nanoseconds in a run's `time`) covers at most 2.
const DIGIT_BLOCKS: usize = 4;
const _: () = assert!(MIN_WIDE_DIGITS >= DIGIT_BLOCKS * 4 + 3);

/// Whether `text` may hold [`MIN_WIDE_DIGITS`] digits in a row: a cheap pass, 4 bytes at a
/// time, that spares nearly every line of a history the lexer's.
fn may_hold_wide_integer(text: &[u8]) -> bool {
    const ZEROS: u32 = u32::from_ne_bytes([b'0'; 4]);
    const HIGH_NIBBLES: u32 = u32::from_ne_bytes([0xf0; 4]);
    const SIXES: u32 = u32::from_ne_bytes([6; 4]);
    let mut in_a_row = 0;
    for block in text.chunks_exact(4) {
        let word = u32::from_ne_bytes(block.try_into().expect("4 bytes"));
        // Every byte 0x30..=0x3f, and still 0x3_ with 6 added (0x3a..=0x3f become 0x4_; no byte
        // carries into the next, as every low nibble is at most 0xf).
        let digits = word & HIGH_NIBBLES == ZEROS && (word + SIXES) & HIGH_NIBBLES == ZEROS;
        in_a_row = if digits { in_a_row + 1 } else { 0 };
        if in_a_row == DIGIT_BLOCKS {
            return true;
        }
    }
    false
}

/// A JSON number token that is an integer (no fraction, no exponent) too wide for 64 bits.
fn wide_json_integer(token: &[u8]) -> Option<WideInteger> {
    let (negative, digits) = match token.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, token),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let literal = std::str::from_utf8(token).expect("ASCII digits");
    if literal.parse::<i64>().is_ok() || literal.parse::<u64>().is_ok() {
        return None;
    }
    Some(WideInteger { literal: normalised(negative, digits) })
}

/// `-` if negative, then the digits without leading zeros (a wide integer has a non-zero digit).
pub(crate) fn normalised(negative: bool, digits: &[u8]) -> String {
    let first = digits.iter().position(|d| *d != b'0').unwrap_or(digits.len().saturating_sub(1));
    let digits = std::str::from_utf8(&digits[first..]).expect("ASCII digits");
    if negative {
        format!("-{digits}")
    } else {
        digits.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Option<(Option<String>, String)> {
        find_in_json(text.as_bytes()).map(|w| (w.field, w.integer.literal))
    }

    #[test]
    fn the_64_bit_limits_are_not_wide_and_one_past_them_is() {
        for fits in ["0", "-0", "18446744073709551615", "-9223372036854775808", "000000000000000000000000000001"] {
            assert_eq!(found(&format!(r#"{{"v":{fits}}}"#)), None, "{fits}");
        }
        for (wide, literal) in [
            ("18446744073709551616", "18446744073709551616"),
            ("-9223372036854775809", "-9223372036854775809"),
            ("00018446744073709551616", "18446744073709551616"),
        ] {
            assert_eq!(found(&format!(r#"{{"v":{wide}}}"#)), Some((Some("v".into()), literal.into())), "{wide}");
        }
    }

    #[test]
    fn the_cheap_pass_sees_a_run_of_19_digits_wherever_it_starts() {
        assert!(may_hold_wide_integer(b"0123456789012345") && may_hold_wide_integer(b"x9876543210987654321"));
        // Nanoseconds of a long run: 11 digits are not enough.
        assert!(!may_hold_wide_integer(br#"{"time":12345678901,"index":12345678901}"#));
        for not_all_digits in [b"012345678901234:", b"/123456789012345", b"?123456789012345", b"0123456789 12345", b"\xff123456789012345"] {
            assert!(!may_hold_wide_integer(not_all_digits), "{not_all_digits:?}");
        }
        for pad in 0..17 {
            let text = format!(r#"{{"{}":-9999999999999999999}}"#, "x".repeat(pad));
            assert_eq!(found(&text).map(|(_, literal)| literal).as_deref(), Some("-9999999999999999999"), "{text}");
        }
    }

    #[test]
    fn floats_and_strings_are_not_integers() {
        assert_eq!(found(r#"{"v":1e30,"w":100000000000000000000.5,"x":-1E+40}"#), None);
        assert_eq!(found(r#"{"v":"100000000000000000000","w":"\"100000000000000000000"}"#), None);
    }

    #[test]
    fn the_field_is_the_top_level_key() {
        let text = r#"{"a":{"b":[1,2]},"value":{"k":[3,{"deep":100000000000000000000}]}}"#;
        assert_eq!(found(text), Some((Some("value".into()), "100000000000000000000".into())));
        assert_eq!(found("[100000000000000000000]"), Some((None, "100000000000000000000".into())));
        // A key that holds a colon, an escaped quote or a number is still one key.
        let text = r#"{"a:\"1":100000000000000000000}"#;
        assert_eq!(found(text), Some((Some(r#"a:\"1"#.into()), "100000000000000000000".into())));
    }

    #[test]
    fn a_cut_text_is_read_as_far_as_it_goes() {
        assert_eq!(found(r#"{"v":"unterminated 100000000000000000000"#), None);
        assert_eq!(found(r#"{"v":100000000000000000000"#), Some((Some("v".into()), "100000000000000000000".into())));
        assert_eq!(found(r#"{"v":"\"#), None);
    }
}
