//! A reader for the EDN subset Jepsen histories use: one form per call, no I/O.
//!
//! Covers nil, booleans, integers (with `N`), floats (with `M`, `##Inf`), ratios, strings,
//! characters, keywords, symbols, lists, vectors, maps, sets, tagged forms (`#inst "…"`,
//! `#jepsen.history.Op{…}`), `#_` discard and `;` comments. Commas are whitespace.
//! Integers are read exactly, whatever their width; a float that overflows f64 is an error.

use std::fmt::{self, Write as _};

/// An EDN value. Keywords and symbols are stored without their leading `:`.
#[derive(Clone, Debug, PartialEq)]
pub enum Edn {
    Nil,
    Bool(bool),
    /// i128 so that u64 values survive.
    Int(i128),
    /// An integer beyond i128: its digits, `-` first if negative, without leading zeros. Kept
    /// exact so that text (`:error`) prints it as written; as a value it is refused (see
    /// [`crate::wide_integer`]).
    BigInt(String),
    Float(f64),
    Str(String),
    Char(char),
    Keyword(String),
    Symbol(String),
    List(Vec<Edn>),
    Vector(Vec<Edn>),
    Set(Vec<Edn>),
    /// Entries in source order; EDN forbids duplicate keys, lookups take the last one.
    Map(Vec<(Edn, Edn)>),
    Tagged(String, Box<Edn>),
}

impl Edn {
    /// The value under keyword `name` of a map (or of a tagged map, such as a Jepsen record).
    pub fn get(&self, name: &str) -> Option<&Edn> {
        match self {
            Edn::Map(entries) => entries.iter().rev().find(|(k, _)| matches!(k, Edn::Keyword(n) if n == name)).map(|(_, v)| v),
            Edn::Tagged(_, inner) => inner.get(name),
            _ => None,
        }
    }

    /// A short name of the value's kind, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Edn::Nil => "nil",
            Edn::Bool(_) => "a boolean",
            Edn::Int(_) | Edn::BigInt(_) => "an integer",
            Edn::Float(_) => "a float",
            Edn::Str(_) => "a string",
            Edn::Char(_) => "a character",
            Edn::Keyword(_) => "a keyword",
            Edn::Symbol(_) => "a symbol",
            Edn::List(_) => "a list",
            Edn::Vector(_) => "a vector",
            Edn::Set(_) => "a set",
            Edn::Map(_) => "a map",
            Edn::Tagged(..) => "a tagged value",
        }
    }
}

/// Prints EDN text that reads back to the same value (used to render `:error` values).
impl fmt::Display for Edn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn seq(f: &mut fmt::Formatter<'_>, open: &str, items: &[Edn], close: &str) -> fmt::Result {
            f.write_str(open)?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_char(' ')?;
                }
                write!(f, "{item}")?;
            }
            f.write_str(close)
        }
        match self {
            Edn::Nil => f.write_str("nil"),
            Edn::Bool(b) => write!(f, "{b}"),
            Edn::Int(i) => write!(f, "{i}"),
            Edn::BigInt(digits) => f.write_str(digits),
            Edn::Float(x) if x.is_nan() => f.write_str("##NaN"),
            Edn::Float(x) if x.is_infinite() => f.write_str(if *x > 0.0 { "##Inf" } else { "##-Inf" }),
            Edn::Float(x) => write!(f, "{x:?}"),
            Edn::Str(s) => {
                f.write_char('"')?;
                for c in s.chars() {
                    match c {
                        '"' => f.write_str("\\\"")?,
                        '\\' => f.write_str("\\\\")?,
                        '\n' => f.write_str("\\n")?,
                        '\t' => f.write_str("\\t")?,
                        '\r' => f.write_str("\\r")?,
                        c => f.write_char(c)?,
                    }
                }
                f.write_char('"')
            }
            Edn::Char(c) => match c {
                '\n' => f.write_str("\\newline"),
                ' ' => f.write_str("\\space"),
                '\t' => f.write_str("\\tab"),
                '\r' => f.write_str("\\return"),
                c => write!(f, "\\{c}"),
            },
            Edn::Keyword(k) => write!(f, ":{k}"),
            Edn::Symbol(s) => f.write_str(s),
            Edn::List(items) => seq(f, "(", items, ")"),
            Edn::Vector(items) => seq(f, "[", items, "]"),
            Edn::Set(items) => seq(f, "#{", items, "}"),
            Edn::Map(entries) => {
                f.write_char('{')?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k} {v}")?;
                }
                f.write_char('}')
            }
            Edn::Tagged(tag, inner) => write!(f, "#{tag} {inner}"),
        }
    }
}

/// Why a form could not be read. `eof` = the input ended inside a form, which on a history's
/// unterminated last line means the line was cut, not that it was written wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadError {
    pub message: String,
    /// 1-based, in characters.
    pub column: usize,
    pub eof: bool,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at column {}", self.message, self.column)
    }
}

/// Nesting deeper than this is refused rather than risking the stack on hostile input.
const MAX_DEPTH: usize = 256;

/// Reads exactly one form from `text`; only whitespace, commas and comments may follow it.
pub fn read_one(text: &str) -> Result<Edn, ReadError> {
    let mut r = Reader { text, pos: 0 };
    let form = r.form(0)?;
    r.skip_blank_and_discarded(0)?;
    if r.pos < text.len() {
        return Err(r.error("unexpected text after the form"));
    }
    Ok(form)
}

struct Reader<'a> {
    text: &'a str,
    /// Byte offset into `text`, always on a character boundary.
    pos: usize,
}

fn is_delimiter(c: char) -> bool {
    c.is_whitespace() || matches!(c, ',' | '(' | ')' | '[' | ']' | '{' | '}' | '"' | ';')
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn error_at(&self, pos: usize, message: impl Into<String>, eof: bool) -> ReadError {
        ReadError { message: message.into(), column: self.text[..pos].chars().count() + 1, eof }
    }

    fn error(&self, message: impl Into<String>) -> ReadError {
        self.error_at(self.pos, message, false)
    }

    fn eof(&self, what: &str) -> ReadError {
        self.error_at(self.pos, format!("end of line inside {what}"), true)
    }

    fn skip_blank(&mut self) {
        while let Some(c) = self.peek() {
            if c == ';' {
                self.pos = self.text[self.pos..].find('\n').map_or(self.text.len(), |i| self.pos + i);
            } else if c.is_whitespace() || c == ',' {
                self.bump();
            } else {
                break;
            }
        }
    }

    /// Blanks and `#_ form`s, which are blank too. A loop, not recursion: a run of discards
    /// costs no stack; a discard inside a discarded form is nested (`depth + 1`).
    fn skip_blank_and_discarded(&mut self, depth: usize) -> Result<(), ReadError> {
        loop {
            self.skip_blank();
            if !self.text[self.pos..].starts_with("#_") {
                return Ok(());
            }
            self.pos += 2;
            self.form(depth + 1)?;
        }
    }

    /// A run of non-delimiter characters (symbol, keyword, number, character name).
    fn token(&mut self) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(|c| !is_delimiter(c)) {
            self.bump();
        }
        &self.text[start..self.pos]
    }

    fn form(&mut self, depth: usize) -> Result<Edn, ReadError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("nesting deeper than {MAX_DEPTH}")));
        }
        self.skip_blank_and_discarded(depth)?;
        let start = self.pos;
        let Some(c) = self.bump() else {
            return Err(self.eof("a form"));
        };
        match c {
            '(' => Ok(Edn::List(self.items(')', depth)?)),
            '[' => Ok(Edn::Vector(self.items(']', depth)?)),
            '{' => self.map(depth),
            ')' | ']' | '}' => Err(self.error_at(start, format!("unexpected `{c}`"), false)),
            '"' => self.string().map(Edn::Str),
            '\\' => self.character(start),
            '#' => self.dispatch(start, depth),
            ':' => match self.token() {
                "" => Err(self.error_at(start, "empty keyword", false)),
                name => Ok(Edn::Keyword(name.to_string())),
            },
            _ => {
                self.pos = start;
                let tok = self.token();
                atom(tok).ok_or_else(|| self.error_at(start, format!("cannot read `{tok}`"), false))
            }
        }
    }

    fn items(&mut self, close: char, depth: usize) -> Result<Vec<Edn>, ReadError> {
        let mut items = Vec::new();
        loop {
            self.skip_blank_and_discarded(depth)?;
            match self.peek() {
                None => return Err(self.eof(&format!("a collection (expected `{close}`)"))),
                Some(c) if c == close => {
                    self.bump();
                    return Ok(items);
                }
                Some(_) => items.push(self.form(depth + 1)?),
            }
        }
    }

    fn map(&mut self, depth: usize) -> Result<Edn, ReadError> {
        let open = self.pos - 1;
        let items = self.items('}', depth)?;
        if items.len() % 2 != 0 {
            return Err(self.error_at(open, "map with an odd number of forms", false));
        }
        let mut it = items.into_iter();
        let mut entries = Vec::new();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            entries.push((k, v));
        }
        Ok(Edn::Map(entries))
    }

    fn string(&mut self) -> Result<String, ReadError> {
        let mut out = String::new();
        loop {
            let at = self.pos;
            match self.bump() {
                None => return Err(self.eof("a string")),
                Some('"') => return Ok(out),
                Some('\\') => match self.bump() {
                    None => return Err(self.eof("a string")),
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    Some('/') => out.push('/'),
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some('b') => out.push('\u{8}'),
                    Some('f') => out.push('\u{c}'),
                    Some('u') => out.push(self.unicode(at)?),
                    Some(c) => return Err(self.error_at(at, format!("unknown escape `\\{c}`"), false)),
                },
                Some(c) => out.push(c),
            }
        }
    }

    /// The four hex digits after `\u`.
    fn unicode(&mut self, at: usize) -> Result<char, ReadError> {
        let hex = self.text.get(self.pos..self.pos + 4);
        let Some(hex) = hex.filter(|h| h.chars().all(|c| c.is_ascii_hexdigit())) else {
            if self.text.len() - self.pos < 4 {
                return Err(self.eof("a string"));
            }
            return Err(self.error_at(at, "bad \\u escape", false));
        };
        self.pos += 4;
        let code = u32::from_str_radix(hex, 16).expect("checked hex digits");
        char::from_u32(code).ok_or_else(|| self.error_at(at, "\\u escape is not a character", false))
    }

    fn character(&mut self, start: usize) -> Result<Edn, ReadError> {
        // The first character is taken even if it is a delimiter: `\(` and `\ ` are characters.
        let Some(first) = self.bump() else {
            return Err(self.eof("a character"));
        };
        let rest = self.token();
        let c = match (first, rest) {
            (c, "") => Some(c),
            ('n', "ewline") => Some('\n'),
            ('s', "pace") => Some(' '),
            ('t', "ab") => Some('\t'),
            ('r', "eturn") => Some('\r'),
            ('u', hex) if hex.len() == 4 => u32::from_str_radix(hex, 16).ok().and_then(char::from_u32),
            _ => None,
        };
        c.map(Edn::Char).ok_or_else(|| self.error_at(start, format!("unknown character `\\{first}{rest}`"), false))
    }

    fn dispatch(&mut self, start: usize, depth: usize) -> Result<Edn, ReadError> {
        match self.peek() {
            None => Err(self.eof("a `#` form")),
            Some('{') => {
                self.bump();
                Ok(Edn::Set(self.items('}', depth)?))
            }
            Some('#') => {
                self.bump();
                match self.token() {
                    "Inf" => Ok(Edn::Float(f64::INFINITY)),
                    "-Inf" => Ok(Edn::Float(f64::NEG_INFINITY)),
                    "NaN" => Ok(Edn::Float(f64::NAN)),
                    t => Err(self.error_at(start, format!("unknown symbolic value `##{t}`"), false)),
                }
            }
            Some(_) => {
                let tag = self.token();
                if tag.is_empty() {
                    return Err(self.error_at(start, "`#` without a tag", false));
                }
                let inner = self.form(depth + 1)?;
                Ok(Edn::Tagged(tag.to_string(), Box::new(inner)))
            }
        }
    }
}

/// nil, booleans, numbers and symbols: everything read as a bare token.
fn atom(tok: &str) -> Option<Edn> {
    match tok {
        "nil" => return Some(Edn::Nil),
        "true" => return Some(Edn::Bool(true)),
        "false" => return Some(Edn::Bool(false)),
        _ => {}
    }
    let unsigned = tok.strip_prefix(['-', '+']).unwrap_or(tok);
    if !unsigned.starts_with(|c: char| c.is_ascii_digit()) {
        return Some(Edn::Symbol(tok.to_string()));
    }
    // Ratios and `M` decimals are read as floats, and compared as f64 like them; one that
    // overflows f64 (`1e400`, `1/0`) would be infinity, another value: it is not read.
    let finite = |x: f64| x.is_finite().then_some(Edn::Float(x));
    if let Some((n, d)) = tok.split_once('/') {
        let (n, d) = (n.parse::<f64>().ok()?, d.parse::<f64>().ok()?);
        return finite(n / d);
    }
    integer(tok).or_else(|| tok.strip_suffix('M').unwrap_or(tok).parse::<f64>().ok().and_then(finite))
}

/// An integer literal (`-12`, `+3`, `5N`) of any width, exactly: [`Edn::Int`] within i128, else
/// [`Edn::BigInt`]. `None` when `tok` is not one.
pub(crate) fn integer(tok: &str) -> Option<Edn> {
    let literal = tok.strip_suffix('N').unwrap_or(tok);
    let (negative, digits) = match literal.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        all => (false, all),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(match literal.parse::<i128>() {
        Ok(i) => Edn::Int(i),
        Err(_) => Edn::BigInt(crate::wide_integer::normalised(negative, digits)),
    })
}
