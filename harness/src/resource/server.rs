//! `lockchaos resource`: the ledger as a TCP service. Requests are applied and logged one at a
//! time under one lock, so the log's order is the order in which the ledger saw them.

use super::ledger::Ledger;
use super::protocol::{Request, Response};
use crate::clock::RunClock;
use crate::event_log::EventLog;
use crate::resource::ResourceMode;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

struct State {
    ledger: Ledger,
    log: EventLog,
    clock: RunClock,
}

pub async fn serve(listen: SocketAddr, mode: ResourceMode, log_path: &Path, clock: RunClock) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    tracing::info!(%listen, ?mode, "resource listening");
    serve_on(listener, mode, log_path, clock).await
}

pub async fn serve_on(listener: TcpListener, mode: ResourceMode, log_path: &Path, clock: RunClock) -> anyhow::Result<()> {
    let state = Arc::new(Mutex::new(State { ledger: Ledger::new(mode), log: EventLog::create(log_path)?, clock }));
    loop {
        let (stream, peer) = listener.accept().await?;
        let state = state.clone();
        tokio::spawn(async move {
            if let Err(e) = handle(stream, state).await {
                tracing::warn!(%peer, "connection ended: {e}");
            }
        });
    }
}

async fn handle(stream: TcpStream, state: Arc<Mutex<State>>) -> anyhow::Result<()> {
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Some(line) = lines.next_line().await? {
        let resp = match serde_json::from_str::<Request>(&line) {
            Ok(req) => {
                let mut st = state.lock().expect("resource state lock");
                let time = st.clock.now();
                let (resp, event) = st.ledger.apply(&req, time);
                // The log is the ground truth: a request that cannot be logged is not answered.
                st.log.append(event)?;
                resp
            }
            Err(e) => Response { ok: false, value: None, error: Some(format!("bad request: {e}")) },
        };
        let mut out = serde_json::to_vec(&resp)?;
        out.push(b'\n');
        write.write_all(&out).await?;
    }
    Ok(())
}
