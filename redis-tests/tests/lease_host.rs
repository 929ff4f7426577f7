//! One share for every process of a host (docs/leases.md): two hosts of four processes
//! each, every process a `LeasedLimiter::open_host` on its host's file, against one real
//! `redis-server`. Each host is one holder to Redis, renewed by one of its processes; a
//! renewer killed with SIGKILL is taken over by another, so its host keeps its share; and
//! every admission of the eight processes, logged on CLOCK_MONOTONIC (one clock for the
//! processes of a machine), keeps the global rule.

mod common;

use common::processes::{kill_and_reap, spawn, Scratch};
use common::promise::{replay, Admission, Rule};
use common::redis_server::RedisServer;
use librate::lease::{Fallback, LeaseHolder, LeasedLimiter};
use librate::{Config, Instant, LeaseRule};
use std::io::Write;
use std::time::Duration;

const KEY: &str = "lease:{hosts}";
const HOSTS: usize = 2;
const PER_HOST: usize = 4;

#[test]
fn hosts_share_one_share_each_and_survive_their_renewer() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    // 2,000 a second in bursts of 50, leases of 400 ms renewed every 100 ms.
    let rule = LeaseRule::new(
        &Config::per_second(2000).with_burst(50),
        Duration::from_millis(400),
    )
    .unwrap();
    let scratch = Scratch::new("lease-host");
    let url = server.url();
    let host_file = |host: usize| scratch.path(&format!("host-{host}.lease"));
    let mut pids = Vec::new();
    for host in 0..HOSTS {
        for process in 0..PER_HOST {
            let (url, rule, path) = (url.clone(), rule, host_file(host));
            let log = scratch.path(&format!("log-{host}-{process}"));
            pids.push(spawn(move || {
                let client = redis::Client::open(url.as_str()).unwrap();
                let connect =
                    move || client.get_connection_with_timeout(Duration::from_millis(100));
                let limiter =
                    LeasedLimiter::open_host(connect, KEY, &path, &rule, Fallback::Deny).unwrap();
                // Every admission written at once: a process killed loses none of its log.
                let mut log = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)
                    .unwrap();
                let started = std::time::Instant::now();
                while started.elapsed() < Duration::from_millis(3000) {
                    let now = Instant::now();
                    if limiter.try_acquire(1).unwrap() {
                        log.write_all(&now.as_nanos().to_le_bytes()).unwrap();
                    }
                    std::thread::sleep(Duration::from_micros(300));
                }
                limiter.close().unwrap();
            }));
        }
    }
    // At 1.5 s, host 0's renewer is killed.
    std::thread::sleep(Duration::from_millis(1500));
    let watcher = LeaseHolder::open(host_file(0), &rule, Fallback::Deny).unwrap();
    let renewer = watcher.renewer().expect("a process renews host 0's share");
    let index = pids
        .iter()
        .position(|&pid| pid as u32 == renewer)
        .expect("one of host 0's");
    assert!(index < PER_HOST, "host 0's renewer is host 0's process");
    kill_and_reap(pids.remove(index));
    let killed_at = Instant::now();
    for pid in pids {
        let mut status = 0;
        // SAFETY: waits for a child this test forked.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status}"
        );
    }

    // Two holders in Redis, one a host, whatever renewed them.
    let mut redis = server.connection();
    let fields: Vec<String> = redis::cmd("HKEYS").arg(KEY).query(&mut redis).unwrap();
    let holders: Vec<&String> = fields
        .iter()
        .filter(|field| field.starts_with("h:"))
        .collect();
    assert!(holders.len() <= HOSTS, "{holders:?}");

    let mut log = Vec::new();
    let mut host_0_after = 0;
    for host in 0..HOSTS {
        for process in 0..PER_HOST {
            let bytes = std::fs::read(scratch.path(&format!("log-{host}-{process}"))).unwrap();
            for word in bytes.chunks_exact(8) {
                let at_ns = u64::from_le_bytes(word.try_into().unwrap());
                // Past the killed renewer's lease: admitted only if another renewed it.
                if host == 0 && at_ns > killed_at.as_nanos() + 500_000_000 {
                    host_0_after += 1;
                }
                log.push(Admission {
                    at_ns,
                    units: 1,
                    holder: host as u32,
                });
            }
        }
    }
    assert!(
        host_0_after > 0,
        "host 0 admitted nothing after its renewer died"
    );
    assert_eq!(
        replay(
            &mut log,
            Rule {
                interval_ns: 500_000,
                burst: 50
            }
        ),
        Ok(())
    );
}
