//! `lockchaos resource`: the ledger as a TCP service. Requests are applied and logged one at a
//! time under one lock, so the log's order is the order in which the ledger saw them. Only the
//! run's workers' requests get there: each must carry its sender's proof (`proof.rs`); anything
//! else is refused, answered as refused, and recorded in the file of refusals instead.

use super::ledger::Ledger;
use super::proof::RunKey;
use super::protocol::{Request, Response, Signed};
use super::refusals::{Refusal, RefusalLog};
use crate::bounded_lines::{Line, Lines};
use crate::clock::RunClock;
use crate::event_log::EventLog;
use crate::resource::ResourceMode;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// A request is some hundred bytes; a longer line is nobody's request.
pub const MAX_REQUEST_LINE: usize = 16 * 1024;

struct State {
    ledger: Ledger,
    log: EventLog,
    refusals: RefusalLog,
    clock: RunClock,
}

/// Where the resource writes: the ledger's log (the ground truth) and its refusals.
pub struct Logs<'a> {
    pub log: &'a Path,
    pub refused: &'a Path,
}

pub async fn serve(listen: SocketAddr, mode: ResourceMode, key: RunKey, logs: Logs<'_>, clock: RunClock) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    tracing::info!(%listen, ?mode, "resource listening");
    serve_on(listener, mode, key, logs, clock).await
}

pub async fn serve_on(listener: TcpListener, mode: ResourceMode, key: RunKey, logs: Logs<'_>, clock: RunClock) -> anyhow::Result<()> {
    let state = State { ledger: Ledger::new(mode), log: EventLog::create(logs.log)?, refusals: RefusalLog::create(logs.refused)?, clock };
    let state = Arc::new(Mutex::new(state));
    let key = Arc::new(key);
    loop {
        let (stream, peer) = listener.accept().await?;
        let (state, key) = (state.clone(), key.clone());
        tokio::spawn(async move {
            if let Err(e) = handle(stream, peer, state, &key).await {
                tracing::warn!(%peer, "connection ended: {e}");
            }
        });
    }
}

/// Whether a line is a request a worker of this run sent: the request, or why not.
pub fn admit(key: &RunKey, line: &str) -> Result<Request, String> {
    let signed: Signed = serde_json::from_str(line).map_err(|e| format!("not a request: {e}"))?;
    let client = signed.request.client();
    if !key.verifies(client, &signed.proof) {
        return Err(format!("no proof that process {client} sent it"));
    }
    Ok(signed.request)
}

async fn handle(stream: TcpStream, peer: SocketAddr, state: Arc<Mutex<State>>, key: &RunKey) -> anyhow::Result<()> {
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let mut lines = Lines::new(read, MAX_REQUEST_LINE);
    loop {
        let line = match lines.next().await? {
            Line::Complete(line) => line,
            Line::Closed { .. } => return Ok(()),
            // Nothing a worker sends: recorded, and the connection closed.
            Line::TooLong => return refuse(&state, peer, format!("a line longer than {MAX_REQUEST_LINE} bytes"), ""),
            Line::NotUtf8 => return refuse(&state, peer, "a line that is not UTF-8".into(), ""),
        };
        let resp = match admit(key, &line) {
            Ok(req) => {
                let mut st = state.lock().expect("resource state lock");
                let time = st.clock.now();
                let (resp, event) = st.ledger.apply(&req, time);
                // The log is the ground truth: a request that cannot be logged is not answered.
                st.log.append(event)?;
                resp
            }
            Err(reason) => {
                refuse(&state, peer, reason.clone(), &line)?;
                Response { ok: false, value: None, error: Some(format!("refused: {reason}")) }
            }
        };
        let mut out = serde_json::to_vec(&resp)?;
        out.push(b'\n');
        write.write_all(&out).await?;
    }
}

fn refuse(state: &Mutex<State>, peer: SocketAddr, reason: String, line: &str) -> anyhow::Result<()> {
    let mut st = state.lock().expect("resource state lock");
    let refusal = Refusal::new(st.clock.now(), peer.to_string(), reason, line);
    tracing::warn!(%peer, "refused: {}", refusal.reason);
    st.refusals.record(&refusal)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_request_with_its_senders_proof_is_admitted() {
        let key = RunKey::generate();
        let request = Request::Write { key: "k".into(), client: 2, token: None, value: 7 };
        let line = |proof: String, request: &Request| serde_json::to_string(&Signed { request: request.clone(), proof }).unwrap();
        assert_eq!(admit(&key, &line(key.proof(2), &request)), Ok(request.clone()));
        // Client 1's proof on a request in client 2's name: the forgery of the issue.
        let forged = admit(&key, &line(key.proof(1), &request)).unwrap_err();
        assert!(forged.contains("no proof that process 2 sent it"), "{forged}");
        let unsigned = serde_json::to_string(&request).unwrap();
        assert!(admit(&key, &unsigned).unwrap_err().starts_with("not a request"), "no proof at all");
        assert!(admit(&key, "{").is_err());
        let other_run = RunKey::generate();
        assert!(admit(&other_run, &line(key.proof(2), &request)).is_err(), "another run's proof");
    }
}
