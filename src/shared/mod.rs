//! A limiter's state in a file that every process on the host maps (docs/shared.md): the same
//! atomics at the same offsets, in memory the processes share.
//!
//! # The file
//! Little-endian `u64` words: a header of `HEADER_WORDS`, then the state (a limiter's
//! words, or a keyed table's region: `keyed/layout.rs`), the file's size rounded up to a
//! cache line. The header says what the file is (magic, layout version, kind), what it
//! enforces (algorithm, limit, period, effective burst, capacity), its size, the boot of
//! the host whose `CLOCK_MONOTONIC` its times are on, and a keyed table's secret hash key
//! and the PID namespace its processes share.
//!
//! # Create or attach
//! A new table is built whole in a temporary file beside `path` (mode 0600), then given
//! its name with `link(2)`, which never replaces: no opener ever sees a half-written table,
//! and of several processes creating one path at once, one links and the others, finding
//! the name taken, attach to its table. An existing file is checked before it is used:
//! any difference in its header or size is
//! [`OpenError::Incompatible`](crate::OpenError::Incompatible), and it is left as it was. A limiter's header names the rule it was created with; the
//! limiter compares its opener's rule with the rule in force, which a change may have
//! replaced (`rules.rs`).
//!
//! # Another boot
//! Times are `CLOCK_MONOTONIC`, which restarts at boot, so a table written in an earlier
//! boot is reset when opened: its boot word is swapped to "being reset for this boot",
//! the state zeroed (but for words that hold no time, such as a keyed table's count of
//! refusals, which counts from the file's creation), then the boot stored (`Release`),
//! and openers wait for that (`Acquire`). A resetter that does not finish within
//! `RESET_PATIENCE` (`mapping.rs`) is taken over.
//!
//! The state words are input from other processes; the algorithms decide on any words
//! (see `decider.rs`' tests), and a writer who can change the file can change decisions.
//! Truncating a mapped file makes the next access fault (SIGBUS): outside what a library
//! can guard against.

#[cfg(not(loom))]
mod file;
mod header;
#[cfg(not(loom))]
mod mapping;
#[cfg(loom)]
mod model;
pub(crate) mod owner;
mod pins;
mod rules;

pub(crate) use self::header::as_opened;
#[cfg(not(loom))]
pub(crate) use self::header::{pid_namespace, Identity};
pub(crate) use self::header::{rule_of, KIND_KEYED, KIND_KEYED_POLICY, KIND_LEASE, KIND_LIMITER};
// What a file's description reads (`describe.rs`, above every kind of table file).
pub(crate) use self::header::{first_rule, HEADER_WORDS, LAYOUT_VERSION, MAGIC};
#[cfg(not(loom))]
pub(crate) use self::header::{same_rule, settle_opened};
pub(crate) use self::header::{W_ALGORITHM, W_CAPACITY, W_KIND, W_VERSION};
#[cfg(not(loom))]
pub(crate) use self::mapping::{Contents, Mapping};
#[cfg(loom)]
pub(crate) use self::model::Mapping;
pub(crate) use self::pins::Pinned;
#[cfg(not(loom))]
pub(crate) use self::rules::kept;
#[cfg(not(loom))]
pub(crate) use self::rules::kept_in_block;
pub(crate) use self::rules::rule_in_force;
pub(crate) use self::rules::{
    file_words, in_file, Adoption, Attached, Carry, OneState, Rules, Sides,
};
pub(crate) use self::rules::{is_forged, sides_start, RECORDS_END};
