//! The workers' side of the resource protocol.

use super::protocol::{Request, Response, Signed};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No answer in time: the request may or may not have been applied.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The request may have been sent; its outcome is unknown.
    #[error("{0}")]
    Io(String),
}

pub struct ResourceClient {
    addr: SocketAddr,
    timeout: Duration,
    /// Sent with every request: the resource refuses a request without its sender's proof.
    proof: String,
    conn: Option<BufReader<TcpStream>>,
}

impl ResourceClient {
    pub fn new(addr: SocketAddr, timeout: Duration, proof: String) -> Self {
        ResourceClient { addr, timeout, proof, conn: None }
    }

    pub async fn call(&mut self, req: &Request) -> Result<Response, CallError> {
        let result = tokio::time::timeout(self.timeout, self.exchange(req)).await;
        match result {
            Ok(Ok(resp)) => Ok(resp),
            // A timed-out or broken connection may still deliver a late reply: never reuse it.
            Ok(Err(e)) => {
                self.conn = None;
                Err(CallError::Io(e.to_string()))
            }
            Err(_) => {
                self.conn = None;
                Err(CallError::Timeout(self.timeout))
            }
        }
    }
}

#[async_trait::async_trait]
impl super::ResourceCall for ResourceClient {
    async fn call(&mut self, req: &Request) -> Result<Response, CallError> {
        ResourceClient::call(self, req).await
    }
}

impl ResourceClient {
    async fn exchange(&mut self, req: &Request) -> std::io::Result<Response> {
        if self.conn.is_none() {
            let stream = TcpStream::connect(self.addr).await?;
            stream.set_nodelay(true)?;
            self.conn = Some(BufReader::new(stream));
        }
        let conn = self.conn.as_mut().expect("connected above");
        let mut line = serde_json::to_vec(&Signed { request: req.clone(), proof: self.proof.clone() })?;
        line.push(b'\n');
        conn.get_mut().write_all(&line).await?;
        let mut reply = String::new();
        if conn.read_line(&mut reply).await? == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "resource closed the connection"));
        }
        serde_json::from_str(&reply).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
}
