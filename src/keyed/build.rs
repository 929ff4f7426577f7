//! Building a table: in this process's memory (`new`, `with_hasher`) or in a file every
//! process maps (`open`, docs/shared.md), each ending in one `in_memory` over the region.

use std::path::Path;
use std::sync::Arc;

use super::file::{FileTable, Slots, TableFile};
use super::layout::Layout;
#[cfg(loom)]
use super::recover;
use super::region::Region;
use super::{KeyHasher, KeyedLimiter, CACHED_TABLE_BYTES};
use crate::config::Config;
use crate::counters::Counters;
use crate::decider::Decider;
use crate::error::{ConfigError, OpenError, SharedError};
use crate::shared::{as_opened, in_file, Attached, Mapping};
#[cfg(not(loom))]
use crate::shared::{pid_namespace, same_rule, settle_opened, Contents, Identity, KIND_KEYED};
use crate::time as clock;
use crate::versions::{Kept, Versions};

impl KeyedLimiter<KeyHasher> {
    /// Builds a table for `capacity` keys under `config`, with a fresh random hash key.
    ///
    /// # Errors
    /// The [`ConfigError`] if `config` is invalid, [`ConfigError::ZeroCapacity`] if
    /// `capacity` is 0, [`ConfigError::Capacity`] if its table cannot be allocated.
    pub fn new(config: &Config, capacity: u64) -> Result<Self, ConfigError> {
        Self::with_hasher(config, capacity, KeyHasher::random())
    }

    /// Opens the table whose keys live in the file at `path`, creating the file if it does
    /// not exist: every process that opens the same file shares one table, each key's
    /// limit holding across them exactly as across threads (docs/shared.md). The file is
    /// created with mode 0600 and holds the table's secret hash key; one that exists must
    /// have been created for the same `config` and `capacity`. A process killed mid-insert
    /// leaves nothing claimed for good; a slot that a live process keeps claimed (stopped,
    /// or named by forged bytes) is waited on for about a second, and then a call that
    /// needs it returns `TableFull` ([`KeyedAcquireError::TableFull`](crate::KeyedAcquireError::TableFull)).
    ///
    /// ```
    /// use librate::{Config, Instant, KeyedLimiter};
    /// use std::time::Duration;
    /// let path = std::env::temp_dir().join(format!("librate-keyed-doc-{}", std::process::id()));
    /// let config = Config::gcra(1, Duration::from_secs(1));
    /// let first = KeyedLimiter::open(&path, &config, 1000).unwrap();
    /// let second = KeyedLimiter::open(&path, &config, 1000).unwrap(); // another process
    /// assert!(first.acquire_at(b"bob", 1, Instant::ZERO).unwrap().allowed);
    /// assert!(!second.acquire_at(b"bob", 1, Instant::ZERO).unwrap().allowed); // one limit per key
    /// assert!(second.acquire_at(b"alice", 1, Instant::ZERO).unwrap().allowed);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`OpenError::Config`] as [`new`](Self::new); [`OpenError::Incompatible`] if the
    /// file is not a librate table of this capacity, or holds another rule (it is left
    /// untouched: [`describe_file`](crate::describe_file) says what it holds);
    /// [`OpenError::Io`], naming the path, if the file cannot be created, opened or mapped.
    pub fn open(path: impl AsRef<Path>, config: &Config, capacity: u64) -> Result<Self, OpenError> {
        Self::open_file(path.as_ref(), config, capacity, false)
    }

    /// [`open`](Self::open), but a file that holds another rule is given `config` instead,
    /// exactly as [`set_config`](Self::set_config) would change it (every key's state
    /// carried over, every process attached deciding under `config` from its next
    /// decision): the way to roll out a new limit by restarting the processes that share
    /// a file.
    ///
    /// ```
    /// use librate::{Config, KeyedLimiter};
    /// use std::time::Duration;
    /// const MINUTE: Duration = Duration::from_secs(60);
    /// let path = std::env::temp_dir().join(format!("librate-keyed-doc-r-{}", std::process::id()));
    /// let old = KeyedLimiter::open(&path, &Config::gcra(10, MINUTE), 1000).unwrap();
    /// assert!(old.acquire(b"bob", 4).unwrap().allowed); // 6 tokens left
    /// // A worker restarted with a new limit: 5 a minute. Bob's 6 tokens are capped at 5.
    /// let new = KeyedLimiter::open_replacing(&path, &Config::gcra(5, MINUTE), 1000).unwrap();
    /// assert_eq!(old.config(), &Config::gcra(5, MINUTE)); // the old handle follows
    /// assert!(new.acquire(b"bob", 5).unwrap().allowed);
    /// assert!(!old.acquire(b"bob", 1).unwrap().allowed);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`open`](Self::open), and as [`set_config`](Self::set_config) when the file's rule
    /// cannot be carried over to `config` (another algorithm, a sliding log's rule).
    pub fn open_replacing(
        path: impl AsRef<Path>,
        config: &Config,
        capacity: u64,
    ) -> Result<Self, OpenError> {
        Self::open_file(path.as_ref(), config, capacity, true)
    }

    fn open_file(
        path: &Path,
        config: &Config,
        capacity: u64,
        replace: bool,
    ) -> Result<Self, OpenError> {
        let decider = Decider::new(config)?;
        let table = FileTable::of(&decider, capacity)?;
        // loom's atomics are models, not words of memory a file could hold.
        #[cfg(loom)]
        {
            let _ = (table, replace);
            let unsupported = std::io::ErrorKind::Unsupported.into();
            Err(OpenError::Io(crate::error::FileError::new(
                path,
                unsupported,
            )))
        }
        #[cfg(not(loom))]
        {
            clock::prepare();
            let identity = Identity::of(KIND_KEYED, config, &decider, capacity);
            let contents = Contents {
                state_words: table.words(),
                initial: &|index| table.initial(index),
                kept: &|index, value| table.kept(index, value),
                descriptor: &[],
                hash_key: KeyHasher::random().key(),
                pid_namespace: pid_namespace(),
                changeable: true,
            };
            let mapping = Arc::new(Mapping::open(path, identity, &contents)?);
            let first = mapping.first_rule().ok_or(SharedError::Incompatible);
            let table = first
                .and_then(|first| Self::in_file(&first, config, capacity, &mapping, 0))
                .map_err(|why| OpenError::shared(path, why))?;
            let same = same_rule(table.config(), config);
            settle_opened(path, same, replace, || table.set_config(config))?;
            Ok(table)
        }
    }

    /// The table whose words start at state word `start` of a file's `mapping`, laid out
    /// there as a [`FileTable`] of `capacity` keys created with the rule `first` (its
    /// header's, or its keyed policy's), opened with `config`: deciding on the rule in
    /// force in the file, whichever it is, and hashing keys with the file's hash key.
    ///
    /// # Errors
    /// [`SharedError::Incompatible`] if `first` is no rule of the file's layout, or the rule in
    /// force no rule of this table (bytes another writer put there).
    pub(crate) fn in_file(
        first: &Config,
        config: &Config,
        capacity: u64,
        mapping: &Arc<Mapping>,
        start: usize,
    ) -> Result<Self, SharedError> {
        let first = as_opened(first, config);
        let decider = in_file(first)?;
        let table = FileTable::of(&decider, capacity).map_err(|_| SharedError::Incompatible)?;
        // The header's rule sizes the table: words another process wrote there may ask
        // for more than the file holds.
        if start + table.words() > mapping.state_words() {
            return Err(SharedError::Incompatible);
        }
        let file = TableFile {
            attached: Attached::new(Arc::clone(mapping), start, *first),
            table,
        };
        // A change a dead process left in flight is finished (or dropped) first.
        let _ = file.rules().settle(&Slots(&file));
        let first = file.region(0, first)?;
        let hasher = KeyHasher::with_key(mapping.hash_key());
        let mut built = Self::with_region(first, capacity, hasher);
        built.file = Some(file);
        built.follow()?;
        Ok(built)
    }

    /// Under loom, a table of `capacity` keys on the words of a new keyed table file of
    /// rule `config`, in this process's memory: each [`attach_model`](Self::attach_model)
    /// of it plays another process that opened the file. Not public API.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn model_file(config: &Config, capacity: u64) -> Result<Self, crate::error::Error> {
        let table = FileTable::of(&Decider::new(config)?, capacity)?;
        let mapping = Mapping::model(*config, table.words());
        for (index, word) in mapping.state(table.words()).iter().enumerate() {
            // Relaxed: the file's creation, before any thread of the model starts.
            word.store(table.initial(index), crate::sync::Ordering::Relaxed);
        }
        Ok(Self::in_file(
            config,
            config,
            capacity,
            &Arc::new(mapping),
            0,
        )?)
    }

    /// Under loom, another process's table on this one's file. Not public API.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn attach_model(&self) -> Result<Self, SharedError> {
        let file = self.file.as_ref().expect("a table of `model_file`");
        let config = *self.config();
        Self::in_file(
            &file.attached.first,
            &config,
            self.capacity,
            &file.attached.mapping,
            file.attached.start,
        )
    }
}

impl<S> KeyedLimiter<S> {
    /// Builds a table that hashes keys with `hasher`. Use a hasher with a secret random
    /// key unless the keys are trusted: keys that collide share probe chains.
    ///
    /// # Errors
    /// As [`new`](KeyedLimiter::new).
    pub fn with_hasher(config: &Config, capacity: u64, hasher: S) -> Result<Self, ConfigError> {
        clock::prepare();
        Self::private(config, capacity, hasher, 0)
    }

    /// A private table with a claim registry, as a shared table has: for the model
    /// checks of crash recovery (loom cannot map files). Not public API.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn with_registry(config: &Config, capacity: u64, hasher: S) -> Result<Self, ConfigError> {
        Self::private(config, capacity, hasher, recover::CLAIMS)
    }

    /// A table in this process's own memory, with `claims` registry entries.
    fn private(
        config: &Config,
        capacity: u64,
        hasher: S,
        claims: usize,
    ) -> Result<Self, ConfigError> {
        let decider = Decider::new(config)?;
        let layout = Layout::new(capacity, decider.state_words(), claims)?;
        let first = Region::private(decider, config, layout)?;
        Ok(Self::with_region(first, capacity, hasher))
    }

    /// The table whose first region is `first`, built for `capacity` keys.
    fn with_region(first: Region, capacity: u64, hasher: S) -> Self {
        let mut table = Self {
            regions: Versions::new(first),
            file: None,
            capacity,
            hasher,
            configs: Kept::new(),
            uncached: false,
            counters: Counters::default(),
        };
        table.uncached = table.table_bytes() > CACHED_TABLE_BYTES;
        table
    }
}
