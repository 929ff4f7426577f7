//! Limiters in files shared between processes (docs/shared.md): real files in a temporary
//! directory, and real processes (`fork`), each deciding on its own mapping.
#![cfg(not(loom))]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use librate::{AcquireError, Config, Limiter, SharedError};

mod common;
use common::{assert_incompatible, assert_os_error, at};

use common::processes::{in_processes, rewrite_word, Scratch};

const SECOND: u64 = 1_000_000_000;
/// The frozen time every process decides at.
const FROZEN: u64 = 1_000 * SECOND;

fn configs(limit: u64) -> [Config; 4] {
    [
        Config::per_hour(limit),
        Config::fixed_window(limit, Duration::from_secs(3600)),
        Config::sliding_window(limit, Duration::from_secs(3600)),
        Config::sliding_log(limit, Duration::from_secs(3600)),
    ]
}

/// 4 processes, each taking units one at a time at a frozen time until denied, admit
/// exactly the limit between them, for every algorithm: one limit, not four.
#[test]
fn processes_share_one_limit() {
    let scratch = Scratch::new("share");
    for config in configs(50) {
        let path = scratch.path(&format!("{:?}", config.algorithm));
        let admitted = in_processes(4, |_| {
            let limiter = Limiter::open(&path, &config).unwrap();
            let mut admitted = 0;
            while limiter.acquire_at(1, at(FROZEN)).unwrap().allowed {
                admitted += 1;
            }
            admitted
        });
        let total: u64 = admitted.iter().map(|&n| u64::from(n)).sum();
        assert_eq!(total, 50, "{config:?}: {admitted:?}");
        // The file outlives the processes: a later opener finds the limit used up.
        let later = Limiter::open(&path, &config).unwrap();
        assert_eq!(
            later.acquire_at(0, at(FROZEN)).unwrap().remaining,
            0,
            "{config:?}"
        );
    }
}

/// 8 processes open one path that does not exist yet, at once: all end on one table (3
/// units between them), and no temporary file is left behind.
#[test]
fn racing_creators_end_on_one_table() {
    let scratch = Scratch::new("race");
    let path = scratch.path("limit");
    let config = Config::per_hour(3);
    let admitted = in_processes(8, |_| {
        let limiter = Limiter::open(&path, &config).unwrap();
        u8::from(limiter.acquire_at(1, at(FROZEN)).unwrap().allowed)
    });
    assert_eq!(admitted.iter().map(|&n| u32::from(n)).sum::<u32>(), 3);
    let names: Vec<_> = fs::read_dir(&scratch.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["limit"]);
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

/// A file made for another configuration, of another size, of garbage, or a directory
/// is refused, and the file is left exactly as it was.
#[test]
fn a_file_that_is_not_this_table_is_refused_untouched() {
    let scratch = Scratch::new("refuse");
    let path = scratch.path("limit");
    let config = Config::per_second(10);
    drop(Limiter::open(&path, &config).unwrap());
    let before = fs::read(&path).unwrap();
    let others = [
        Config::per_second(11),
        Config::gcra(10, Duration::from_secs(2)),
        Config::per_second(10).with_burst(5),
        Config::fixed_window(10, Duration::from_secs(1)),
        Config::sliding_log(10, Duration::from_secs(1)),
    ];
    for other in others {
        assert_incompatible(Limiter::open(&path, &other).unwrap_err(), &path);
    }
    // Burst 0 means the limit: the same table.
    assert!(Limiter::open(&path, &Config::per_second(10).with_burst(10)).is_ok());
    assert_eq!(fs::read(&path).unwrap(), before);

    let garbage = scratch.path("garbage");
    let bytes: Vec<u8> = (0..before.len()).map(|i| (i * 131 % 251) as u8).collect();
    fs::write(&garbage, &bytes).unwrap();
    assert_incompatible(Limiter::open(&garbage, &config).unwrap_err(), &garbage);
    assert_eq!(fs::read(&garbage).unwrap(), bytes);

    let short = scratch.path("short");
    fs::write(&short, &before[..before.len() - 8]).unwrap();
    assert_incompatible(Limiter::open(&short, &config).unwrap_err(), &short);

    let empty = scratch.path("empty");
    fs::write(&empty, b"").unwrap();
    assert_incompatible(Limiter::open(&empty, &config).unwrap_err(), &empty);
}

/// What the operating system refuses is an `Io` error carrying its errno and the path.
#[test]
fn os_refusals_carry_the_errno_and_the_path() {
    let scratch = Scratch::new("os");
    let config = Config::per_second(10);
    let missing_dir = scratch.path("no-such-dir").join("limit");
    assert_os_error(
        Limiter::open(&missing_dir, &config).unwrap_err(),
        &missing_dir,
        libc::ENOENT,
    );
    assert_os_error(
        Limiter::open(&scratch.0, &config).unwrap_err(),
        &scratch.0,
        libc::EISDIR,
    );
    // A symbolic link to nothing is refused, not created through (and not looped on).
    let dangling = scratch.path("dangling");
    std::os::unix::fs::symlink(scratch.path("nowhere"), &dangling).unwrap();
    assert_os_error(
        Limiter::open(&dangling, &config).unwrap_err(),
        &dangling,
        libc::ENOENT,
    );
}

/// Temporary names that other files already have (left by a process killed while
/// creating, or made by anybody) are skipped: the table is still created, and the other
/// files left alone. (Names are `<file>.<pid>.<counter>.tmp`; this process's counter is
/// below 48 here, as its other tests create only a few files.)
#[test]
fn taken_temporary_names_are_skipped() {
    let scratch = Scratch::new("taken");
    let path = scratch.path("limit");
    let squatters: Vec<_> = (0..48)
        .map(|counter| scratch.path(&format!("limit.{}.{counter}.tmp", std::process::id())))
        .collect();
    for squatter in &squatters {
        fs::write(squatter, b"not a table").unwrap();
    }
    let config = Config::per_second(2);
    let limiter = Limiter::open(&path, &config).unwrap();
    assert_eq!(limiter.acquire_at(1, at(FROZEN)).unwrap().remaining, 1);
    for squatter in &squatters {
        assert_eq!(fs::read(squatter).unwrap(), b"not a table");
    }
}

/// A table written during another boot of the host (its boot word differs) is reset
/// when opened: full again.
#[test]
fn a_table_from_another_boot_is_reset() {
    let scratch = Scratch::new("boot");
    let path = scratch.path("limit");
    let config = Config::per_hour(1);
    let limiter = Limiter::open(&path, &config).unwrap();
    assert!(limiter.acquire_at(1, at(FROZEN)).unwrap().allowed);
    drop(limiter);
    assert!(
        !Limiter::open(&path, &config)
            .unwrap()
            .acquire_at(1, at(FROZEN))
            .unwrap()
            .allowed
    );
    rewrite_word(&path, 9, 0x0123_4567_89ab_cdef);
    let reopened = Limiter::open(&path, &config).unwrap();
    assert_eq!(reopened.acquire_at(0, at(FROZEN)).unwrap().remaining, 1);
    assert!(reopened.acquire_at(1, at(FROZEN)).unwrap().allowed);
}

/// Whatever a writer puts in a limiter file's rule block (the serial, the records, the
/// lock, the change in flight), an opener gets a limiter that decides, or a clear
/// `Incompatible`, and a limiter that decides keeps deciding, or says `Incompatible`:
/// never a panic, never a hang.
#[test]
fn any_rule_block_bytes_give_a_limiter_or_incompatible() {
    let scratch = Scratch::new("rule-bytes");
    let config = Config::per_second(8);
    let path = scratch.path("gcra");
    drop(Limiter::open(&path, &config).unwrap());
    let pristine = fs::read(&path).unwrap();
    let (mut opened, mut refused) = (0, 0);
    for round in 0..64u64 {
        fs::write(&path, &pristine).unwrap();
        for word in 16..16 + 32 {
            let value = match (round + word as u64) % 4 {
                0 => 0,
                1 => round % 5,
                2 => u64::MAX - round % 3,
                _ => (round + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (word as u64) << 40,
            };
            rewrite_word(&path, word, value);
        }
        match Limiter::open(&path, &config) {
            Ok(limiter) => {
                opened += 1;
                for now in [0, FROZEN, u64::MAX] {
                    match limiter.acquire_at(1, at(now)) {
                        Ok(decision) => assert!(decision.remaining <= 8),
                        Err(error) => {
                            assert_eq!(error, AcquireError::Shared(SharedError::Incompatible))
                        }
                    }
                }
            }
            Err(error) => {
                refused += 1;
                assert_incompatible(error, &path);
            }
        }
    }
    assert_eq!(opened + refused, 64);
    // The header's rule, which sizes the first state: a sliding log of 1,000 units needs
    // more words than the file holds.
    fs::write(&path, &pristine).unwrap();
    rewrite_word(&path, 3, 3);
    rewrite_word(&path, 4, 1_000);
    assert_incompatible(Limiter::open(&path, &config).unwrap_err(), &path);
}

/// Where a limiter file's state words start (docs/shared.md, the file): after the header
/// (16 words), the rule's block (32) and the registry of 512 processes' pins (a line each).
const SIDES: usize = 16 + 32 + 512 * 8;

/// Whatever a writer puts in the state words, every algorithm still decides.
#[test]
fn any_state_bytes_give_a_decision() {
    let scratch = Scratch::new("bytes");
    for config in configs(8) {
        let path = scratch.path(&format!("{:?}", config.algorithm));
        drop(Limiter::open(&path, &config).unwrap());
        let words = fs::read(&path).unwrap().len() / 8;
        for round in 0..200u64 {
            for word in SIDES..words {
                let value = (round + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (word as u64) << 40;
                rewrite_word(
                    &path,
                    word,
                    if round % 3 == 0 {
                        u64::MAX - (word as u64 % 3)
                    } else {
                        value
                    },
                );
            }
            let limiter = Limiter::open(&path, &config).unwrap();
            for now in [0, FROZEN, u64::MAX / 2, u64::MAX] {
                let decision = limiter.acquire_at(1, at(now)).unwrap();
                assert!(decision.remaining <= 8, "{config:?}");
                let _ = limiter.try_acquire(1).unwrap();
            }
        }
    }
}
