//! A real `redis-server` for the Redis tier's tests (docs/redis.md): started by the test on a
//! free loopback port, with its files in a temporary directory, and stopped when dropped.
//!
//! Where `redis-server` is not installed the tests return at once and say so on the
//! terminal (once a test binary, past the test harness's capture, so a plain `cargo test`
//! shows it), unless `CI` is set: CI installs it (`.ci/run`), so there a missing server
//! fails the test.

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

/// A server and a connection to it, or `None` where none is installed outside CI.
pub fn server() -> Option<(RedisServer, redis::Connection)> {
    let server = RedisServer::start()?;
    let connection = server.connection();
    Some((server, connection))
}

/// A running `redis-server`, killed and its directory removed on drop.
pub struct RedisServer {
    binary: String,
    /// Arguments beyond the port, directory and persistence (a cluster node's).
    extra: Vec<String>,
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

impl RedisServer {
    /// Starts a server, or `None` (after printing why) where none is installed outside CI.
    pub fn start() -> Option<Self> {
        Self::start_with(&[])
    }

    /// [`start`](Self::start) with more `redis-server` arguments.
    pub fn start_with(extra: &[&str]) -> Option<Self> {
        let binary = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        if Command::new(&binary).arg("--version").output().is_err() {
            assert!(
                std::env::var_os("CI").unwrap_or_default().is_empty(),
                "{binary} is not installed, and CI must run the Redis tests"
            );
            skipped(&binary);
            return None;
        }
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("librate-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let extra: Vec<String> = extra.iter().map(|arg| arg.to_string()).collect();
        let child = Self::spawn(&binary, port, &dir, &extra);
        let mut server = Self {
            binary,
            extra,
            child,
            port,
            dir,
        };
        server.wait_until_up();
        Some(server)
    }

    fn spawn(binary: &str, port: u16, dir: &std::path::Path, extra: &[String]) -> Child {
        // Its complaints go to a file the failure message quotes ("did not start" alone
        // names no cause).
        let log = std::fs::File::create(dir.join("stderr.log")).unwrap();
        Command::new(binary)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir)
            .args(extra)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    /// Kills the server (SIGKILL: nothing saved); `restart` brings it back.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Kills the server and starts a new one on the same port, empty: as a crashed Redis
    /// comes back, its scripts and keys gone.
    pub fn restart(&mut self) {
        self.stop();
        self.child = Self::spawn(&self.binary, self.port, &self.dir, &self.extra);
        self.wait_until_up();
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

    fn wait_until_up(&mut self) {
        let started = Instant::now();
        let client = redis::Client::open(self.url()).unwrap();
        loop {
            if let Ok(mut connection) = client.get_connection() {
                if redis::cmd("PING").query::<String>(&mut connection).is_ok() {
                    return;
                }
            }
            let exited = self.child.try_wait().unwrap();
            if exited.is_some() || started.elapsed() > Duration::from_secs(10) {
                let log = std::fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default();
                panic!(
                    "redis-server on port {} did not start ({}); its output:\n{log}",
                    self.port,
                    exited.map_or("no answer to PING in 10 s".into(), |status| status
                        .to_string()),
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A port the kernel just found free on 127.0.0.1; a server takes it a moment later.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Says, once a test binary, that its Redis tests pass without having run. Written to the
/// process's standard error itself: the test harness captures `eprintln!` and shows it
/// only for a failed test (or under `--nocapture`), and these tests do not fail.
fn skipped(binary: &str) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = writeln!(
            std::io::stderr(),
            "\nSKIPPED: the Redis tests of {}: {binary} is not installed \
             (apt-get install redis-server); they return without running, and fail under CI=true",
            env!("CARGO_CRATE_NAME")
        );
    });
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Redis Cluster of three masters on loopback ports, each a [`RedisServer`], its slots
/// assigned by `redis-cli --cluster create`. Each node's bus port is a free port of its
/// own (`--cluster-port`, Redis 7.0 or later) rather than Redis's default of its port plus
/// 10,000, which is past 65,535 for a quarter of the kernel's ephemeral ports, so such a
/// node would refuse to start.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts the cluster, or `None` as [`RedisServer::start`] does.
    pub fn start() -> Option<Self> {
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| {
                let bus = free_port().to_string();
                RedisServer::start_with(&["--cluster-enabled", "yes", "--cluster-port", &bus])
            })
            .collect::<Option<_>>()?;
        let addresses: Vec<String> = nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .status()
            .expect("redis-cli comes with redis-server");
        assert!(created.success(), "redis-cli --cluster create failed");
        let cluster = Self { nodes };
        let started = Instant::now();
        while !cluster.is_ok() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the cluster did not form"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(cluster)
    }

    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    fn is_ok(&self) -> bool {
        self.nodes.iter().all(|node| {
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query(&mut node.connection())
                .unwrap_or_default();
            info.contains("cluster_state:ok")
        })
    }
}
