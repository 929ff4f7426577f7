//! Keyed tables in files shared between processes (docs/keyed.md, docs/shared.md): real files, real
//! processes (`fork`), and processes killed with SIGKILL in the middle of inserts.
#![cfg(not(loom))]

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use librate::{Config, ConfigError, KeyedAcquireError, KeyedLimiter, Limiter, OpenError};

mod common;

use common::processes::{
    in_processes, in_threads, kill_and_reap, read_word, rewrite_word, spawn, Scratch,
};
use common::{assert_incompatible, assert_os_error, at, Rng};

const SECOND: u64 = 1_000_000_000;
const HOUR: u64 = 3600 * SECOND;
/// The frozen time every process decides at.
const FROZEN: u64 = 1_000 * SECOND;

/// The file's layout, as `src/shared/header.rs` and `src/keyed/layout.rs` write it: a header of
/// 16 words, a control block of 16, a claim registry of 64 entries of 8 words, then the
/// slots (2 words each for GCRA: fingerprint, TAT).
const HEADER: usize = 16;
/// Region A, where a table whose rule never changed keeps its keys: after the rule block
/// (32 words) and the pins registry (512 entries of 8 words).
const REGION_A: usize = HEADER + 32 + 512 * 8;
const REGISTRY: usize = REGION_A + 16;
const ENTRY_WORDS: usize = 8;
const CLAIMS: u64 = 64;
const SLOTS: usize = REGISTRY + 64 * ENTRY_WORDS;
/// The largest state a slot's first word holds; the markers lie above it.
const MAX_STATE: u64 = u64::MAX - 256;
const VACANT: u64 = u64::MAX;

/// The marker of claim `entry`.
fn installing(entry: u64) -> u64 {
    MAX_STATE + 1 + entry
}

fn configs(limit: u64) -> [Config; 4] {
    [
        Config::per_hour(limit),
        Config::fixed_window(limit, Duration::from_secs(3600)),
        Config::sliding_window(limit, Duration::from_secs(3600)),
        Config::sliding_log(limit, Duration::from_secs(3600)),
    ]
}

/// 4 processes × 4 threads take units of 10 keys at a frozen time until every key is
/// denied: exactly 5 per key are admitted between them, for every algorithm, and a later
/// opener finds every key used up.
#[test]
fn processes_share_one_table() {
    let scratch = Scratch::new("keyed-share");
    let keys: Vec<String> = (0..10).map(|k| format!("user-{k}")).collect();
    for config in configs(5) {
        let path = scratch.path(&format!("{:?}", config.algorithm));
        let admitted = in_processes(4, |_| {
            let table = KeyedLimiter::open(&path, &config, 64).unwrap();
            let total = in_threads(4, |thread| {
                let mut admitted = 0;
                for key in keys.iter().cycle().skip(thread).take(keys.len() * 8) {
                    admitted += u64::from(
                        table
                            .acquire_at(key.as_bytes(), 1, at(FROZEN))
                            .unwrap()
                            .allowed,
                    );
                }
                admitted
            });
            total as u8
        });
        let total: u64 = admitted.iter().map(|&n| u64::from(n)).sum();
        assert_eq!(total, 50, "{config:?}: {admitted:?}");
        let later = KeyedLimiter::open(&path, &config, 64).unwrap();
        for key in &keys {
            let query = later.acquire_at(key.as_bytes(), 0, at(FROZEN)).unwrap();
            assert_eq!(query.remaining, 0, "{config:?} {key}");
        }
        assert_eq!(later.live_keys_at(at(FROZEN)), 10, "{config:?}");
    }
}

/// 8 processes open one new path at once: one table, one hash key, one limit per key.
#[test]
fn racing_creators_end_on_one_table() {
    let scratch = Scratch::new("keyed-race");
    let path = scratch.path("table");
    let config = Config::per_hour(3);
    let admitted = in_processes(8, |_| {
        let table = KeyedLimiter::open(&path, &config, 100).unwrap();
        u8::from(table.acquire_at(b"k", 1, at(FROZEN)).unwrap().allowed)
    });
    assert_eq!(admitted.iter().map(|&n| u32::from(n)).sum::<u32>(), 3);
    let names: Vec<_> = fs::read_dir(&scratch.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["table"]);
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

/// A keyed file opened with another capacity or configuration, as a limiter, or a
/// limiter's file opened as a table: refused, and the file left as it was.
#[test]
fn a_file_for_another_table_is_refused_untouched() {
    let scratch = Scratch::new("keyed-mismatch");
    let path = scratch.path("table");
    let config = Config::per_hour(3);
    let table = KeyedLimiter::open(&path, &config, 100).unwrap();
    assert!(table.acquire_at(b"k", 1, at(FROZEN)).unwrap().allowed);
    let before = fs::read(&path).unwrap();
    for (other, capacity) in [
        (config, 101),
        (Config::per_hour(4), 100),
        (Config::per_hour(3).with_burst(4), 100),
        (Config::fixed_window(3, Duration::from_secs(3600)), 100),
    ] {
        assert_incompatible(
            KeyedLimiter::open(&path, &other, capacity).unwrap_err(),
            &path,
        );
    }
    assert_incompatible(Limiter::open(&path, &config).unwrap_err(), &path);
    let limiter_path = scratch.path("limiter");
    drop(Limiter::open(&limiter_path, &config).unwrap());
    let refused = KeyedLimiter::open(&limiter_path, &config, 100).unwrap_err();
    assert_incompatible(refused, &limiter_path);
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(matches!(
        KeyedLimiter::open(&path, &config, 0),
        Err(OpenError::Config(ConfigError::ZeroCapacity))
    ));
    let nowhere = scratch.path("none/table");
    let refused = KeyedLimiter::open(&nowhere, &config, 1).unwrap_err();
    assert_os_error(refused, &nowhere, libc::ENOENT);
}

/// A table larger than its file system's free space (here half a petabyte) is refused
/// before any of it is written, rather than written until the file system is full, and
/// leaves no file behind.
#[test]
fn a_table_larger_than_the_free_space_is_refused_at_once() {
    let scratch = Scratch::new("keyed-huge");
    let path = scratch.path("table");
    let refused = KeyedLimiter::open(&path, &Config::per_hour(3), 1 << 44).unwrap_err();
    assert_os_error(refused, &path, libc::ENOSPC);
    assert_eq!(fs::read_dir(scratch.path("")).unwrap().count(), 0);
}

/// A table of another boot is reset: every slot vacant again, every key full.
#[test]
fn a_table_from_another_boot_is_reset() {
    let scratch = Scratch::new("keyed-boot");
    let path = scratch.path("table");
    let config = Config::per_hour(1);
    let table = KeyedLimiter::open(&path, &config, 2).unwrap();
    for key in [b"a", b"b", b"c", b"d"] {
        assert!(table.acquire_at(key, 1, at(FROZEN)).unwrap().allowed);
    }
    assert_eq!(
        table.acquire_at(b"e", 1, at(FROZEN)).unwrap_err(),
        KeyedAcquireError::TableFull
    );
    drop(table);
    rewrite_word(&path, 9, 0x0123_4567_89ab_cdef);
    let reset = KeyedLimiter::open(&path, &config, 2).unwrap();
    assert_eq!(reset.live_keys_at(at(FROZEN)), 0);
    for key in [b"a", b"e", b"f", b"g"] {
        assert!(reset.acquire_at(key, 1, at(FROZEN)).unwrap().allowed);
    }
}

/// A table whose processes live in another PID namespace (another container) is refused
/// and left untouched: its claims name processes by pids this process cannot check. From
/// another boot, it is reset and becomes this namespace's.
#[test]
fn a_table_of_another_pid_namespace_is_refused_until_reboot() {
    use std::os::unix::fs::MetadataExt;
    let scratch = Scratch::new("keyed-namespace");
    let path = scratch.path("table");
    let config = Config::per_hour(1);
    let table = KeyedLimiter::open(&path, &config, 2).unwrap();
    assert!(table.acquire_at(b"a", 1, at(FROZEN)).unwrap().allowed);
    drop(table);
    let namespace = fs::metadata("/proc/self/ns/pid").unwrap().ino();
    assert_eq!(read_word(&path, 12), namespace);
    rewrite_word(&path, 12, namespace + 1);
    let before = fs::read(&path).unwrap();
    assert_incompatible(KeyedLimiter::open(&path, &config, 2).unwrap_err(), &path);
    assert_eq!(fs::read(&path).unwrap(), before);
    rewrite_word(&path, 9, 0x0123_4567_89ab_cdef);
    let reset = KeyedLimiter::open(&path, &config, 2).unwrap();
    assert_eq!(read_word(&path, 12), namespace);
    assert!(reset.acquire_at(b"a", 1, at(FROZEN)).unwrap().allowed);
}

/// The index of the one slot whose first word differs between two images of the file.
fn changed_slot(before: &[u8], after: &[u8]) -> usize {
    let words = |bytes: &[u8]| -> Vec<u64> {
        bytes
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let (before, after) = (words(before), words(after));
    let changed: Vec<usize> = (SLOTS..before.len())
        .filter(|&w| (w - SLOTS) % 2 == 1 && before[w] != after[w])
        .map(|w| (w - SLOTS) / 2)
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    changed[0]
}

/// A token for a process that is gone: a child that has exited and been reaped.
fn dead_token() -> u64 {
    let pid = spawn(|| {});
    let mut status = 0;
    // SAFETY: reaps the child just forked.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    (pid as u64) << 32
}

/// A slot left claimed by a process that died mid-insert is put back as the claim found
/// it (its old key, fingerprint and state) by the next process that needs it; a claim
/// marker that no live claim explains (a free entry, an entry past the registry) becomes
/// a vacant slot. Each entry involved is free again afterwards.
#[test]
fn a_claim_whose_process_died_is_put_back() {
    let scratch = Scratch::new("keyed-dead-claim");
    let path = scratch.path("table");
    // GCRA, 1 per hour: a key's TAT after one admission at FROZEN is FROZEN + 1 h.
    let config = Config::per_hour(1);
    let table = KeyedLimiter::open(&path, &config, 8).unwrap();
    let empty = fs::read(&path).unwrap();
    assert!(table.acquire_at(b"old", 1, at(FROZEN)).unwrap().allowed);
    let slot = changed_slot(&empty, &fs::read(&path).unwrap());
    let first = SLOTS + 2 * slot + 1;
    assert_eq!(read_word(&path, first), FROZEN + HOUR);
    let fingerprint = read_word(&path, first - 1);

    // Entry 5 claimed the slot and its process died before installing: the slot holds
    // the marker, and the dead install had already written another key's fingerprint.
    let entry = REGISTRY + 5 * ENTRY_WORDS;
    rewrite_word(&path, entry, dead_token());
    rewrite_word(&path, entry + 1, slot as u64);
    rewrite_word(&path, entry + 2, FROZEN + HOUR);
    rewrite_word(&path, entry + 3, fingerprint);
    rewrite_word(&path, first - 1, !fingerprint);
    rewrite_word(&path, first, installing(5));
    let denied = table.acquire_at(b"old", 1, at(FROZEN + 1)).unwrap();
    assert!(!denied.allowed);
    assert_eq!(denied.retry_after_ns, HOUR - 1);
    assert_eq!(read_word(&path, first), FROZEN + HOUR);
    assert_eq!(read_word(&path, first - 1), fingerprint);
    assert_eq!(read_word(&path, entry), 0, "the entry is free again");

    // A marker of a free entry, and one past the registry: bytes, not claims.
    for marker in [installing(7), installing(CLAIMS), installing(254)] {
        rewrite_word(&path, first, marker);
        // `old` waits for the slot, which turns vacant: `old` is new again.
        assert!(table.acquire_at(b"old", 1, at(FROZEN + 2)).unwrap().allowed);
        assert_ne!(read_word(&path, first), marker);
    }
    assert_eq!(read_word(&path, REGISTRY + 7 * ENTRY_WORDS), 0);
}

/// A key stored further from its home than the file's probe bound says (bytes another
/// process overwrote: here the bound is 0 and the key's home holds another key) is found
/// by the insert that meets it on its scan, and the request is decided on its state,
/// rather than looked up within the bound, missed and inserted again for ever.
#[test]
fn a_key_past_the_recorded_bound_is_found() {
    let scratch = Scratch::new("keyed-past-bound");
    let path = scratch.path("table");
    // GCRA, 1 per hour: a key's TAT after one admission at FROZEN is FROZEN + 1 h.
    let config = Config::per_hour(1);
    let table = KeyedLimiter::open(&path, &config, 8).unwrap();
    let empty = fs::read(&path).unwrap();
    assert!(table.acquire_at(b"k", 1, at(FROZEN)).unwrap().allowed);
    let home = changed_slot(&empty, &fs::read(&path).unwrap());
    let fingerprint = read_word(&path, SLOTS + 2 * home);
    // Every slot live until FROZEN + 1 h: the home one another key's, every other one
    // this key's, and no slot vacant, so an insert must scan the whole table.
    let slots = (fs::read(&path).unwrap().len() / 8 - SLOTS) / 2;
    for slot in 0..slots {
        let key = if slot == home {
            !fingerprint
        } else {
            fingerprint
        };
        rewrite_word(&path, SLOTS + 2 * slot, key);
        rewrite_word(&path, SLOTS + 2 * slot + 1, FROZEN + HOUR);
    }
    // The control block's max_distance.
    rewrite_word(&path, HEADER, 0);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(table.acquire_at(b"k", 1, at(FROZEN + 1))));
    let decision = receiver
        .recv_timeout(Duration::from_secs(60))
        .expect("the acquire returns")
        .unwrap();
    assert!(!decision.allowed);
    assert_eq!(decision.retry_after_ns, HOUR - 1);
}

/// This process's token as a claim registry holds it: pid, then the low half of its start
/// time in clock ticks (field 22 of `/proc/self/stat`).
fn own_token() -> u64 {
    let stat = fs::read_to_string("/proc/self/stat").unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 1..];
    let started: u64 = after_name
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    u64::from(std::process::id()) << 32 | (started & 0xffff_ffff)
}

/// A forged claim that names a live process (this one) and the very slot it marks, which
/// no recovery may take back: calls that need the slot stop waiting after about a second
/// and report the table full, and the other keys decide as before.
#[test]
fn a_forged_claim_of_a_live_process_ends_the_wait() {
    let scratch = Scratch::new("keyed-live-forgery");
    let path = scratch.path("table");
    let config = Config::per_hour(1);
    let table = KeyedLimiter::open(&path, &config, 8).unwrap();
    let empty = fs::read(&path).unwrap();
    assert!(table.acquire_at(b"stuck", 1, at(FROZEN)).unwrap().allowed);
    let slot = changed_slot(&empty, &fs::read(&path).unwrap());
    let first = SLOTS + 2 * slot + 1;
    let entry = REGISTRY + 3 * ENTRY_WORDS;
    rewrite_word(&path, entry, own_token());
    rewrite_word(&path, entry + 1, slot as u64);
    rewrite_word(&path, entry + 2, FROZEN + HOUR);
    rewrite_word(&path, entry + 3, read_word(&path, first - 1));
    rewrite_word(&path, first, installing(3));
    let started = Instant::now();
    assert_eq!(
        table.acquire_at(b"stuck", 1, at(FROZEN + 1)).unwrap_err(),
        KeyedAcquireError::TableFull
    );
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    assert!(waited < Duration::from_secs(30), "{waited:?}");
    assert_eq!(
        read_word(&path, first),
        installing(3),
        "a live claim is never taken"
    );
}

/// Every registry entry held by a live process (forged: this process's token in each) —
/// no insert can register a claim: a new key is refused as the table full after about a
/// second, never waited on for good, and a key already in the table still decides.
#[test]
fn a_registry_full_of_live_owners_refuses_new_keys() {
    let scratch = Scratch::new("keyed-live-registry");
    let path = scratch.path("table");
    let config = Config::per_hour(1);
    let table = KeyedLimiter::open(&path, &config, 8).unwrap();
    assert!(table.acquire_at(b"known", 1, at(FROZEN)).unwrap().allowed);
    for entry in 0..CLAIMS as usize {
        rewrite_word(&path, REGISTRY + entry * ENTRY_WORDS, own_token());
    }
    let started = Instant::now();
    assert_eq!(
        table.acquire_at(b"new", 1, at(FROZEN)).unwrap_err(),
        KeyedAcquireError::TableFull
    );
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    assert!(waited < Duration::from_secs(30), "{waited:?}");
    let known = table.acquire_at(b"known", 1, at(FROZEN + 1)).unwrap();
    assert_eq!((known.allowed, known.retry_after_ns), (false, HOUR - 1));
}

/// Workers in 4 processes of 4 threads insert fresh keys without pause while they are
/// killed (SIGKILL) at random moments, 40 times over. Then every key still decides, and
/// once the old keys are fresh the table takes as many new keys as it has slots: no slot
/// stays claimed by a dead process. A registry entry still taken names a killed worker
/// (the next insert to need it takes it over), never this process.
#[test]
fn killed_inserters_leave_a_usable_table() {
    let scratch = Scratch::new("keyed-kill");
    let path = scratch.path("table");
    let config = Config::per_second(2);
    let capacity = 256;
    drop(KeyedLimiter::open(&path, &config, capacity).unwrap());
    let mut rng = Rng::new(16);
    let mut stuck_after_kills = 0;
    let mut killed = HashSet::new();
    for round in 0..40u64 {
        let workers: Vec<_> = (0..4u64)
            .map(|worker| {
                let path = path.clone();
                spawn(move || {
                    let table = KeyedLimiter::open(&path, &config, capacity).unwrap();
                    in_threads(4, |thread| loop {
                        for i in 0u64.. {
                            let key = format!("{round}-{worker}-{thread}-{i}");
                            // Times move on, so older keys go fresh and are reclaimed.
                            let now = FROZEN + i * SECOND / 8;
                            let _ = table.acquire_at(key.as_bytes(), 1, at(now));
                        }
                    });
                })
            })
            .collect();
        std::thread::sleep(Duration::from_micros(rng.range(500, 20_000)));
        for pid in workers {
            kill_and_reap(pid);
            killed.insert(pid as u64);
        }
        let words = fs::read(&path).unwrap();
        stuck_after_kills += (SLOTS..words.len() / 8)
            .filter(|&w| (w - SLOTS) % 2 == 1)
            .filter(|&w| {
                let first = u64::from_le_bytes(words[w * 8..w * 8 + 8].try_into().unwrap());
                first > MAX_STATE && first != VACANT
            })
            .count();
    }
    println!("slots left claimed by killed processes, over all rounds: {stuck_after_kills}");
    let table = KeyedLimiter::open(&path, &config, capacity).unwrap();
    let later = FROZEN + 1_000_000 * SECOND;
    let started = Instant::now();
    let mut seen = HashSet::new();
    for i in 0..table.max_keys() {
        let key = format!("after-{i}");
        let decision = table.acquire_at(key.as_bytes(), 1, at(later)).unwrap();
        assert!(decision.allowed, "{key}");
        seen.insert(key);
    }
    assert_eq!(table.live_keys_at(at(later)), table.max_keys());
    assert_eq!(
        table.acquire_at(b"one-too-many", 1, at(later)).unwrap_err(),
        KeyedAcquireError::TableFull
    );
    for entry in 0..CLAIMS as usize {
        let owner = read_word(&path, REGISTRY + entry * ENTRY_WORDS);
        assert!(
            owner == 0 || killed.contains(&(owner >> 32)),
            "entry {entry}: {owner:#x}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(60));
}

/// Whatever the slots, registry and control block hold (random words, claim markers of
/// every kind, probe bounds past the table), every call returns a decision or an error,
/// from several threads at once, and none waits forever.
#[test]
fn any_region_bytes_give_a_decision() {
    let scratch = Scratch::new("keyed-bytes");
    let mut rng = Rng::new(7);
    for config in configs(4) {
        let path = scratch.path(&format!("{:?}", config.algorithm));
        drop(KeyedLimiter::open(&path, &config, 16).unwrap());
        let words = fs::read(&path).unwrap().len() / 8;
        for round in 0..12u64 {
            let mut bytes = fs::read(&path).unwrap();
            // Region A's words (the rule block's are the fuzzer's: `shared_rules`).
            for word in REGION_A..words {
                let value = match rng.below(6) {
                    0 => rng.next_u64(),
                    1 => installing(rng.below(256)),
                    2 => VACANT,
                    3 => rng.below(64),
                    4 => FROZEN + rng.below(HOUR),
                    _ => continue,
                };
                bytes[word * 8..word * 8 + 8].copy_from_slice(&value.to_le_bytes());
            }
            fs::write(&path, bytes).unwrap();
            let table = Arc::new(KeyedLimiter::open(&path, &config, 16).unwrap());
            let done = AtomicBool::new(false);
            in_threads(4, |thread| {
                for i in 0..40u64 {
                    let key = format!("k{}", (i + thread as u64 + round) % 24);
                    let now = [0, FROZEN, FROZEN + i * HOUR, u64::MAX][i as usize % 4];
                    match table.acquire_at(key.as_bytes(), 1, at(now)) {
                        Ok(decision) => assert!(decision.remaining <= 4, "{config:?}"),
                        Err(error) => assert_eq!(error, KeyedAcquireError::TableFull, "{config:?}"),
                    }
                    let _ = table.try_acquire(key.as_bytes(), 1);
                }
                done.store(true, Ordering::Relaxed);
                0
            });
            assert!(done.load(Ordering::Relaxed));
        }
    }
}
