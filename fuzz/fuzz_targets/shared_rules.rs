//! A shared limiter's or keyed table's file whose rule can change (docs/shared.md, changing
//! the rule): a valid file, made by `Limiter::open` or `KeyedLimiter::open` (capacity 2)
//! and changed 0 to 3 times by `set_config_at`, with
//! hostile words written over its header (its rule too, which sizes the first state), its rule
//! block (the serial in force, the pins' epoch, the changes' lock, the change in flight and
//! a table's sweep cursor, the two rule records), its pins' registry and its three sides (a
//! table's three regions); then opened (`open` and `open_replacing`), decided on
//! (`acquire_at`, `try_acquire`, `reserve_at`), changed (`set_config_at` to a rule its
//! state carries over to, and to one of another algorithm), overwritten again while mapped,
//! and described (`describe_file`).
//!
//! Whatever the bytes, every call returns a decision or one of the errors documented for a
//! file another writer wrote (`Incompatible`, `InvalidConfig`, `Io`, `Shared`, `Unsupported`,
//! and a decision's `InsufficientCapacity`), never panics or hangs (libFuzzer's -timeout; the
//! fuzz build gives up on a live holder's lock or pin after a millisecond), and a decision
//! never reports more remaining than its limit.

#![no_main]
#![deny(missing_docs)]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use librate::{Algorithm, Config, Decision, Error, Instant, KeyedLimiter, Limiter};
use librate_fuzz::{config, new_path, next_time, rust_config};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

/// Words of a limiter file's header.
const HEADER_WORDS: usize = 16;
/// Words of the rule block after it.
const BLOCK_WORDS: usize = 32;
/// Entries of the pins' registry after the block, and words per entry.
const ENTRIES: usize = 512;
const ENTRY_WORDS: usize = 8;
/// Where the registry and the sides start.
const REGISTRY: usize = HEADER_WORDS + BLOCK_WORDS;
const SIDES: usize = REGISTRY + ENTRIES * ENTRY_WORDS;

/// What tells pristine files apart: the rule's words, how many changes were made, and
/// whether the file is a keyed table's.
type FileId = ([u64; 4], u8, bool);

/// A keyed table's capacity: four slots.
const CAPACITY: u64 = 2;

/// A limiter or a keyed table on the file.
enum Handle {
    One(Limiter),
    Keyed(KeyedLimiter),
}

impl Handle {
    fn open(path: &Path, config: &Config, keyed: bool, replace: bool) -> Outcome<Self> {
        Ok(match (keyed, replace) {
            (false, false) => Self::One(Limiter::open(path, config)?),
            (false, true) => Self::One(Limiter::open_replacing(path, config)?),
            (true, false) => Self::Keyed(KeyedLimiter::open(path, config, CAPACITY)?),
            (true, true) => Self::Keyed(KeyedLimiter::open_replacing(path, config, CAPACITY)?),
        })
    }

    fn acquire_at(&self, key: &[u8], n: u64, now: u64) -> Outcome<Decision> {
        match self {
            Self::One(limiter) => Ok(limiter.acquire_at(n, Instant::from_nanos(now))?),
            Self::Keyed(table) => Ok(table.acquire_at(key, n, Instant::from_nanos(now))?),
        }
    }

    fn try_acquire(&self, key: &[u8], n: u64) -> Outcome<bool> {
        match self {
            Self::One(limiter) => Ok(limiter.try_acquire(n)?),
            Self::Keyed(table) => Ok(table.try_acquire(key, n)?),
        }
    }

    fn reserve_at(&self, key: &[u8], n: u64, now: u64, max_wait: u64) -> Outcome<Decision> {
        match self {
            Self::One(limiter) => Ok(limiter.reserve_at(
                n,
                Instant::from_nanos(now),
                Duration::from_nanos(max_wait),
            )?),
            Self::Keyed(table) => Ok(table.reserve_at(
                key,
                n,
                Instant::from_nanos(now),
                Duration::from_nanos(max_wait),
            )?),
        }
    }

    fn set_config_at(&self, config: &Config, now: u64) -> Outcome<()> {
        match self {
            Self::One(limiter) => Ok(limiter.set_config_at(config, Instant::from_nanos(now))?),
            Self::Keyed(table) => Ok(table.set_config_at(config, Instant::from_nanos(now))?),
        }
    }

    fn reset(&self, key: &[u8]) -> Outcome<()> {
        match self {
            Self::One(limiter) => {
                limiter.reset();
                Ok(())
            }
            Self::Keyed(table) => Ok(table.reset(key)?),
        }
    }

    fn config(&self) -> Config {
        match self {
            Self::One(limiter) => *limiter.config(),
            Self::Keyed(table) => *table.config(),
        }
    }
}

/// A call's outcome.
type Outcome<T> = std::result::Result<T, Error>;

thread_local! {
    /// Each pristine file's bytes, `None` where the rule cannot make one.
    static PRISTINE: RefCell<HashMap<FileId, Option<Vec<u8>>>> = RefCell::new(HashMap::new());
}

fuzz_target!(|data: &[u8]| {
    let mut input = Unstructured::new(data);
    let _ = run(&mut input);
});

/// This process's token as a lock or a registry entry names it (its pid, and the low
/// bits of its start time): a live holder, which is never taken over.
fn live_token() -> u64 {
    static TOKEN: OnceLock<u64> = OnceLock::new();
    *TOKEN.get_or_init(|| {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        // Field 22, the start time; the fields after the name start at field 3.
        let started: u64 = after
            .split_whitespace()
            .nth(19)
            .and_then(|field| field.parse().ok())
            .unwrap_or(0);
        u64::from(std::process::id()) << 32 | (started & 0xffff_ffff)
    })
}

/// The `k`-th rule a change gives a file of `config`: its algorithm, another limit.
fn carried(config: &Config, k: u64) -> Config {
    let limit = config.limit.saturating_add(k).max(1);
    Config::new(config.algorithm, limit, config.period())
}

/// A rule of another algorithm: no change carries `config`'s state over to it.
fn incompatible(config: &Config) -> Config {
    match config.algorithm {
        Algorithm::Gcra => Config::fixed_window(
            config.limit.max(1),
            config.period().max(Duration::from_nanos(1)),
        ),
        _ => Config::gcra(
            config.limit.max(1),
            config.period().max(Duration::from_nanos(1)),
        ),
    }
}

/// A file of `config` (a keyed table's if `keyed`), changed `changes` times at time 0, a
/// key taking a unit before each: its bytes, `None` if the rule makes no file (or the
/// changes stop early: fewer are made).
fn pristine(config: &Config, changes: u8, keyed: bool) -> Option<Vec<u8>> {
    let path = new_path("librate-fuzz-rules");
    let limiter = Handle::open(&path, config, keyed, false).ok();
    if let Some(limiter) = &limiter {
        for k in 1..=changes {
            let _ = limiter.acquire_at(&[k], 1, 0);
            if limiter
                .set_config_at(&carried(config, k.into()), 0)
                .is_err()
            {
                break;
            }
        }
    }
    let bytes = limiter.and_then(|_| std::fs::read(&path).ok());
    let _ = std::fs::remove_file(&path);
    bytes
}

/// A word of the file to overwrite: the header (now and then), the rule block, a registry
/// entry (one of the first few, which this process takes, mostly), or a side.
fn any_word(input: &mut Unstructured<'_>, words: usize) -> Result<usize> {
    Ok(match input.int_in_range(0u8..=15)? {
        0 => input.int_in_range(0..=HEADER_WORDS - 1)?,
        1..=6 => HEADER_WORDS + input.int_in_range(0..=BLOCK_WORDS - 1)?,
        7..=9 => {
            let entry = match input.int_in_range(0u8..=3)? {
                0 => input.int_in_range(0..=ENTRIES - 1)?,
                _ => input.int_in_range(0..=3)?,
            };
            REGISTRY + entry * ENTRY_WORDS + input.int_in_range(0..=ENTRY_WORDS - 1)?
        }
        _ => input.int_in_range(SIDES..=words - 1)?,
    })
}

/// A hostile value for a word holding `old`: any bytes, near a boundary (the marker a
/// change leaves is `u64::MAX`), small (a serial, an algorithm, a count), the old value
/// plus or minus a little, or this process's token (a live lock holder or entry owner).
fn any_value(input: &mut Unstructured<'_>, old: u64) -> Result<u64> {
    Ok(match input.int_in_range(0u8..=5)? {
        0 => input.arbitrary()?,
        1 => u64::MAX - input.int_in_range(0..=300)?,
        2 => input.int_in_range(0..=300)?,
        3 => live_token(),
        _ => old
            .wrapping_add(input.int_in_range(0..=64)?)
            .wrapping_sub(32),
    })
}

/// Writes the input's words over `bytes`.
fn corrupt(input: &mut Unstructured<'_>, bytes: &mut [u8]) -> Result<()> {
    let words = bytes.len() / 8;
    for _ in 0..input.int_in_range(0..=16)? {
        let at = 8 * any_word(input, words)?;
        let old = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        let value = any_value(input, old)?;
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }
    Ok(())
}

/// Checks an opener's outcome: a handle, or an error for a file it refuses.
fn opened(outcome: Outcome<Handle>) -> Option<Handle> {
    match outcome {
        Ok(limiter) => Some(limiter),
        Err(Error::Incompatible { .. } | Error::InvalidConfig(_) | Error::Io(_)) => None,
        Err(error) => panic!("open: {error:?}"),
    }
}

fn run(input: &mut Unstructured<'_>) -> Result<()> {
    let config = rust_config(&config(input)?);
    if Limiter::new(&config).is_err() {
        return Ok(());
    }
    let changes = input.int_in_range(0u8..=3)?;
    let keyed = input.arbitrary::<bool>()?;
    let id = (
        [
            config.algorithm as u64,
            config.limit,
            config.period().as_nanos() as u64,
            config.burst,
        ],
        changes,
        keyed,
    );
    let bytes = PRISTINE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= 256 {
            cache.clear();
        }
        cache
            .entry(id)
            .or_insert_with(|| pristine(&config, changes, keyed))
            .clone()
    });
    let Some(mut bytes) = bytes else {
        return Ok(());
    };
    corrupt(input, &mut bytes)?;
    let path = new_path("librate-fuzz-rules");
    std::fs::write(&path, &bytes).unwrap();
    let result = on_file(input, &path, &config, (changes, keyed), bytes.len() / 8);
    std::fs::remove_file(&path).unwrap();
    result
}

/// Opens the file at `path` (made for `config`, changed `changes` times, a keyed table's
/// if `keyed`) and calls on it.
fn on_file(
    input: &mut Unstructured<'_>,
    path: &Path,
    config: &Config,
    (changes, keyed): (u8, bool),
    words: usize,
) -> Result<()> {
    // The rule in force as made, and another its state carries over to.
    let in_force = carried(config, changes.into());
    let rules = [
        *config,
        in_force,
        carried(config, u64::from(changes) + 1),
        incompatible(config),
    ];
    let mut handles = Vec::new();
    let held = &rules[(changes > 0) as usize];
    if let Some(handle) = opened(Handle::open(path, held, keyed, false)) {
        handles.push(handle);
    }
    let replacing = rules[usize::from(input.int_in_range(0u8..=3)?)];
    if let Some(handle) = opened(Handle::open(path, &replacing, keyed, true)) {
        handles.push(handle);
    }
    let file = File::options().write(true).open(path).unwrap();
    let mut now = input.arbitrary()?;
    while !input.is_empty() {
        now = next_time(input, now, config.period().as_nanos() as u64)?;
        let operation = input.int_in_range(0u8..=9)?;
        if operation == 9 {
            // Another writer, while the file is mapped.
            let at = any_word(input, words)?;
            let value = any_value(input, 0)?;
            file.write_all_at(&value.to_le_bytes(), 8 * at as u64)
                .unwrap();
            continue;
        }
        if operation == 8 {
            describe(path);
            continue;
        }
        if handles.is_empty() {
            continue;
        }
        let limiter = &handles[usize::from(input.int_in_range(0u8..=1)?) % handles.len()];
        let n = match input.int_in_range(0u8..=3)? {
            0 => input.arbitrary()?,
            _ => input.int_in_range(0..=9)?,
        };
        let key = [input.int_in_range(0u8..=4)?];
        match operation {
            0 | 1 => decided(limiter.acquire_at(&key, n, now)),
            2 => decided(limiter.try_acquire(&key, n).map(|_| None::<Decision>)),
            3 => decided(limiter.reserve_at(&key, n, now, input.arbitrary()?)),
            4 | 5 => {
                let rule = &rules[usize::from(input.int_in_range(1u8..=3)?)];
                changed(limiter.set_config_at(rule, now));
            }
            6 => {
                decided(limiter.reset(&key).map(|()| None::<Decision>));
                decided(limiter.acquire_at(&key, 0, now));
            }
            _ => {
                // The rule in force, as this process last adopted it: always a rule.
                let held = limiter.config();
                assert!(Limiter::new(&held).is_ok(), "config {held:?}");
            }
        }
    }
    describe(path);
    Ok(())
}

/// Checks a decision's outcome: a decision whose remaining is within its limit, or an
/// error a decision gives.
fn decided<D: Into<Option<Decision>>>(outcome: Outcome<D>) {
    match outcome {
        Ok(decision) => {
            if let Some(decision) = decision.into() {
                assert!(decision.remaining <= decision.limit, "{decision:?}");
            }
        }
        Err(
            Error::InsufficientCapacity
            | Error::TableFull
            | Error::Unsupported
            | Error::Shared(_)
            | Error::Incompatible { .. }
            | Error::InvalidConfig(_)
            | Error::Io(_),
        ) => {}
        Err(error) => panic!("decision: {error:?}"),
    }
}

/// Checks a change's outcome.
fn changed(outcome: Outcome<()>) {
    match outcome {
        Ok(())
        | Err(
            Error::Incompatible { .. }
            | Error::InvalidConfig(_)
            | Error::Io(_)
            | Error::Unsupported
            | Error::Shared(_),
        ) => {}
        Err(error) => panic!("set_config_at: {error:?}"),
    }
}

/// Checks `describe_file`: a sentence naming the file.
fn describe(path: &Path) {
    match librate::describe_file(path) {
        Ok(sentence) => {
            let named = format!("{}: ", path.display());
            assert!(sentence.starts_with(&named), "{sentence}");
        }
        // Always the file's I/O error, with its path.
        Err(_) => {}
    }
}
