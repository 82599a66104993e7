//! Lines from a party that is not trusted (a client program's answers, requests to the
//! resource), with a bound on a line's length: one that writes without ever ending a line must
//! not grow the reader until it dies. Cancel-safe (a timed-out wait loses nothing): bytes are
//! kept only after a read has returned them.

use tokio::io::{AsyncRead, AsyncReadExt};

pub enum Line {
    Complete(String),
    /// The output ended; `partial`: it ended in the middle of a line.
    Closed {
        partial: bool,
    },
    TooLong,
    NotUtf8,
}

pub struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    /// Longer lines than this are `TooLong`.
    max_line: usize,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub fn new(reader: R, max_line: usize) -> Self {
        Lines { reader, buf: Vec::new(), max_line }
    }

    pub async fn next(&mut self) -> std::io::Result<Line> {
        loop {
            if let Some(end) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=end).take(end).collect();
                return Ok(match String::from_utf8(line) {
                    Ok(text) => Line::Complete(text.trim_end_matches('\r').to_string()),
                    Err(_) => Line::NotUtf8,
                });
            }
            if self.buf.len() > self.max_line {
                return Ok(Line::TooLong);
            }
            let mut chunk = [0u8; 8192];
            let n = self.reader.read(&mut chunk).await?;
            if n == 0 {
                return Ok(Line::Closed { partial: !self.buf.is_empty() });
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_partial_ends_and_overlong_lines() {
        const MAX_LINE: usize = 1 << 20;
        let mut lines = Lines::new(&b"{\"id\":0}\r\nsecond\n{\"id\":1,\"ty"[..], MAX_LINE);
        assert!(matches!(lines.next().await.unwrap(), Line::Complete(l) if l == "{\"id\":0}"));
        assert!(matches!(lines.next().await.unwrap(), Line::Complete(l) if l == "second"));
        assert!(matches!(lines.next().await.unwrap(), Line::Closed { partial: true }));
        let endless = vec![b'x'; MAX_LINE + 10];
        assert!(matches!(Lines::new(&endless[..], MAX_LINE).next().await.unwrap(), Line::TooLong));
        assert!(matches!(Lines::new(&b""[..], MAX_LINE).next().await.unwrap(), Line::Closed { partial: false }));
        assert!(matches!(Lines::new(&b"\xff\xfe\n"[..], MAX_LINE).next().await.unwrap(), Line::NotUtf8));
    }
}
