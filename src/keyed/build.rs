//! Building a table: in this process's memory (`new`, `with_hasher`) or in a file every
//! process maps (`open`, docs/shared.md), each ending in one `in_memory` over the region.

use std::path::Path;
#[cfg(not(loom))]
use std::ptr::NonNull;
#[cfg(not(loom))]
use std::sync::Arc;

use super::layout::Layout;
#[cfg(not(loom))]
use super::layout::TABLE_FULL;
use super::recover;
#[cfg(not(loom))]
use super::region::Memory;
use super::region::Region;
use super::{KeyHasher, KeyedLimiter, CACHED_TABLE_BYTES};
use crate::config::Config;
use crate::decider::Decider;
use crate::error::Error;
#[cfg(not(loom))]
use crate::shared::{pid_namespace, Contents, Identity, Mapping, KIND_KEYED};
use crate::time as clock;
use crate::versions::{Kept, Versions};

impl KeyedLimiter<KeyHasher> {
    /// Builds a table for `capacity` keys under `config`, with a fresh random hash key.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if `config` is invalid, or with
    /// [`ConfigError::Capacity`](crate::error::ConfigError::Capacity) if `capacity` is 0 or its
    /// table cannot be allocated.
    pub fn new(config: &Config, capacity: u64) -> Result<Self, Error> {
        Self::with_hasher(config, capacity, KeyHasher::random())
    }

    /// Opens the table whose keys live in the file at `path`, creating the file if it does
    /// not exist: every process that opens the same file shares one table, each key's
    /// limit holding across them exactly as across threads (docs/shared.md). The file is
    /// created with mode 0600 and holds the table's secret hash key; one that exists must
    /// have been created for the same `config` and `capacity`. A process killed mid-insert
    /// leaves nothing claimed for good; a slot that a live process keeps claimed (stopped,
    /// or named by forged bytes) is waited on for about a second, and then a call that
    /// needs it returns [`Error::TableFull`].
    ///
    /// ```
    /// use rate::{Config, KeyedLimiter};
    /// let path = std::env::temp_dir().join(format!("librate-keyed-doc-{}", std::process::id()));
    /// let config = Config::gcra(1, 1_000_000_000);
    /// let first = KeyedLimiter::open(&path, &config, 1000).unwrap();
    /// let second = KeyedLimiter::open(&path, &config, 1000).unwrap(); // another process
    /// assert!(first.acquire_at(b"bob", 1, 0).unwrap().allowed);
    /// assert!(!second.acquire_at(b"bob", 1, 0).unwrap().allowed); // one limit per key
    /// assert!(second.acquire_at(b"alice", 1, 0).unwrap().allowed);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`new`](Self::new); [`Error::Incompatible`] if the file is not a librate table of
    /// this configuration and capacity (it is left untouched); [`Error::Io`] with the OS's
    /// error number if the file cannot be created, opened or mapped.
    pub fn open(path: impl AsRef<Path>, config: &Config, capacity: u64) -> Result<Self, Error> {
        let decider = Decider::new(config)?;
        let layout = Layout::new(capacity, decider.state_words(), recover::CLAIMS)?;
        // loom's atomics are models, not words of memory a file could hold.
        #[cfg(loom)]
        {
            let _ = (path, layout);
            Err(Error::Unsupported)
        }
        #[cfg(not(loom))]
        {
            clock::prepare();
            let identity = Identity::of(KIND_KEYED, config, &decider, capacity);
            let table = FileTable { layout };
            let contents = Contents {
                state_words: table.words(),
                initial: &|index| table.initial(index),
                kept: &|index, _| table.kept(index),
                descriptor: &[],
                hash_key: KeyHasher::random().key(),
                pid_namespace: pid_namespace(),
                changeable: false,
            };
            let mapping = Arc::new(Mapping::open(path.as_ref(), identity, &contents)?);
            Ok(Self::in_file(decider, config, capacity, &mapping, 0))
        }
    }

    /// The table whose region starts at state word `start` of a file's `mapping`, whose
    /// layout holds a [`FileTable`] of `config` and `capacity` there, hashing keys with the
    /// file's hash key.
    #[cfg(not(loom))]
    pub(crate) fn in_file(
        decider: Decider,
        config: &Config,
        capacity: u64,
        mapping: &Arc<Mapping>,
        start: usize,
    ) -> Self {
        let table = FileTable::of(&decider, capacity)
            .expect("the file was laid out for this table, so its layout is valid");
        let words = NonNull::from(&mapping.state(start + table.words())[start]);
        let hasher = KeyHasher::with_key(mapping.hash_key());
        let memory = Memory::Shared {
            _mapping: Arc::clone(mapping),
        };
        let first = Region::new(decider, config, table.layout, words, memory);
        Self::with_region(first, capacity, hasher)
    }
}

/// A keyed table's region in a file that processes share: its size, and what a new file
/// holds there.
#[cfg(not(loom))]
pub(crate) struct FileTable {
    layout: Layout,
}

#[cfg(not(loom))]
impl FileTable {
    /// The region of a table of `capacity` keys under `decider`, with a claim registry.
    ///
    /// # Errors
    /// As [`KeyedLimiter::new`] for the capacity.
    pub(crate) fn of(decider: &Decider, capacity: u64) -> Result<Self, Error> {
        let layout = Layout::new(capacity, decider.state_words(), recover::CLAIMS)?;
        Ok(Self { layout })
    }

    /// Words of the region.
    pub(crate) fn words(&self) -> usize {
        self.layout.words()
    }

    /// The value of the region's word `index` in a new file.
    pub(crate) fn initial(&self, index: usize) -> u64 {
        self.layout.initial(index)
    }

    /// Whether a reset for a new boot leaves word `index` as it is: the count of refusals,
    /// which holds no time.
    pub(crate) fn kept(&self, index: usize) -> bool {
        index == TABLE_FULL
    }
}

impl<S> KeyedLimiter<S> {
    /// Builds a table that hashes keys with `hasher`. Use a hasher with a secret random
    /// key unless the keys are trusted: keys that collide share probe chains.
    ///
    /// # Errors
    /// As [`new`](KeyedLimiter::new).
    pub fn with_hasher(config: &Config, capacity: u64, hasher: S) -> Result<Self, Error> {
        clock::prepare();
        Self::private(config, capacity, hasher, 0)
    }

    /// A private table with a claim registry, as a shared table has: for the model
    /// checks of crash recovery (loom cannot map files). Not public API.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn with_registry(config: &Config, capacity: u64, hasher: S) -> Result<Self, Error> {
        Self::private(config, capacity, hasher, recover::CLAIMS)
    }

    /// A table in this process's own memory, with `claims` registry entries.
    fn private(config: &Config, capacity: u64, hasher: S, claims: usize) -> Result<Self, Error> {
        let decider = Decider::new(config)?;
        let layout = Layout::new(capacity, decider.state_words(), claims)?;
        let first = Region::private(decider, config, layout)?;
        Ok(Self::with_region(first, capacity, hasher))
    }

    /// The table whose first region is `first`, built for `capacity` keys.
    fn with_region(first: Region, capacity: u64, hasher: S) -> Self {
        let mut table = Self {
            regions: Versions::new(first),
            capacity,
            hasher,
            configs: Kept::new(),
            uncached: false,
        };
        table.uncached = table.table_bytes() > CACHED_TABLE_BYTES;
        table
    }
}
