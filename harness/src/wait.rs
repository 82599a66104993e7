//! Waiting for something outside the process to become true (a server answering, a replica
//! streaming, a process gone): one helper, so every wait has a deadline and an error that says
//! what was waited for and what was last seen.

use std::future::Future;
use std::time::{Duration, Instant};

/// What one look found.
pub enum Probe<T> {
    /// The condition holds; the wait returns this.
    Ready(T),
    /// Not yet; the words describe what was seen, for the error if the deadline passes.
    NotYet(String),
}

/// Looks every `every` until `probe` says `Ready` or `limit` has passed since the first look.
/// A probe error ends the wait at once (the thing cannot be asked, e.g. its container is gone).
/// The error names `what` and the last `NotYet` words.
pub async fn until<T, F, Fut>(what: &str, limit: Duration, every: Duration, mut probe: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Probe<T>>>,
{
    let deadline = Instant::now() + limit;
    loop {
        let seen = match probe().await? {
            Probe::Ready(value) => return Ok(value),
            Probe::NotYet(seen) => seen,
        };
        if Instant::now() >= deadline {
            let seen = seen.trim();
            anyhow::bail!("{what}: not within {limit:?}{}", if seen.is_empty() { String::new() } else { format!(" (last seen: {seen})") });
        }
        tokio::time::sleep(every).await;
    }
}

/// `Ready(())` when `cond`, else `NotYet(seen)`.
pub fn ready_if(cond: bool, seen: impl Into<String>) -> Probe<()> {
    if cond {
        Probe::Ready(())
    } else {
        Probe::NotYet(seen.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn returns_the_first_ready_value_and_times_out_naming_what_it_saw() {
        let mut n = 0;
        let got = until("counter", Duration::from_secs(5), Duration::from_millis(1), || {
            n += 1;
            let k = n;
            async move { Ok(if k >= 3 { Probe::Ready(k) } else { Probe::NotYet(format!("at {k}")) }) }
        })
        .await
        .unwrap();
        assert_eq!(got, 3);
        let err = until::<(), _, _>("redis on n1 answering PING", Duration::from_millis(20), Duration::from_millis(5), || async {
            Ok(Probe::NotYet("connection refused".into()))
        })
        .await
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("redis on n1 answering PING: not within 20ms (last seen: connection refused)"), "{err}");
        let err = until::<(), _, _>("x", Duration::from_secs(5), Duration::from_millis(1), || async { anyhow::bail!("gone") }).await;
        assert_eq!(err.unwrap_err().to_string(), "gone", "a probe error ends the wait at once");
    }
}
