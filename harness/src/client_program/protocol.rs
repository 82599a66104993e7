//! The messages of the client-program protocol (docs/client-protocol.md): requests as the
//! worker writes them, responses as a program may answer them, and the reading of one answer
//! line into a typed response or the one-line reason it is not one.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use strum::VariantNames;

/// A request, without its `id` (the client numbers them).
#[derive(Serialize, Debug, Clone)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    Init { client: String, process: u64, backend: String, config: Value, lock: Value, op_timeout_ms: u64 },
    Acquire { key: String, timeout_ms: u64 },
    Release { key: String },
    Renew { key: String },
    SessionLost { key: String },
    TxRead { key: String, client: u64, time_ns: u64 },
    TxWriteCommit { key: String, value: i64, client: u64, time_ns: u64 },
}

impl Request {
    /// The `type` of the response that says it succeeded.
    pub fn ok_type(&self) -> &'static str {
        match self {
            Request::Init { .. } => "init_ok",
            Request::Acquire { .. } => "acquire_ok",
            Request::Release { .. } => "release_ok",
            Request::Renew { .. } => "renew_ok",
            Request::SessionLost { .. } => "session_lost_ok",
            Request::TxRead { .. } => "tx_read_ok",
            Request::TxWriteCommit { .. } => "tx_write_commit_ok",
        }
    }

    /// The request as one line: `{"id":…,"type":…,…}`.
    pub fn line(&self, id: u64) -> String {
        let mut value = serde_json::to_value(self).expect("requests serialise");
        value.as_object_mut().expect("requests are objects").insert("id".into(), id.into());
        let mut line = value.to_string();
        line.push('\n');
        line
    }
}

/// An answer, typed. `Fail`: it definitely did not happen; `Info`: its outcome is unknown. Its
/// `type` names (`Response::VARIANTS`, and `&str::from(&response)`) are the serde tags.
#[derive(Deserialize, Debug, Clone, PartialEq, strum::IntoStaticStr, strum::VariantNames)]
#[serde(tag = "type", rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Response {
    InitOk {
        #[serde(default)]
        capabilities: Vec<Capability>,
    },
    AcquireOk {
        token: Option<u64>,
        #[serde(default)]
        validity_ms: Option<u64>,
    },
    ReleaseOk {},
    RenewOk {
        validity_ms: u64,
    },
    SessionLostOk {
        lost: bool,
    },
    TxReadOk {
        value: i64,
    },
    TxWriteCommitOk {},
    Fail {
        #[serde(default)]
        error: String,
    },
    Info {
        #[serde(default)]
        error: String,
    },
}

/// What a program can do beyond acquire and release.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Capability {
    Renew,
    Session,
    Transactional,
}

/// One answer line: its id and its response, or why the line is not an answer.
pub fn parse(line: &str) -> Result<(u64, Response), String> {
    let shown = shorten(line);
    let value: Value = serde_json::from_str(line).map_err(|e| format!("answered `{shown}`, which is not JSON ({e})"))?;
    let Some(id) = value.get("id").and_then(Value::as_u64) else {
        return Err(format!("answered `{shown}`, which has no numeric `id`"));
    };
    let kind = value.get("type").and_then(Value::as_str).unwrap_or_default();
    if !Response::VARIANTS.contains(&kind) {
        return Err(format!(
            "answered `{shown}`: unknown `type` \"{}\" (expected one of {})",
            shorten(kind),
            Response::VARIANTS.join(", ")
        ));
    }
    let response = serde_json::from_value(value).map_err(|e| format!("answered `{shown}`: {e}"))?;
    Ok((id, response))
}

/// A line as quoted in an error: at most 120 characters.
fn shorten(line: &str) -> String {
    let line = line.trim_end();
    match line.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_names_are_the_serde_tags() {
        assert_eq!(Response::VARIANTS[6], "tx_write_commit_ok");
        let parsed = parse(r#"{"id":6,"type":"tx_write_commit_ok"}"#).unwrap().1;
        assert_eq!(<&str>::from(&parsed), "tx_write_commit_ok");
    }

    #[test]
    fn requests_are_one_line_with_their_id_and_type() {
        let line = Request::Acquire { key: "ledger".into(), timeout_ms: 5000 }.line(1);
        assert_eq!(line, "{\"id\":1,\"key\":\"ledger\",\"timeout_ms\":5000,\"type\":\"acquire\"}\n");
        let v: Value = serde_json::from_str(&Request::SessionLost { key: "k".into() }.line(4)).unwrap();
        assert_eq!((v["id"].as_u64(), v["type"].as_str()), (Some(4), Some("session_lost")));
    }

    #[test]
    fn answers_parse_into_types_or_say_what_is_wrong() {
        assert_eq!(
            parse(r#"{"id":1,"type":"acquire_ok","token":34,"validity_ms":1999}"#).unwrap(),
            (1, Response::AcquireOk { token: Some(34), validity_ms: Some(1999) })
        );
        assert_eq!(
            parse(r#"{"id":1,"type":"acquire_ok","token":null}"#).unwrap().1,
            Response::AcquireOk { token: None, validity_ms: None }
        );
        assert_eq!(
            parse(r#"{"id":0,"type":"init_ok","capabilities":["renew","session"]}"#).unwrap().1,
            Response::InitOk { capabilities: vec![Capability::Renew, Capability::Session] }
        );
        assert!(parse("granted!").unwrap_err().contains("`granted!`, which is not JSON"));
        assert!(parse(r#"{"type":"release_ok"}"#).unwrap_err().contains("no numeric `id`"));
        assert!(parse(r#"{"id":2,"type":"released"}"#).unwrap_err().contains("unknown `type` \"released\""));
        assert!(parse(r#"{"id":3,"type":"renew_ok"}"#).unwrap_err().contains("missing field `validity_ms`"));
        assert!(parse(r#"{"id":0,"type":"init_ok","capabilities":["teleport"]}"#).unwrap_err().contains("teleport"));
        let long = format!("{{\"id\":1,\"type\":\"x{}\"}}", "y".repeat(300));
        // Quoted lines are cut: the error stays one readable line.
        assert!(parse(&long).unwrap_err().chars().count() < 400);
    }
}
