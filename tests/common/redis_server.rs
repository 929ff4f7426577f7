//! A real `redis-server` for the Redis tier's tests (DESIGN §8): started by the test on a
//! free loopback port, with its files in a temporary directory, and stopped when dropped.
//!
//! Where `redis-server` is not installed the tests print why and skip, unless `CI` is set:
//! CI installs it (`.ci/run`), so there a missing server fails the test.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server and a connection to it, or `None` where none is installed outside CI.
pub fn server() -> Option<(RedisServer, redis::Connection)> {
    let server = RedisServer::start()?;
    let connection = server.connection();
    Some((server, connection))
}

/// A running `redis-server`, killed and its directory removed on drop.
pub struct RedisServer {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

impl RedisServer {
    /// Starts a server, or `None` (after printing why) where none is installed outside CI.
    pub fn start() -> Option<Self> {
        let binary = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        if Command::new(&binary).arg("--version").output().is_err() {
            assert!(
                std::env::var_os("CI").is_none(),
                "{binary} is not installed, and CI must run the Redis tests"
            );
            eprintln!("skipped: {binary} is not installed (apt-get install redis-server)");
            return None;
        }
        // A port the kernel just found free; the server takes it a moment later.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!("librate-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new(&binary)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = Self { child, port, dir };
        server.wait_until_up();
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn connection(&self) -> redis::Connection {
        let client = redis::Client::open(self.url()).unwrap();
        client
            .get_connection_with_timeout(Duration::from_secs(5))
            .unwrap()
    }

    fn wait_until_up(&self) {
        let started = Instant::now();
        let client = redis::Client::open(self.url()).unwrap();
        loop {
            if let Ok(mut connection) = client.get_connection() {
                if redis::cmd("PING").query::<String>(&mut connection).is_ok() {
                    return;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
