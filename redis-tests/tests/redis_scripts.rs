//! Every Lua file of the Redis tier alone, and every script put together from them
//! (src/redis/scripts.rs), on a real `redis-server` the test starts on a loopback port:
//! each file compiles by itself, and each script, loaded by itself, decides one request
//! near now and one past 1.8·10¹⁹ ns (where every decision near now leaves it to the exact
//! one) as docs/decision.md says, each reply worked out by hand below.

mod common;

use common::redis_server::server;
use common::SECOND;
use librate::redis::{PolicyScript, Script};
use librate::Config;
use std::time::Duration;

/// A time near now: 2.5 s after 0, halfway into a 1 s window.
const NEAR: &str = "2500000000";
/// 1.8·10¹⁹ ns, a whole second, past where the decisions near now decide: every script
/// decides there with its exact decision.
const FAR: &str = "18000000000000000000";

/// Loads `source` alone and returns its SHA1.
fn load(redis: &mut redis::Connection, source: &str) -> String {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(source)
        .query(redis)
        .unwrap_or_else(|error| panic!("{error}:\n{source}"))
}

/// One call of the script `sha` on `keys`: now, n = 2, an acquire, then `config_args`.
fn call<T: redis::FromRedisValue>(
    redis: &mut redis::Connection,
    sha: &str,
    keys: &[&str],
    now: &str,
    config_args: &[u64],
) -> T {
    redis::cmd("EVALSHA")
        .arg(sha)
        .arg(keys.len())
        .arg(keys)
        .arg(now)
        .arg(2)
        .arg(0)
        .arg(config_args)
        .query(redis)
        .unwrap()
}

#[test]
fn every_file_compiles_alone() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/../src/redis/lua");
    let mut files = 0;
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|extension| extension == "lua") {
            // SCRIPT LOAD compiles without running: a file of functions alone would set
            // globals, which Redis refuses at run time, not at load time.
            let sha = load(&mut redis, &std::fs::read_to_string(&path).unwrap());
            assert_eq!(sha.len(), 40, "{path:?}");
            files += 1;
        }
    }
    assert_eq!(files, 18);
}

/// Each algorithm's script alone, deciding 2 units for a fresh key.
#[test]
fn each_limiter_script_alone() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    // GCRA, 10 a 10 s (T = 1 s, B = 10): the TAT moves to now + 2 T, which leaves
    // (10 s − 2 s) / T = 8 units and resets in 2 s.
    // Fixed window, 5 a second: 3 units left in this window, which ends in 0.5 s near
    // now; far, now starts a window, which ends in 1 s.
    // Sliding window, 5 a second: nothing in the previous window, 3 left; reset when the
    // window after this one ends, 1.5 s near now, 2 s from a window's start.
    // Sliding log, 5 a second: 3 left, and the 2 logged now expire in 1 s.
    let cases = [
        (
            Config::gcra(10, Duration::from_secs(10)),
            [1, 10, 8, 0, 2 * SECOND, 0],
            2 * SECOND,
        ),
        (
            Config::fixed_window(5, Duration::from_secs(1)),
            [1, 5, 3, 0, SECOND / 2, 0],
            SECOND,
        ),
        (
            Config::sliding_window(5, Duration::from_secs(1)),
            [1, 5, 3, 0, 3 * SECOND / 2, 0],
            2 * SECOND,
        ),
        (
            Config::sliding_log(5, Duration::from_secs(1)),
            [1, 5, 3, 0, SECOND, 0],
            SECOND,
        ),
    ];
    for (config, near, far_reset) in cases {
        let script = Script::of(&config).unwrap();
        let sha = load(&mut redis, script.source());
        let name = format!("{:?}", config.algorithm);
        let args = &script.config_args;
        let decision: Vec<u64> = call(&mut redis, &sha, &[&format!("{name}:near")], NEAR, args);
        assert_eq!(decision, near, "{name} near now");
        let mut far = near;
        far[4] = far_reset;
        let decision: Vec<u64> = call(&mut redis, &sha, &[&format!("{name}:far")], FAR, args);
        assert_eq!(decision, far, "{name} exact");
        redis::cmd("SCRIPT").arg("FLUSH").exec(&mut redis).unwrap();
    }
}

/// The policy's script alone: GCRA 10 a 10 s and a fixed window of 5 a second, 2 units
/// for a fresh subject, each rule decided as its own script decides it above.
#[test]
fn the_policy_script_alone() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let rules = [
        Config::gcra(10, Duration::from_secs(10)),
        Config::fixed_window(5, Duration::from_secs(1)),
    ];
    let script = PolicyScript::of(&rules).unwrap();
    // The rule count, then each rule's algorithm number and configuration.
    assert_eq!(script.config_args, [2, 0, SECOND, 10, 1, 5, SECOND]);
    let sha = load(&mut redis, script.source());
    for (now, window_reset) in [(NEAR, SECOND / 2), (FAR, SECOND)] {
        let keys = [&format!("{now}:0")[..], &format!("{now}:1")];
        let decisions: Vec<Vec<u64>> = call(&mut redis, &sha, &keys, now, &script.config_args);
        assert_eq!(
            decisions,
            [
                vec![1, 10, 8, 0, 2 * SECOND, 0],
                vec![1, 5, 3, 0, window_reset, 0]
            ],
            "{now}"
        );
    }
}
