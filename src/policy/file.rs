//! A keyed policy in a file every process maps (docs/shared.md): every rule in one file, so
//! processes that open it share each per-key rule's table and each global rule's state.
//!
//! # The file
//! The header of `shared/header.rs`, of kind [`KIND_KEYED_POLICY`], naming the rule count
//! (in the algorithm's word) and the capacity; then the state words:
//! - the **descriptor**, [`DESCRIPTOR_WORDS`]: per rule, in order, `[scope, algorithm,
//!   limit, period, effective burst]` of the rules the file was created with;
//! - each rule's **place**, in order, each starting on a [`REGION_ALIGN`] boundary so no
//!   two rules share a pair of cache lines: a per-key rule's keyed table as a keyed table
//!   file holds it (`keyed/file.rs`), or a global rule's limiter as a limiter file holds
//!   it (`shared/rules.rs`), each with its rule in force and its changes.
//!
//! An opener's rules must be as many as the descriptor's, of the same scopes in the same
//! order, and each the rule in force of its place; else the file is
//! [`OpenError::Incompatible`] and left untouched,
//! unless the opener asks that its rules replace the file's. The tables hash keys with the file's one secret hash key.
//! Everything else (create or attach, another boot, a process killed mid-insert or
//! mid-change) is the keyed table's and the limiter's, per rule.

use std::path::Path;
#[cfg(not(loom))]
use std::sync::Arc;

#[cfg(not(loom))]
use super::keyed::Scoped;
use super::keyed::{KeyedPolicy, KeyedRule};
use super::MAX_RULES;
use crate::config::Config;
use crate::decider::Decider;
#[cfg(not(loom))]
use crate::error::SharedError;
use crate::error::{ConfigError, OpenError};
#[cfg(not(loom))]
use crate::keyed::{FileTable, KeyHasher, KeyedLimiter};
#[cfg(not(loom))]
use crate::limiter::Limiter;
#[cfg(not(loom))]
use crate::shared::{file_words, kept, pid_namespace, rule_of, same_rule, settle_opened};
#[cfg(not(loom))]
use crate::shared::{Contents, Identity, Mapping, KIND_KEYED_POLICY};
#[cfg(not(loom))]
use crate::sync::Ordering;

/// Words of one rule's description.
#[cfg(not(loom))]
const RULE_WORDS: usize = 5;
/// Words of the descriptor: [`MAX_RULES`] descriptions, rounded up to whole cache lines.
#[cfg(not(loom))]
const DESCRIPTOR_WORDS: usize = (MAX_RULES * RULE_WORDS).next_multiple_of(8);
/// Each place starts on a multiple of this many words: 128 bytes, the pair of lines
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
struct Place {
    /// Its first state word.
    start: usize,
    /// A per-key rule's table; `None` for a global rule's limiter words.
    table: Option<FileTable>,
    /// Its words.
    words: usize,
}

#[cfg(not(loom))]
impl Place {
    /// Whether state word `index` of the file lies in this place.
    fn holds(&self, index: usize) -> bool {
        (self.start..self.start + self.words).contains(&index)
    }

    /// The value of the file's state word `index`, in this place, in a new file.
    fn initial(&self, index: usize) -> u64 {
        self.table
            .as_ref()
            .map_or(0, |table| table.initial(index - self.start))
    }

    /// Whether a reset for a new boot keeps the file's state word `index`, in this place.
    fn kept(&self, index: usize, value: u64) -> bool {
        let offset = index - self.start;
        match &self.table {
            Some(table) => table.kept(offset, value),
            None => kept(offset, value),
        }
    }
}

/// Where each rule of `rules` (per key or not, and its rule the file was created with)
/// lives, and the words of them all.
#[cfg(not(loom))]
fn places(rules: &[(bool, Config)], capacity: u64) -> Result<(Vec<Place>, usize), ConfigError> {
    let mut places = Vec::with_capacity(rules.len());
    let mut end = DESCRIPTOR_WORDS;
    let mut bytes_per_key = 0;
    for &(per_key, config) in rules {
        let decider = Decider::new(&config)?;
        let table = match per_key {
            true => Some(FileTable::of(&decider, capacity)?),
            false => None,
        };
        let words = table
            .as_ref()
            .map_or(file_words(decider.state_words()), FileTable::words);
        bytes_per_key += table.as_ref().map_or(0, FileTable::bytes_per_key) as u64;
        let place = Place {
            start: end,
            table,
            words,
        };
        end = (place.start + place.words)
            .checked_next_multiple_of(REGION_ALIGN)
            .ok_or(ConfigError::Capacity {
                capacity,
                bytes_per_key,
            })?;
        places.push(place);
    }
    Ok((places, end))
}

/// The descriptor of `rules`.
#[cfg(not(loom))]
fn descriptor(rules: &[(bool, Config)]) -> Result<[u64; DESCRIPTOR_WORDS], ConfigError> {
    let mut descriptor = [0; DESCRIPTOR_WORDS];
    for (index, &(per_key, config)) in rules.iter().enumerate() {
        let decider = Decider::new(&config).map_err(|error| error.in_rule(index))?;
        let identity = Identity::of(0, &config, &decider, 0);
        descriptor[index * RULE_WORDS..][..RULE_WORDS].copy_from_slice(&[
            if per_key { SCOPE_PER_KEY } else { SCOPE_GLOBAL },
            identity.algorithm,
            identity.limit,
            identity.period_ns,
            identity.burst,
        ]);
    }
    Ok(descriptor)
}

/// The rules a file's descriptor says it was created with: `None` if its words are no
/// rules (bytes another writer put there).
#[cfg(not(loom))]
fn described(mapping: &Mapping) -> Option<Vec<(bool, Config)>> {
    // Relaxed: written before the file was linked under its name, never changed.
    let words: Vec<u64> = (mapping.state(DESCRIPTOR_WORDS).iter())
        .map(|word| word.load(Ordering::Relaxed))
        .collect();
    rules_described(&words)
}

/// The rules a descriptor's `words` describe, in order, each per key or not: `None` if
/// they are no rules.
#[cfg(not(loom))]
pub(crate) fn rules_described(words: &[u64]) -> Option<Vec<(bool, Config)>> {
    let mut rules = Vec::new();
    for rule in words.chunks_exact(RULE_WORDS).take(MAX_RULES) {
        let per_key = match rule[0] {
            0 => break,
            SCOPE_PER_KEY => true,
            SCOPE_GLOBAL => false,
            _ => return None,
        };
        let (config, _) = rule_of(rule[1..].try_into().expect("four words"))?;
        rules.push((per_key, config));
    }
    Some(rules)
}

/// Where each rule's place starts among a policy file's state words, for the rules it was
/// created with, `created`, and its capacity: its rule block's first word. `None` if they
/// lay out no file.
#[cfg(not(loom))]
pub(crate) fn rule_blocks(created: &[(bool, Config)], capacity: u64) -> Option<Vec<usize>> {
    let (places, _) = places(created, capacity).ok()?;
    Some(places.iter().map(|place| place.start).collect())
}

impl KeyedPolicy {
    /// Opens the keyed policy whose rules live in the file at `path`, creating the file if
    /// it does not exist: every process that opens the same file shares one policy, each
    /// rule's limit holding across them exactly as across threads (docs/shared.md). One file
    /// holds every rule; one that exists must hold the same `rules` (those it was created
    /// with, or the last [`set_rules`](Self::set_rules) made in it by any process), in the
    /// same order, and `capacity`. Creation, another boot and processes killed mid-call
    /// are as for [`KeyedLimiter::open`](crate::KeyedLimiter::open).
    ///
    /// ```
    /// use librate::{Config, Instant, KeyedPolicy, KeyedRule};
    /// use std::time::Duration;
    /// let path = std::env::temp_dir().join(format!("librate-policy-doc-{}", std::process::id()));
    /// let rules = [
    ///     KeyedRule::per_key(Config::gcra(1, Duration::from_secs(1))),
    ///     KeyedRule::global(Config::fixed_window(100, Duration::from_secs(1))),
    /// ];
    /// let first = KeyedPolicy::open(&path, &rules, 1000).unwrap();
    /// let second = KeyedPolicy::open(&path, &rules, 1000).unwrap(); // another process
    /// assert!(first.acquire_at(b"bob", 1, Instant::ZERO).unwrap().decision.allowed);
    /// let denied = second.acquire_at(b"bob", 1, Instant::ZERO).unwrap();
    /// assert_eq!(denied.denied_by, Some(0));
    /// assert_eq!(denied.rules()[1].remaining, 99); // one admitted, for everybody
    /// let other = [rules[1], rules[0]];
    /// let refused = KeyedPolicy::open(&path, &other, 1000).unwrap_err();
    /// let incompatible = librate::OpenError::Incompatible { path: path.clone() };
    /// assert_eq!(refused.to_string(), incompatible.to_string()); // it names the path
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`OpenError::Config`] as [`new`](Self::new); [`OpenError::Incompatible`] if the
    /// file is not a librate keyed policy of these rules and this capacity (it is left
    /// untouched: [`describe_file`](crate::describe_file) says what it holds);
    /// [`OpenError::Io`], naming the path, if the file cannot be created, opened or mapped.
    pub fn open(
        path: impl AsRef<Path>,
        rules: &[KeyedRule],
        capacity: u64,
    ) -> Result<Self, OpenError> {
        Self::open_file(path.as_ref(), rules, capacity, false)
    }

    /// [`open`](Self::open), but a file that holds other rules of the same scopes and
    /// algorithms is given `rules` instead, exactly as [`set_rules`](Self::set_rules)
    /// would change them: the way to roll out new limits by restarting the processes
    /// that share a file.
    ///
    /// # Errors
    /// As [`open`](Self::open), and as [`set_rules`](Self::set_rules) when the file's rules
    /// cannot be carried over to `rules`.
    pub fn open_replacing(
        path: impl AsRef<Path>,
        rules: &[KeyedRule],
        capacity: u64,
    ) -> Result<Self, OpenError> {
        Self::open_file(path.as_ref(), rules, capacity, true)
    }

    fn open_file(
        path: &Path,
        rules: &[KeyedRule],
        capacity: u64,
        replace: bool,
    ) -> Result<Self, OpenError> {
        if rules.is_empty() || rules.len() > MAX_RULES {
            return Err(ConfigError::PolicyRules { rules: rules.len() }.into());
        }
        if capacity == 0 {
            return Err(ConfigError::ZeroCapacity.into());
        }
        let asked: Vec<(bool, Config)> = rules
            .iter()
            .map(|rule| (rule.is_per_key(), *rule.config()))
            .collect();
        // loom's atomics are models, not words of memory a file could hold.
        #[cfg(loom)]
        {
            for (index, (_, config)) in asked.iter().enumerate() {
                Decider::new(config).map_err(|error| error.in_rule(index))?;
            }
            let _ = replace;
            let unsupported = std::io::ErrorKind::Unsupported.into();
            Err(OpenError::Io(crate::error::FileError::new(
                path,
                unsupported,
            )))
        }
        #[cfg(not(loom))]
        {
            let descriptor = descriptor(&asked)?;
            crate::time::prepare();
            let mapping = Self::map(path, &asked, &descriptor, capacity)?;
            let policy = Self::attached(&mapping, rules, capacity)
                .map_err(|why| OpenError::shared(path, why))?;
            let same = policy
                .rules()
                .zip(rules)
                .all(|(held, rule)| same_rule(held.config(), rule.config()));
            settle_opened(path, same, replace, || policy.set_rules(rules))?;
            Ok(policy)
        }
    }

    /// Maps the file at `path`, created for the rules `asked`, whose descriptor is
    /// `descriptor`, if it does not exist.
    #[cfg(not(loom))]
    fn map(
        path: &Path,
        asked: &[(bool, Config)],
        descriptor: &[u64; DESCRIPTOR_WORDS],
        capacity: u64,
    ) -> Result<Arc<Mapping>, OpenError> {
        let (places, end) = places(asked, capacity)?;
        let identity = Identity {
            kind: KIND_KEYED_POLICY,
            algorithm: asked.len() as u64,
            limit: 0,
            period_ns: 0,
            burst: 0,
            capacity,
        };
        let place_of = |index: usize| places.iter().find(|place| place.holds(index));
        let contents = Contents {
            state_words: end,
            initial: &|index| match (descriptor.get(index), place_of(index)) {
                (Some(&word), _) => word,
                (None, Some(place)) => place.initial(index),
                (None, None) => 0,
            },
            kept: &|index, value| {
                index < DESCRIPTOR_WORDS || place_of(index).is_some_and(|p| p.kept(index, value))
            },
            // The rules in force are compared by the opener (`open_file`): the descriptor
            // names those the file was created with.
            descriptor: &[],
            hash_key: KeyHasher::random().key(),
            pid_namespace: pid_namespace(),
            changeable: true,
        };
        Ok(Arc::new(Mapping::open(path, identity, &contents)?))
    }

    /// The policy on a file's `mapping`, opened with `rules`: each rule deciding under its
    /// rule in force in the file.
    ///
    /// # Errors
    /// [`SharedError::Incompatible`] if the file's rules are not as many as `rules`, of the same
    /// scopes, or its words are no rules.
    #[cfg(not(loom))]
    fn attached(
        mapping: &Arc<Mapping>,
        rules: &[KeyedRule],
        capacity: u64,
    ) -> Result<Self, SharedError> {
        let created = described(mapping).ok_or(SharedError::Incompatible)?;
        let scopes = created.iter().map(|&(per_key, _)| per_key);
        if !scopes.eq(rules.iter().map(KeyedRule::is_per_key)) {
            return Err(SharedError::Incompatible);
        }
        let (places, end) = places(&created, capacity).map_err(|_| SharedError::Incompatible)?;
        if end > mapping.state_words() {
            return Err(SharedError::Incompatible);
        }
        let scoped = rules
            .iter()
            .zip(places)
            .zip(&created)
            .map(|((rule, place), (_, first))| match place.table {
                Some(_) => {
                    KeyedLimiter::in_file(first, rule.config(), capacity, mapping, place.start)
                        .map(Scoped::PerKey)
                }
                None => Limiter::in_file(Arc::clone(mapping), place.start, first, rule.config())
                    .map(Scoped::Global),
            })
            .collect::<Result<Box<[_]>, _>>()?;
        Ok(Self::of(scoped, capacity))
    }
}
