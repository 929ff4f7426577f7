//! One share for every process of a host (docs/leases.md): a holder whose words, its
//! share's among them, live in a file each process maps, so they decide from one share
//! under one name, and one of them renews it: the first to claim the renewer's word, until it
//! dies, when another takes it over.
//!
//! The file is a table of `shared/`'s (created whole, checked, reset for a new boot), of
//! kind [`KIND_LEASE`]: its header names the global rule and, as its capacity, the lease
//! in microseconds, so processes of other rules or leases are refused; its state is the
//! holder's words (`words.rs`), the share's among them (`gcra_share.rs`,
//! `window_share.rs`) and the name, drawn at random by the process that creates the file.

use super::holder::{Fallback, LeaseHolder};
use super::rule::LeaseRule;
use super::words;
use crate::error::OpenError;
use crate::shared::owner;
use crate::sync::Ordering::*;
use std::path::Path;
#[cfg(not(loom))]
use {
    super::holder::Local,
    super::words::{Words, NAME, NAME_WORDS},
    crate::decider::Decider,
    crate::error::SharedError,
    crate::limiter::Limiter,
    crate::shared::{pid_namespace, Contents, Identity, Mapping, KIND_LEASE},
    std::sync::Arc,
};

impl LeaseHolder {
    /// The holder of `rule` for this host, in the file at `path` (created with mode 0600
    /// if absent): every process that opens it decides from one share, under one name, and
    /// one of them renews it at a time ([`lead`](Self::lead)). Each process decides by its
    /// own `fallback`, and opens the file once: holders of one process are one renewer.
    ///
    /// ```
    /// use librate::lease::{Fallback, LeaseHolder};
    /// use librate::{Config, LeaseRule};
    /// use std::time::Duration;
    /// let path = std::env::temp_dir().join(format!("librate-doc-lease-{}", std::process::id()));
    /// let rule = LeaseRule::new(&Config::per_second(1000), Duration::from_secs(2)).unwrap();
    /// let holder = LeaseHolder::open(&path, &rule, Fallback::Deny).unwrap();
    /// assert!(holder.lead()); // the first process to claim renews
    /// // Another process's: the same name, the same share.
    /// let other = LeaseHolder::open(&path, &rule, Fallback::Deny).unwrap();
    /// assert_eq!(holder.name(), other.name());
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`OpenError::Config`] for a [`Fallback::Local`] rule that is invalid;
    /// [`OpenError::Incompatible`] if the file is not a holder of this rule and lease (it
    /// is left untouched); [`OpenError::Io`], naming the path, if the file cannot be
    /// created, opened or mapped.
    #[cfg(not(loom))]
    pub fn open(
        path: impl AsRef<Path>,
        rule: &LeaseRule,
        fallback: Fallback,
    ) -> Result<Self, OpenError> {
        let path = path.as_ref();
        let fallback = match fallback {
            Fallback::Deny => None,
            Fallback::Local(config) => Some(Limiter::new(&config)?),
        };
        let config = rule.config();
        let identity = Identity::of(KIND_LEASE, config, &Decider::new(config)?, rule.lease_us());
        let name = random_name();
        let contents = Contents {
            state_words: words::WORDS,
            initial: &|index| match index.checked_sub(NAME) {
                Some(word) if word < NAME_WORDS => name[word],
                _ => 0,
            },
            // The name holds no time; every other word of the holder's does.
            kept: &|index, _| (NAME..NAME + NAME_WORDS).contains(&index),
            descriptor: &[],
            hash_key: [0, 0],
            // The renewer is named by its process: the processes share a PID namespace.
            pid_namespace: pid_namespace(),
            changeable: false,
        };
        let mapping = Arc::new(Mapping::open(path, identity, &contents)?);
        let words = Words::in_file(mapping);
        let name =
            name_of(&words).ok_or_else(|| OpenError::shared(path, SharedError::Incompatible))?;
        Ok(Self::with(rule, name, Local::of(rule), fallback, words))
    }

    /// loom's atomics are models, not words of memory a file could hold.
    #[cfg(loom)]
    pub fn open(
        path: impl AsRef<Path>,
        rule: &LeaseRule,
        fallback: Fallback,
    ) -> Result<Self, OpenError> {
        let _ = (rule, fallback);
        let unsupported = std::io::ErrorKind::Unsupported.into();
        Err(OpenError::Io(crate::error::FileError::new(
            path.as_ref(),
            unsupported,
        )))
    }

    /// Whether this process renews the holder's share: always for a holder of its own; for
    /// a host's, if no process does, or the one that did has died, this one claims it. A
    /// client renews only while this says so.
    pub fn lead(&self) -> bool {
        if self.holds_own_words() {
            return true;
        }
        let renewer = self.words.get(words::RENEWER);
        let token = owner::token();
        // Acquire: a renewer taking over reads the books its predecessor wrote.
        let current = renewer.load(Acquire);
        if current == token {
            return true;
        }
        if current != 0 && owner::is_alive(current) {
            return false;
        }
        // AcqRel: of several claimants one wins, and it reads the books (as above).
        renewer
            .compare_exchange(current, token, AcqRel, Relaxed)
            .is_ok()
    }

    /// The process that renews the holder's share: its pid, if one claimed it (a host's
    /// holder; a holder of its own renews in this process).
    pub fn renewer(&self) -> Option<u32> {
        if self.holds_own_words() {
            return Some(std::process::id());
        }
        // Relaxed: a report.
        match self.words.get(words::RENEWER).load(Relaxed) {
            0 => None,
            token => Some((token >> 32) as u32),
        }
    }

    /// Gives up renewing, if this process did: another may claim it, once this process's
    /// renewal in progress, if any, has ended.
    pub fn step_down(&self) {
        let _turn = self.turn();
        // Release: the next renewer reads the books this one wrote.
        let _ =
            self.words
                .get(words::RENEWER)
                .compare_exchange(owner::token(), 0, Release, Relaxed);
    }
}

/// A name of 16 hex digits, drawn at random, as the name words hold it.
#[cfg(not(loom))]
fn random_name() -> [u64; NAME_WORDS] {
    let text = super::holder::random_name();
    let mut words = [0; NAME_WORDS];
    for (word, bytes) in words.iter_mut().zip(text.as_bytes().chunks(8)) {
        let mut padded = [0; 8];
        padded[..bytes.len()].copy_from_slice(bytes);
        *word = u64::from_le_bytes(padded);
    }
    words
}

/// The name the words hold: their bytes up to the first NUL, if UTF-8 and not empty.
#[cfg(not(loom))]
fn name_of(words: &Words) -> Option<String> {
    let bytes: Vec<u8> = words
        .range(NAME, NAME_WORDS)
        .iter()
        .flat_map(|word| word.load(Relaxed).to_le_bytes())
        .take_while(|&byte| byte != 0)
        .collect();
    String::from_utf8(bytes)
        .ok()
        .filter(|name| !name.is_empty())
}
