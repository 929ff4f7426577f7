//! A keyed policy in a file every process maps (docs/shared.md): every rule in one file, so
//! processes that open it share each per-key rule's table and each global rule's state.
//!
//! # The file
//! The header of `shared/header.rs`, of kind [`KIND_KEYED_POLICY`], naming the rule count
//! (in the algorithm's word) and the capacity; then the state words:
//! - the **descriptor**, [`DESCRIPTOR_WORDS`]: per rule, in order, `[scope, algorithm,
//!   limit, period, effective burst]`, compared by every opener as the header is, so a
//!   file of other rules (or of the same rules in another order) is
//!   [`Error::Incompatible`] and left untouched;
//! - each rule's **region**, in order, each starting on a [`REGION_ALIGN`] boundary so no
//!   two rules share a pair of cache lines: a per-key rule's keyed table (its control
//!   block, claim registry and slots: `keyed/layout.rs`), or a global rule's limiter
//!   words.
//!
//! The tables hash keys with the file's one secret hash key. Everything else (create or
//! attach, another boot, a process killed mid-insert) is the keyed table's, per table.

use std::path::Path;
#[cfg(not(loom))]
use std::sync::Arc;

#[cfg(not(loom))]
use super::keyed::Scoped;
use super::keyed::{KeyedPolicy, KeyedRule};
use super::MAX_RULES;
use crate::decider::Decider;
use crate::error::{ConfigError, Error};
#[cfg(not(loom))]
use crate::keyed::{FileTable, KeyHasher, KeyedLimiter};
#[cfg(not(loom))]
use crate::limiter::Limiter;
#[cfg(not(loom))]
use crate::shared::{pid_namespace, Contents, Identity, Mapping, KIND_KEYED_POLICY};

/// Words of one rule's description.
#[cfg(not(loom))]
const RULE_WORDS: usize = 5;
/// Words of the descriptor: [`MAX_RULES`] descriptions, rounded up to whole cache lines.
#[cfg(not(loom))]
const DESCRIPTOR_WORDS: usize = (MAX_RULES * RULE_WORDS).next_multiple_of(8);
/// Each region starts on a multiple of this many words: 128 bytes, the pair of lines
/// x86-64's adjacent-line prefetcher pulls in together.
#[cfg(not(loom))]
const REGION_ALIGN: usize = 16;
/// The descriptor's scope word of a per-key rule, and of a global one.
#[cfg(not(loom))]
const SCOPE_PER_KEY: u64 = 1;
#[cfg(not(loom))]
const SCOPE_GLOBAL: u64 = 2;

/// Where one rule lives in the file.
#[cfg(not(loom))]
struct Region {
    decider: Decider,
    /// Its first state word.
    start: usize,
    /// A per-key rule's table; `None` for a global rule's limiter words.
    table: Option<FileTable>,
}

#[cfg(not(loom))]
impl Region {
    fn words(&self) -> usize {
        self.table
            .as_ref()
            .map_or(self.decider.state_words(), FileTable::words)
    }

    /// Whether state word `index` of the file lies in this region.
    fn holds(&self, index: usize) -> bool {
        (self.start..self.start + self.words()).contains(&index)
    }
}

impl KeyedPolicy {
    /// Opens the keyed policy whose rules live in the file at `path`, creating the file if
    /// it does not exist: every process that opens the same file shares one policy, each
    /// rule's limit holding across them exactly as across threads (docs/shared.md). One file
    /// holds every rule; one that exists must have been created for the same `rules`, in
    /// the same order, and `capacity`. Creation, another boot and processes killed
    /// mid-call are as for [`KeyedLimiter::open`](crate::KeyedLimiter::open).
    ///
    /// ```
    /// use rate::{Config, KeyedPolicy, KeyedRule};
    /// let path = std::env::temp_dir().join(format!("librate-policy-doc-{}", std::process::id()));
    /// let rules = [
    ///     KeyedRule::per_key(Config::gcra(1, 1_000_000_000)),
    ///     KeyedRule::global(Config::fixed_window(100, 1_000_000_000)),
    /// ];
    /// let first = KeyedPolicy::open(&path, &rules, 1000).unwrap();
    /// let second = KeyedPolicy::open(&path, &rules, 1000).unwrap(); // another process
    /// assert!(first.acquire_at(b"bob", 1, 0).unwrap().decision.allowed);
    /// let denied = second.acquire_at(b"bob", 1, 0).unwrap();
    /// assert_eq!(denied.denied_by, Some(0));
    /// assert_eq!(denied.rules()[1].remaining, 99); // one admitted, for everybody
    /// let other = [rules[1], rules[0]];
    /// assert_eq!(KeyedPolicy::open(&path, &other, 1000).unwrap_err(), rate::Error::Incompatible);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`new`](Self::new); [`Error::Incompatible`] if the file is not a librate keyed
    /// policy of these rules and this capacity (it is left untouched); [`Error::Io`] with
    /// the OS's error number if the file cannot be created, opened or mapped.
    pub fn open(path: impl AsRef<Path>, rules: &[KeyedRule], capacity: u64) -> Result<Self, Error> {
        if rules.is_empty() || rules.len() > MAX_RULES {
            return Err(Error::InvalidConfig(ConfigError::PolicyRules));
        }
        if capacity == 0 {
            return Err(Error::InvalidConfig(ConfigError::Capacity));
        }
        let deciders = rules
            .iter()
            .map(|rule| Decider::new(rule.config()))
            .collect::<Result<Vec<_>, _>>()?;
        // loom's atomics are models, not words of memory a file could hold.
        #[cfg(loom)]
        {
            let _ = (path, deciders);
            Err(Error::Unsupported)
        }
        #[cfg(not(loom))]
        Self::open_file(path.as_ref(), rules, deciders, capacity)
    }

    /// [`open`](Self::open) of checked rules, with their deciders.
    #[cfg(not(loom))]
    fn open_file(
        path: &Path,
        rules: &[KeyedRule],
        deciders: Vec<Decider>,
        capacity: u64,
    ) -> Result<Self, Error> {
        crate::time::prepare();
        let mut descriptor = [0; DESCRIPTOR_WORDS];
        let mut regions = Vec::with_capacity(rules.len());
        let mut end = DESCRIPTOR_WORDS;
        for (index, (rule, decider)) in rules.iter().zip(deciders).enumerate() {
            let identity = Identity::of(0, rule.config(), &decider, 0);
            descriptor[index * RULE_WORDS..][..RULE_WORDS].copy_from_slice(&[
                if rule.is_per_key() {
                    SCOPE_PER_KEY
                } else {
                    SCOPE_GLOBAL
                },
                identity.algorithm,
                identity.limit,
                identity.period_ns,
                identity.burst,
            ]);
            let table = match rule.is_per_key() {
                true => Some(FileTable::of(&decider, capacity)?),
                false => None,
            };
            let region = Region {
                decider,
                start: end,
                table,
            };
            end = (region.start + region.words())
                .checked_next_multiple_of(REGION_ALIGN)
                .ok_or(Error::InvalidConfig(ConfigError::Capacity))?;
            regions.push(region);
        }
        let identity = Identity {
            kind: KIND_KEYED_POLICY,
            algorithm: rules.len() as u64,
            limit: 0,
            period_ns: 0,
            burst: 0,
            capacity,
        };
        let region_of = |index: usize| regions.iter().find(|region| region.holds(index));
        let contents = Contents {
            state_words: end,
            initial: &|index| match (descriptor.get(index), region_of(index)) {
                (Some(&word), _) => word,
                (None, Some(region)) => region
                    .table
                    .as_ref()
                    .map_or(0, |table| table.initial(index - region.start)),
                (None, None) => 0,
            },
            kept: &|index, _| {
                index < DESCRIPTOR_WORDS
                    || region_of(index).is_some_and(|region| {
                        region
                            .table
                            .as_ref()
                            .is_some_and(|table| table.kept(index - region.start))
                    })
            },
            descriptor: &descriptor,
            hash_key: KeyHasher::random().key(),
            pid_namespace: pid_namespace(),
            changeable: false,
        };
        let mapping = Arc::new(Mapping::open(path, identity, &contents)?);
        let scoped = rules
            .iter()
            .zip(regions)
            .map(|(rule, region)| match region.table {
                Some(_) => Scoped::PerKey(KeyedLimiter::in_file(
                    region.decider,
                    rule.config(),
                    capacity,
                    &mapping,
                    region.start,
                )),
                None => Scoped::Global(Limiter::in_file(
                    region.decider,
                    rule.config(),
                    &mapping,
                    region.start,
                )),
            })
            .collect();
        Ok(Self::of(scoped, capacity))
    }
}
