//! A table file's header: what the file is and enforces (the words an opener compares),
//! and the facts of the host it records (its boot, the PID namespace of its processes).
// Under loom only a limiter file's words are modelled (`model.rs`), not its header.
#![cfg_attr(loom, allow(dead_code))]

use std::fs;

use crate::config::{Algorithm, Config};
use crate::decider::Decider;
use crate::error::{ChangeError, OpenError};
use std::path::Path;

/// Words before the state.
pub(crate) const HEADER_WORDS: usize = 16;
/// "librate" and a NUL, read as a little-endian word.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"librate\0");
/// The layout this code reads and writes. 2: the sliding log has a floor word, a keyed
/// table counts its `TableFull` refusals in its control block, and fingerprint 0 names
/// the former state of a reset key. 3: a limiter's rule can change in its file
/// (`rules.rs`: its block, the pins' registry and three sides of state).
pub(crate) const LAYOUT_VERSION: u64 = 4;
/// The kind of table a file holds: a single limiter.
pub(crate) const KIND_LIMITER: u64 = 1;
/// The kind of table a file holds: a keyed table.
pub(crate) const KIND_KEYED: u64 = 2;
/// The kind of table a file holds: a keyed policy's rules, each a keyed table or a
/// limiter's words, described after the header.
pub(crate) const KIND_KEYED_POLICY: u64 = 3;
/// The kind of table a file holds: a lease's holder for a host (`lease/host.rs`): the
/// holder's words, its share's among them; the header names the global rule, its capacity
/// the lease in microseconds.
pub(crate) const KIND_LEASE: u64 = 4;

/// Header word indexes.
const W_MAGIC: usize = 0;
pub(crate) const W_VERSION: usize = 1;
pub(crate) const W_KIND: usize = 2;
pub(crate) const W_ALGORITHM: usize = 3;
const W_LIMIT: usize = 4;
const W_PERIOD: usize = 5;
pub(super) const W_BURST: usize = 6;
pub(crate) const W_CAPACITY: usize = 7;
const W_SIZE: usize = 8;
pub(super) const W_BOOT: usize = 9;
/// A keyed table's hash key, two words (random per file, so not part of its identity).
pub(super) const W_HASH_KEY: usize = 10;
/// A keyed table's PID namespace (see [`Contents::pid_namespace`](super::Contents::pid_namespace)),
/// set for each boot.
pub(super) const W_PID_NAMESPACE: usize = 12;

/// What a file must hold to be this table: the header words a creator writes and an
/// opener compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    /// [`KIND_LIMITER`].
    pub(crate) kind: u64,
    pub(crate) algorithm: u64,
    pub(crate) limit: u64,
    pub(crate) period_ns: u64,
    /// GCRA's effective burst (`limit` when configured as 0); 0 for the windows.
    pub(crate) burst: u64,
    pub(crate) capacity: u64,
}

impl Identity {
    /// The identity of a table of `kind` for `config` (with its `decider`) and `capacity`
    /// (0 for a limiter).
    pub(crate) fn of(kind: u64, config: &Config, decider: &Decider, capacity: u64) -> Self {
        Self {
            kind,
            algorithm: config.algorithm as u64,
            limit: config.limit,
            period_ns: config.period_ns,
            burst: match config.algorithm {
                Algorithm::Gcra => decider.limit(),
                _ => 0,
            },
            capacity,
        }
    }
}

/// The rule a limiter file's header names (the one it was created with), as a
/// configuration: GCRA's burst is the effective one, which decides as the configured one
/// did. `None` for words that are no rule.
pub(crate) fn first_rule(words: &[u64; HEADER_WORDS]) -> Option<Config> {
    let rule = words[W_ALGORITHM..=W_BURST].try_into().expect("four words");
    rule_of(rule).map(|(config, _)| config)
}

/// The rule four words hold (algorithm, limit, period, burst: a header's, or a rule
/// record's), and its decider, or `None` for words that are no rule.
pub(crate) fn rule_of(words: [u64; 4]) -> Option<(Config, Decider)> {
    let algorithm = match words[0] {
        0 => Algorithm::Gcra,
        1 => Algorithm::FixedWindow,
        2 => Algorithm::SlidingWindow,
        3 => Algorithm::SlidingLog,
        _ => return None,
    };
    let config = Config {
        algorithm,
        limit: words[1],
        period_ns: words[2],
        burst: words[3],
    };
    Decider::new(&config).ok().map(|decider| (config, decider))
}

/// The header words of a table of `words` words for `identity` in boot `boot`.
pub(super) fn header(
    identity: Identity,
    words: usize,
    boot: u64,
    hash_key: [u64; 2],
) -> [u64; HEADER_WORDS] {
    let mut header = [0; HEADER_WORDS];
    header[W_MAGIC] = MAGIC;
    header[W_VERSION] = LAYOUT_VERSION;
    header[W_KIND] = identity.kind;
    header[W_ALGORITHM] = identity.algorithm;
    header[W_LIMIT] = identity.limit;
    header[W_PERIOD] = identity.period_ns;
    header[W_BURST] = identity.burst;
    header[W_CAPACITY] = identity.capacity;
    header[W_SIZE] = (words * 8) as u64;
    header[W_BOOT] = boot;
    header[W_HASH_KEY..W_HASH_KEY + 2].copy_from_slice(&hash_key);
    header
}

/// This process's PID namespace: the inode of `/proc/self/ns/pid` (0 if unreadable).
pub(crate) fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self/ns/pid").map_or(0, |meta| meta.ino())
}

/// This boot of the host: the first 60 bits of the kernel's boot id, or 1 where it cannot
/// be read (tables are then never reset).
pub(super) fn boot_id() -> u64 {
    let text = fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let hex: String = text
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(15)
        .collect();
    u64::from_str_radix(&hex, 16)
        .ok()
        .filter(|&id| id != 0)
        .unwrap_or(1)
}

/// The rule a file was created with, `first`, as an opener of `config` reads it: its own
/// while the file holds it (the same rule, as it reads its burst), else the file's.
pub(crate) fn as_opened<'a>(first: &'a Config, config: &'a Config) -> &'a Config {
    if same_rule(first, config) {
        config
    } else {
        first
    }
}

/// What an opener of the file at `path` does once attached: nothing if the file's rules
/// in force are its own (`same`); else, if it asks to `replace` them, their `change` now;
/// else refuse.
///
/// # Errors
/// [`OpenError::Incompatible`] for other rules not to be replaced; `change`'s error, as
/// the opening of `path` gives it.
pub(crate) fn settle_opened(
    path: &Path,
    same: bool,
    replace: bool,
    change: impl FnOnce() -> Result<(), ChangeError>,
) -> Result<(), OpenError> {
    match (same, replace) {
        (true, _) => Ok(()),
        (false, true) => change().map_err(|why| OpenError::changing(path, why)),
        (false, false) => Err(OpenError::incompatible(path)),
    }
}

/// Whether two rules decide alike: the same algorithm, limit and period, and for GCRA the
/// same effective burst (0 means the limit).
pub(crate) fn same_rule(a: &Config, b: &Config) -> bool {
    let identity = |config: &Config| Decider::new(config).map(|d| Identity::of(0, config, &d, 0));
    matches!((identity(a), identity(b)), (Ok(a), Ok(b)) if a == b)
}
