//! etcd's answers as its JSON gateway writes them, parsed into typed structs, strictly.
//!
//! The gateway marshals with proto3's JSON mapping (jsonpb, original field names): a field at
//! its zero value is left out, so an absent field is 0, false or empty, and `null` is the
//! default value too; int64 fields are decimal strings (a JSON integer is accepted as well, as
//! proto3 JSON parsers do); bytes are standard base64; enums are their names. A field that is
//! present but malformed (`"12x"`, `1.5`, `true`, bad base64, an unknown enum name) makes the
//! whole answer an error: never 0. Fields we do not read are ignored.
//!
//! Envelopes: a unary call answers the message itself or `{"error": "…", "message": "…",
//! "code": N}` (N the gRPC status code, an int32 number). A streaming call writes one JSON
//! document per line: `{"result": message}` or `{"error": {"grpc_code": N, "message": "…", …}}`;
//! a stream that fails before it starts answers the unary error form instead.

use serde::de::{self, DeserializeOwned, Deserializer, Unexpected, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;

/// gRPC code "unknown", for a stream error that names no code.
const UNKNOWN: i64 = 2;

/// What a member answered instead of the message asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// etcd's own error, with its gRPC status code.
    #[error("etcd error {code}: {message}")]
    Etcd { code: i64, message: String },
    /// Not etcd's answer: not JSON, or a field present with a value of the wrong form.
    #[error("malformed answer: {0}")]
    Malformed(String),
}

/// An int64 field: a decimal string or a JSON integer; `null` is 0 (proto3 JSON's default).
pub fn int64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    struct Int64;
    impl Visitor<'_> for Int64 {
        type Value = i64;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an int64 as a decimal string or an integer")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<i64, E> {
            let digits = s.strip_prefix('-').unwrap_or(s);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(E::invalid_value(Unexpected::Str(s), &self));
            }
            s.parse().map_err(|_| E::invalid_value(Unexpected::Str(s), &self))
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<i64, E> {
            Ok(n)
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<i64, E> {
            i64::try_from(n).map_err(|_| E::invalid_value(Unexpected::Unsigned(n), &self))
        }
        fn visit_unit<E: de::Error>(self) -> Result<i64, E> {
            Ok(0)
        }
    }
    d.deserialize_any(Int64)
}

/// A bytes field: standard base64 (with padding), as jsonpb writes it; `null` is empty.
pub fn base64_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    use base64::Engine;
    let text: Option<String> = Option::deserialize(d)?;
    match text {
        None => Ok(vec![]),
        Some(t) => base64::engine::general_purpose::STANDARD
            .decode(&t)
            .map_err(|e| de::Error::invalid_value(Unexpected::Str(&t), &format!("base64 ({e})").as_str())),
    }
}

/// A bool field; `null` is false.
fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

/// A string field; `null` is empty.
fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// A repeated field; `null` is empty.
fn list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(default)]
pub struct Header {
    #[serde(deserialize_with = "int64")]
    pub revision: i64,
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(default)]
pub struct KeyValue {
    #[serde(deserialize_with = "base64_bytes")]
    pub key: Vec<u8>,
    #[serde(deserialize_with = "int64")]
    pub create_revision: i64,
    #[serde(deserialize_with = "int64")]
    pub mod_revision: i64,
    #[serde(deserialize_with = "int64")]
    pub version: i64,
    #[serde(deserialize_with = "int64")]
    pub lease: i64,
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(default)]
pub struct RangeResponse {
    pub header: Header,
    #[serde(deserialize_with = "list")]
    pub kvs: Vec<KeyValue>,
    #[serde(deserialize_with = "int64")]
    pub count: i64,
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(default)]
pub struct PutResponse {
    pub header: Header,
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(default)]
pub struct DeleteRangeResponse {
    pub header: Header,
    #[serde(deserialize_with = "int64")]
    pub deleted: i64,
}

/// One of a txn's answers (a oneof: exactly one field is set).
#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(default)]
pub struct ResponseOp {
    pub response_range: Option<RangeResponse>,
    pub response_put: Option<PutResponse>,
    pub response_delete_range: Option<DeleteRangeResponse>,
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(default)]
pub struct TxnResponse {
    pub header: Header,
    #[serde(deserialize_with = "boolean")]
    pub succeeded: bool,
    #[serde(deserialize_with = "list")]
    pub responses: Vec<ResponseOp>,
}

impl TxnResponse {
    /// The range answer at `index`, or why there is none.
    pub fn range(&self, index: usize) -> Result<&RangeResponse, AnswerError> {
        self.responses
            .get(index)
            .and_then(|r| r.response_range.as_ref())
            .ok_or_else(|| AnswerError::Malformed(format!("txn answer has no range response at {index}: {self:?}")))
    }
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(default)]
pub struct LeaseGrantResponse {
    pub header: Header,
    #[serde(rename = "ID", deserialize_with = "int64")]
    pub id: i64,
    #[serde(rename = "TTL", deserialize_with = "int64")]
    pub ttl: i64,
    #[serde(deserialize_with = "string")]
    pub error: String,
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(default)]
pub struct LeaseRevokeResponse {
    pub header: Header,
}

/// A keep-alive's answer: TTL 0 (left out) means the lease is gone.
#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(default)]
pub struct LeaseKeepAliveResponse {
    pub header: Header,
    #[serde(rename = "ID", deserialize_with = "int64")]
    pub id: i64,
    #[serde(rename = "TTL", deserialize_with = "int64")]
    pub ttl: i64,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    #[default]
    Put,
    Delete,
}

impl<'de> Deserialize<'de> for EventType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // proto3 JSON: the enum's name, or its number.
        match Value::deserialize(d)? {
            Value::Null => Ok(EventType::Put),
            Value::String(s) if s == "PUT" => Ok(EventType::Put),
            Value::String(s) if s == "DELETE" => Ok(EventType::Delete),
            Value::Number(n) if n.as_u64() == Some(0) => Ok(EventType::Put),
            Value::Number(n) if n.as_u64() == Some(1) => Ok(EventType::Delete),
            other => Err(de::Error::custom(format!("unknown event type {other}"))),
        }
    }
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(default)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: EventType,
    pub kv: KeyValue,
}

#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(default)]
pub struct WatchResponse {
    pub header: Header,
    #[serde(deserialize_with = "int64")]
    pub watch_id: i64,
    #[serde(deserialize_with = "boolean")]
    pub created: bool,
    #[serde(deserialize_with = "boolean")]
    pub canceled: bool,
    #[serde(deserialize_with = "int64")]
    pub compact_revision: i64,
    #[serde(deserialize_with = "string")]
    pub cancel_reason: String,
    #[serde(deserialize_with = "list")]
    pub events: Vec<Event>,
}

/// A unary error body: `{"error": "…", "message": "…", "code": N}`.
#[derive(Deserialize)]
struct UnaryError {
    #[serde(default, deserialize_with = "string")]
    message: String,
    code: i64,
}

/// A stream's error line: `{"error": {"grpc_code": N, "message": "…", …}}`.
#[derive(Deserialize)]
struct StreamError {
    #[serde(default, deserialize_with = "int64")]
    grpc_code: i64,
    #[serde(default, deserialize_with = "string")]
    message: String,
}

fn typed<T: DeserializeOwned>(value: &Value) -> Result<T, AnswerError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        AnswerError::Malformed(format!("at {path}: {}", e.into_inner()))
    })
}

fn json(bytes: &[u8]) -> Result<Value, AnswerError> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| AnswerError::Malformed(format!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes[..bytes.len().min(200)]))))?;
    if !value.is_object() {
        return Err(AnswerError::Malformed(format!("not a JSON object: {value}")));
    }
    Ok(value)
}

/// The unary error form, if `value` is one (it has `code` and `message`; no etcd message does).
fn unary_error(value: &Value) -> Option<Result<AnswerError, AnswerError>> {
    (value.get("code").is_some() && value.get("message").is_some()).then(|| {
        let e: UnaryError = typed(value)?;
        Ok(AnswerError::Etcd { code: e.code, message: e.message })
    })
}

/// A unary call's answer body.
pub fn parse_unary<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AnswerError> {
    let value = json(bytes)?;
    if let Some(error) = unary_error(&value) {
        return Err(error?);
    }
    typed(&value)
}

/// One line of a streaming call's answer.
pub fn parse_stream_line<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AnswerError> {
    let value = json(bytes)?;
    if let Some(error) = value.get("error").filter(|e| e.is_object()) {
        let e: StreamError = typed(error)?;
        let code = if e.grpc_code == 0 { UNKNOWN } else { e.grpc_code };
        return Err(AnswerError::Etcd { code, message: e.message });
    }
    if let Some(error) = unary_error(&value) {
        return Err(error?);
    }
    match value.get("result") {
        Some(result) => typed(result),
        None => Err(AnswerError::Malformed(format!("stream line without result or error: {value}"))),
    }
}

/// Splits a byte stream into lines (newline-delimited JSON), whatever the chunk boundaries.
#[derive(Default)]
pub struct Lines {
    buf: Vec<u8>,
}

/// Longer than any answer we ask for; a longer line is not etcd talking.
const MAX_LINE: usize = 16 << 20;

impl Lines {
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), AnswerError> {
        self.buf.extend_from_slice(chunk);
        if self.buf.len() > MAX_LINE && !self.buf.contains(&b'\n') {
            return Err(AnswerError::Malformed(format!("a line longer than {MAX_LINE} bytes")));
        }
        Ok(())
    }

    /// The next complete, non-empty line, without its line end.
    pub fn next_line(&mut self) -> Option<Vec<u8>> {
        while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Some(line);
            }
        }
        None
    }

    /// At the end of the stream: what is left, if anything (an answer without a final newline).
    pub fn rest(&mut self) -> Option<Vec<u8>> {
        let rest = std::mem::take(&mut self.buf);
        (!rest.iter().all(u8::is_ascii_whitespace)).then_some(rest)
    }
}

#[cfg(test)]
mod tests;
