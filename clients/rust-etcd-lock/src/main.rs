//! rust-etcd-lock: the etcd-client crate's `lock()` (etcd's server-side Lock API, v3lock), as a
//! Rust service takes it, speaking lockchaos's client protocol (docs/client-protocol.md).
//!
//! One lease per process, granted with the scenario's TTL (whole seconds) and kept alive by a
//! task sending LeaseKeepAlive every third of it; a new lease when the old one is gone.
//! acquire is `lock(key, with_lease(lease))` under the request's timeout; release is
//! `unlock(the key lock() returned)`. Token: that key's create revision, read back with a get
//! (null when the get fails or the key is gone). The server waits for the keys queued before
//! ours, as concurrency.Mutex does; etcd 3.4's server (the node image's) does not read its own
//! key again after the wait.
//!
//! Capabilities: session (lost = the keep-alive task saw the lease gone, or has not had an
//! answer for a TTL).

use etcd_client::{Client, ConnectOptions, LockOptions};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn log(message: &str) {
    eprintln!("{:?} rust-etcd-lock: {message}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default());
}

/// A lease and what its keep-alive task knows of it.
struct Lease {
    id: i64,
    /// When the last keep-alive answer said it was alive.
    alive_at: Arc<Mutex<Instant>>,
    gone: Arc<Mutex<bool>>,
    task: tokio::task::JoinHandle<()>,
}

struct LockClient {
    name: String,
    endpoints: Vec<String>,
    ttl_s: i64,
    op_timeout: Duration,
    client: Option<Client>,
    lease: Option<Lease>,
    /// The key lock() returned, while we hold it.
    held: Option<Vec<u8>>,
}

/// An answer that is not a success: `fail` (did not happen) or `info` (may have).
struct Failure(&'static str, String);

impl LockClient {
    fn lease_lost(&self) -> bool {
        match &self.lease {
            None => false,
            Some(l) => *l.gone.lock().unwrap() || l.alive_at.lock().unwrap().elapsed() > Duration::from_secs(self.ttl_s as u64),
        }
    }

    async fn connect(&mut self) -> Result<Client, Failure> {
        if self.client.is_none() {
            let options = ConnectOptions::new().with_connect_timeout(self.op_timeout).with_timeout(self.op_timeout);
            let client = Client::connect(&self.endpoints, Some(options)).await.map_err(|e| Failure("fail", format!("connect: {e}")))?;
            self.client = Some(client);
        }
        Ok(self.client.clone().expect("connected"))
    }

    /// A live lease: the current one, or a new one when it is gone.
    async fn lease(&mut self) -> Result<i64, Failure> {
        if self.lease_lost() {
            let old = self.lease.take().expect("lost implies a lease");
            old.task.abort();
            log(&format!("{}: lease {:x} is gone; granting a new one", self.name, old.id));
        }
        if let Some(l) = &self.lease {
            return Ok(l.id);
        }
        let mut client = self.connect().await?;
        let granted = client.lease_grant(self.ttl_s, None).await.map_err(|e| Failure("fail", format!("lease grant: {e}")))?;
        let id = granted.id();
        let (mut keeper, mut answers) = client.lease_keep_alive(id).await.map_err(|e| Failure("fail", format!("keep-alive: {e}")))?;
        let alive_at = Arc::new(Mutex::new(Instant::now()));
        let gone = Arc::new(Mutex::new(false));
        let (alive, lost) = (alive_at.clone(), gone.clone());
        let every = Duration::from_millis((self.ttl_s as u64 * 1000 / 3).max(100));
        let task = tokio::spawn(async move {
            loop {
                if keeper.keep_alive().await.is_err() {
                    break;
                }
                match tokio::time::timeout(every, answers.message()).await {
                    Ok(Ok(Some(answer))) if answer.ttl() > 0 => *alive.lock().unwrap() = Instant::now(),
                    Ok(Ok(Some(_))) => {
                        *lost.lock().unwrap() = true;
                        break;
                    }
                    Ok(_) => break,
                    Err(_) => {}
                }
                tokio::time::sleep(every).await;
            }
        });
        self.lease = Some(Lease { id, alive_at, gone, task });
        Ok(id)
    }

    async fn acquire(&mut self, req: &Value) -> Result<Value, Failure> {
        let key = req["key"].as_str().unwrap_or("ledger").to_string();
        let timeout = Duration::from_millis(req["timeout_ms"].as_u64().unwrap_or(5000));
        let lease = self.lease().await?;
        let mut client = self.connect().await?;
        let name = format!("/lockchaos/{key}");
        let locked = match tokio::time::timeout(timeout, client.lock(name, Some(LockOptions::new().with_lease(lease)))).await {
            Err(_) => return Err(Failure("info", format!("not granted within {} ms", timeout.as_millis()))),
            Ok(Err(e)) => return Err(Failure("info", format!("lock: {e}"))),
            Ok(Ok(locked)) => locked,
        };
        let owned = locked.key().to_vec();
        let token = match tokio::time::timeout(self.op_timeout / 2, client.get(owned.clone(), None)).await {
            Ok(Ok(got)) => match got.kvs().first() {
                Some(kv) => json!(kv.create_revision()),
                None => {
                    log(&format!("{}: granted {}, but the key is gone", self.name, String::from_utf8_lossy(&owned)));
                    Value::Null
                }
            },
            _ => Value::Null,
        };
        self.held = Some(owned);
        Ok(json!({"type": "acquire_ok", "token": token}))
    }

    async fn release(&mut self) -> Result<Value, Failure> {
        let key = self.held.take().ok_or_else(|| Failure("fail", "no lock held".into()))?;
        let mut client = self.connect().await?;
        match tokio::time::timeout(self.op_timeout / 2, client.unlock(key)).await {
            Ok(Ok(_)) => Ok(json!({"type": "release_ok"})),
            Ok(Err(e)) => Err(Failure("info", format!("unlock: {e}"))),
            Err(_) => Err(Failure("info", "unlock: no answer in time".into())),
        }
    }
}

fn init(req: &Value) -> LockClient {
    let endpoints = req["config"]["endpoints"]
        .as_array()
        .map(|eps| eps.iter().map(|e| format!("http://{}:{}", e["host"].as_str().unwrap_or(""), e["port"].as_u64().unwrap_or(2379))).collect())
        .unwrap_or_default();
    let ttl_ms = req["lock"]["ttl_ms"].as_u64().unwrap_or(2000);
    let client = LockClient {
        name: req["client"].as_str().unwrap_or("client").to_string(),
        endpoints,
        ttl_s: ttl_ms.div_ceil(1000).max(1) as i64,
        op_timeout: Duration::from_millis(req["op_timeout_ms"].as_u64().unwrap_or(2000)),
        client: None,
        lease: None,
        held: None,
    };
    log(&format!("{} -> {}, lease TTL {} s", client.name, client.endpoints.join(","), client.ttl_s));
    client
}

#[tokio::main]
async fn main() {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut out = tokio::io::stdout();
    let mut client: Option<LockClient> = None;
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(req) = serde_json::from_str::<Value>(&line) else {
            log("skipped a line that is not a request");
            continue;
        };
        let kind = req["type"].as_str().unwrap_or("").to_string();
        let answer = match (kind.as_str(), client.as_mut()) {
            ("init", _) => {
                client = Some(init(&req));
                Ok(json!({"type": "init_ok", "capabilities": ["session"]}))
            }
            (_, None) => Err(Failure("fail", format!("{kind} before init"))),
            ("acquire", Some(c)) => c.acquire(&req).await,
            ("release", Some(c)) => c.release().await,
            ("session_lost", Some(c)) => Ok(json!({"type": "session_lost_ok", "lost": c.lease_lost()})),
            (_, Some(_)) => Err(Failure("fail", format!("unknown request type {kind:?}"))),
        };
        let mut answer = answer.unwrap_or_else(|Failure(kind, error)| {
            log(&format!("{}: {kind}: {error}", req["type"]));
            json!({"type": kind, "error": error})
        });
        answer["id"] = req["id"].clone();
        let mut text = answer.to_string();
        text.push('\n');
        if out.write_all(text.as_bytes()).await.is_err() || out.flush().await.is_err() {
            break;
        }
    }
}
