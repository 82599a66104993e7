//! Reading a file that comes from outside (a path on the command line, a file in a store): only
//! a regular file, after links (/dev/zero, a FIFO or a folder is refused before it is opened, so
//! nothing blocks or streams forever), and never more than its kind's limit, so a wrong path
//! costs one error line, not the machine's memory. Below every crate, so the history reader and
//! the harness share it; each kind's limit lives with the code that reads that kind.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The most a kind of file may hold, and what that kind is called in errors ("a nodes file").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeLimit {
    pub bytes: u64,
    pub kind: &'static str,
}

impl SizeLimit {
    pub const fn new(bytes: u64, kind: &'static str) -> SizeLimit {
        SizeLimit { bytes, kind }
    }
}

/// `1 MiB`, `4 GiB`, `512 KiB`, `1000 bytes`: the largest binary unit that divides the size.
impl fmt::Display for SizeLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bytes;
        match b {
            _ if b >= 1 << 30 && b.is_multiple_of(1 << 30) => write!(f, "{} GiB", b >> 30),
            _ if b >= 1 << 20 && b.is_multiple_of(1 << 20) => write!(f, "{} MiB", b >> 20),
            _ if b >= 1 << 10 && b.is_multiple_of(1 << 10) => write!(f, "{} KiB", b >> 10),
            _ => write!(f, "{b} bytes"),
        }
    }
}

/// A file that was not read: `PATH: what is wrong`, one line.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct ReadError {
    pub path: PathBuf,
    pub problem: Problem,
}

#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("cannot read: {0}")]
    Io(#[source] io::Error),
    #[error("{found}, not a regular file: refused as {kind}")]
    NotRegular { found: &'static str, kind: &'static str },
    #[error("larger than {limit}, the limit for {}", limit.kind)]
    TooLarge { limit: SizeLimit },
    /// `at`: the offset of the first byte that is not UTF-8.
    #[error("not UTF-8 text (at byte {at}): refused as {kind}")]
    NotText { kind: &'static str, at: usize },
}

/// What a file that is not a regular one is, for its error.
fn file_type_name(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a folder"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// `path` opened for reading, once it is a regular file (links followed) no larger than `limit`.
/// Read it through [`Bounded`], which stops with an error past the limit should the file grow.
pub fn open(path: &Path, limit: SizeLimit) -> Result<Bounded<File>, ReadError> {
    open_as(path, limit, Pipes::Refused)
}

/// [`open`], but a FIFO is taken too and read as it comes, through the same bound: for input
/// that may be streamed (a history given as `<(zcat history.jsonl.gz)`). Its open waits for a
/// writer, as any reader of a pipe does. Devices, folders and sockets are still refused.
pub fn open_stream(path: &Path, limit: SizeLimit) -> Result<Bounded<File>, ReadError> {
    open_as(path, limit, Pipes::Taken)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pipes {
    Refused,
    Taken,
}

fn open_as(path: &Path, limit: SizeLimit, pipes: Pipes) -> Result<Bounded<File>, ReadError> {
    use std::os::unix::fs::FileTypeExt;
    let fail = |problem| ReadError { path: path.to_path_buf(), problem };
    let check = |meta: std::fs::Metadata| {
        let pipe = pipes == Pipes::Taken && meta.file_type().is_fifo();
        if !meta.is_file() && !pipe {
            return Err(fail(Problem::NotRegular { found: file_type_name(meta.file_type()), kind: limit.kind }));
        }
        if meta.len() > limit.bytes {
            return Err(fail(Problem::TooLarge { limit }));
        }
        Ok(pipe)
    };
    // Looked at before it is opened: opening a device can have effects, and a FIFO's open waits
    // for a writer.
    let pipe = check(std::fs::metadata(path).map_err(|e| fail(Problem::Io(e)))?)?;
    // Non-blocking unless a pipe is wanted, should the file have become a FIFO since: then the
    // check below refuses it. On a regular file the flag changes nothing.
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(if pipe { 0 } else { libc::O_NONBLOCK })
        .open(path)
        .map_err(|e| fail(Problem::Io(e)))?;
    check(file.metadata().map_err(|e| fail(Problem::Io(e)))?)?;
    Ok(Bounded { inner: file, left: limit.bytes, limit })
}

/// The whole of `path`, a regular file of at most `limit` bytes.
pub fn read(path: &Path, limit: SizeLimit) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    open(path, limit)?.read_to_end(&mut bytes).map_err(|e| into_read_error(path, e))?;
    Ok(bytes)
}

/// The whole of `path` as text: [`read`], and UTF-8.
pub fn read_to_string(path: &Path, limit: SizeLimit) -> Result<String, ReadError> {
    String::from_utf8(read(path, limit)?).map_err(|e| ReadError {
        path: path.to_path_buf(),
        problem: Problem::NotText { kind: limit.kind, at: e.utf8_error().valid_up_to() },
    })
}

/// An I/O error of a [`Bounded`] read as the [`ReadError`] it stands for: past the limit is
/// [`Problem::TooLarge`].
pub fn into_read_error(path: &Path, e: io::Error) -> ReadError {
    let problem = match e.get_ref().and_then(|inner| inner.downcast_ref::<PastLimit>()) {
        Some(past) => Problem::TooLarge { limit: past.0 },
        None => Problem::Io(e),
    };
    ReadError { path: path.to_path_buf(), problem }
}

/// A reader that yields at most its limit's bytes, then fails (with an error whose text names
/// the limit) if there is more: a file that grows while it is read is cut with an error, never
/// silently.
pub struct Bounded<R> {
    inner: R,
    left: u64,
    limit: SizeLimit,
}

#[derive(Debug)]
struct PastLimit(SizeLimit);

impl fmt::Display for PastLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "larger than {}, the limit for {}", self.0, self.0.kind)
    }
}

impl std::error::Error for PastLimit {}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // One byte past the limit is asked for, to tell "exactly the limit" from "more".
        let want = buf.len().min(usize::try_from(self.left.saturating_add(1)).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n as u64 > self.left {
            self.left = 0;
            return Err(io::Error::new(io::ErrorKind::FileTooLarge, PastLimit(self.limit)));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: SizeLimit = SizeLimit::new(8, "a tiny file");

    #[test]
    fn a_device_a_fifo_and_a_folder_are_refused_unopened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let link = dir.path().join("results.json");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        for (path, found) in [(link.as_path(), "a character device"), (fifo.as_path(), "a FIFO"), (dir.path(), "a folder")] {
            let err = read(path, TINY).unwrap_err().to_string();
            assert_eq!(err, format!("{}: {found}, not a regular file: refused as a tiny file", path.display()));
        }
    }

    #[test]
    fn a_stream_takes_a_fifo_within_its_bound_and_still_refuses_a_device() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(&fifo, b"123456789"))
        };
        let mut out = vec![];
        let err = open_stream(&fifo, TINY).unwrap().read_to_end(&mut out).unwrap_err();
        assert_eq!(into_read_error(&fifo, err).to_string(), format!("{}: larger than 8 bytes, the limit for a tiny file", fifo.display()));
        let _ = writer.join();
        let err = open_stream(Path::new("/dev/zero"), TINY).map(|_| ()).unwrap_err().to_string();
        assert_eq!(err, "/dev/zero: a character device, not a regular file: refused as a tiny file");
    }

    #[test]
    fn a_file_over_its_limit_is_refused_naming_the_limit_and_one_at_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"12345678").unwrap();
        assert_eq!(read(&path, TINY).unwrap(), b"12345678");
        std::fs::write(&path, b"123456789").unwrap();
        let err = read_to_string(&path, TINY).unwrap_err().to_string();
        assert_eq!(err, format!("{}: larger than 8 bytes, the limit for a tiny file", path.display()));
        // Sparse: a gibibyte that costs no disk, refused by its size without a byte read.
        let big = File::create(&path).unwrap();
        big.set_len(1 << 30).unwrap();
        let err = read(&path, SizeLimit::new(1 << 20, "a nodes file")).unwrap_err().to_string();
        assert!(err.ends_with("larger than 1 MiB, the limit for a nodes file"), "{err}");
    }

    #[test]
    fn a_file_that_grows_past_its_limit_while_read_is_an_error_not_a_cut() {
        let mut reader = Bounded { inner: &b"123456789"[..], left: TINY.bytes, limit: TINY };
        let mut out = vec![];
        let err = reader.read_to_end(&mut out).unwrap_err();
        assert_eq!(into_read_error(Path::new("f"), err).to_string(), "f: larger than 8 bytes, the limit for a tiny file");
        let mut exact = Bounded { inner: &b"12345678"[..], left: TINY.bytes, limit: TINY };
        out.clear();
        assert_eq!(exact.read_to_end(&mut out).unwrap(), 8);
    }

    #[test]
    fn limits_read_in_their_unit() {
        let at = |bytes| SizeLimit::new(bytes, "x").to_string();
        assert_eq!([at(4 << 30), at(16 << 20), at(512 << 10), at(1000)], ["4 GiB", "16 MiB", "512 KiB", "1000 bytes"]);
    }

    #[test]
    fn text_that_is_not_utf8_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, [b'a', 0xff, 0xfe]).unwrap();
        assert!(read_to_string(&path, TINY).unwrap_err().to_string().ends_with("not UTF-8 text (at byte 1): refused as a tiny file"));
    }
}
