//! The Redis rows of `shared.rs`: a redis-server of this bench's own on loopback and a Unix
//! socket, and the cheapest client a Redis round trip can have.
//!
//! What a user builds on one host instead of a shared limiter is a fixed-window counter in
//! Redis: `INCR key` and `EXPIRE key period` per request. [`Counter`] sends the two
//! commands in one write and reads the two replies, with no client library around them,
//! so its time is the round trip itself (the kernel, the loopback or socket, the server);
//! any real client adds its own work to that.
//!
//! The server is started with nothing saved to disk, listening on 127.0.0.1 (a free port)
//! and a socket in a fresh temporary directory, and stopped when [`LocalRedis`] is dropped.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How long the server may take to answer its first PING.
const STARTUP: Duration = Duration::from_secs(10);

/// A redis-server of this process's, on loopback and a Unix socket.
pub(crate) struct LocalRedis {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl LocalRedis {
    /// Starts `$REDIS_SERVER` or `redis-server` from `PATH`; `None`, saying why, when it
    /// cannot be started.
    pub(crate) fn start() -> Option<Self> {
        let program = std::env::var_os("REDIS_SERVER").unwrap_or_else(|| "redis-server".into());
        let dir = std::env::temp_dir().join(format!("librate-bench-redis-{}", std::process::id()));
        let port = free_port().ok()?;
        std::fs::create_dir_all(&dir).ok()?;
        let child = Command::new(&program)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .arg("--unixsocket")
            .arg(dir.join("redis.sock"))
            .args([
                "--unixsocketperm",
                "700",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(error) => {
                println!("redis rows skipped: cannot start {program:?}: {error}");
                let _ = std::fs::remove_dir_all(&dir);
                return None;
            }
        };
        let server = Self { child, dir, port };
        let started = Instant::now();
        while started.elapsed() < STARTUP {
            if let Ok(stream) = server.unix() {
                if Counter::new(stream, "librate-bench:ping")
                    .incr_expire()
                    .is_ok()
                {
                    return Some(server);
                }
            }
            thread::sleep(Duration::from_millis(20));
        }
        println!("redis rows skipped: {program:?} did not answer within {STARTUP:?}");
        None
    }

    /// A connection over TCP on loopback, with Nagle's algorithm off (as clients set it).
    pub(crate) fn tcp(&self) -> io::Result<TcpStream> {
        let stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    /// A connection over the Unix socket.
    pub(crate) fn unix(&self) -> io::Result<UnixStream> {
        UnixStream::connect(self.dir.join("redis.sock"))
    }
}

impl Drop for LocalRedis {
    fn drop(&mut self) {
        // SIGTERM: the server exits at once (it has nothing to save).
        // SAFETY: signals only the child this value started and has not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A port on 127.0.0.1 that nothing listened on a moment ago.
fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// One key's fixed-window counter, over a connection `S`.
pub(crate) struct Counter<S> {
    stream: S,
    /// `INCR key` and `EXPIRE key period`, encoded once.
    request: Vec<u8>,
    reply: Vec<u8>,
}

impl<S: Read + Write> Counter<S> {
    pub(crate) fn new(stream: S, key: &str) -> Self {
        let mut request = Vec::new();
        for command in [&["INCR", key][..], &["EXPIRE", key, "1"]] {
            request.extend_from_slice(format!("*{}\r\n", command.len()).as_bytes());
            for word in command {
                request.extend_from_slice(format!("${}\r\n{word}\r\n", word.len()).as_bytes());
            }
        }
        Self {
            stream,
            request,
            reply: Vec::with_capacity(64),
        }
    }

    /// One round trip: both commands written at once, both replies read. Returns the
    /// count after the increment.
    pub(crate) fn incr_expire(&mut self) -> io::Result<u64> {
        self.stream.write_all(&self.request)?;
        self.reply.clear();
        let mut chunk = [0u8; 64];
        // Two replies, each one line: `:count\r\n` and `:1\r\n`.
        while self.reply.iter().filter(|&&byte| byte == b'\n').count() < 2 {
            let read = self.stream.read(&mut chunk)?;
            if read == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.reply.extend_from_slice(&chunk[..read]);
        }
        let line = self
            .reply
            .split(|&byte| byte == b'\r')
            .next()
            .unwrap_or_default();
        std::str::from_utf8(line)
            .ok()
            .and_then(|line| line.strip_prefix(':'))
            .and_then(|count| count.parse().ok())
            .ok_or_else(|| io::Error::other(String::from_utf8_lossy(&self.reply).into_owned()))
    }
}
