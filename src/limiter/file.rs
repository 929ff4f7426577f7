//! A limiter whose state, and rule, live in a file every process of the host maps
//! (docs/shared.md): opening it, and replacing the file's rule when an opener asks.

use super::Limiter;
use crate::config::Config;
use crate::decider::Decider;
use crate::error::{OpenError, SharedError};
use crate::generations::{Generations, InFile};
use crate::shared::{as_opened, file_words, in_file, Attached, Mapping};
#[cfg(not(loom))]
use crate::shared::{kept, same_rule, settle_opened, Contents, Identity, KIND_LIMITER};
#[cfg(not(loom))]
use crate::time;
use std::path::Path;
use std::sync::Arc;

impl Limiter {
    /// Opens the limiter whose state lives in the file at `path`, creating the file if it
    /// does not exist: every process that opens the same file shares one limit, exactly
    /// as threads sharing one `Limiter` do (docs/shared.md). The file is created with mode
    /// 0600; one that exists must hold the same rule as `config` (the one it was created
    /// with, or the last [`set_config`](Self::set_config) made in it by any process).
    ///
    /// ```
    /// use librate::{Config, Instant, Limiter};
    /// use std::time::Duration;
    /// let path = std::env::temp_dir().join(format!("librate-doc-{}", std::process::id()));
    /// let config = Config::gcra(1, Duration::from_secs(1));
    /// let first = Limiter::open(&path, &config).unwrap();
    /// let second = Limiter::open(&path, &config).unwrap(); // another process, say
    /// assert!(first.acquire_at(1, Instant::ZERO).unwrap().allowed);
    /// assert!(!second.acquire_at(1, Instant::ZERO).unwrap().allowed); // one limit for both
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`OpenError::Config`] as [`new`](Self::new); [`OpenError::Incompatible`] if the
    /// file is not a librate limiter, or holds another rule (it is left untouched:
    /// [`describe_file`](crate::describe_file) says what it holds); [`OpenError::Io`],
    /// naming the path, if the file cannot be created, opened or mapped.
    pub fn open(path: impl AsRef<Path>, config: &Config) -> Result<Self, OpenError> {
        Self::open_file(path.as_ref(), config, false)
    }

    /// [`open`](Self::open), but a file that holds another rule is given `config` instead,
    /// exactly as [`set_config`](Self::set_config) would change it (the state carried over,
    /// every process attached deciding under `config` from its next decision): the way to
    /// roll out a new limit by restarting the processes that share a file.
    ///
    /// ```
    /// use librate::{Config, Limiter};
    /// use std::time::Duration;
    /// const MINUTE: Duration = Duration::from_secs(60);
    /// let path = std::env::temp_dir().join(format!("librate-doc-r-{}", std::process::id()));
    /// let old = Limiter::open(&path, &Config::gcra(10, MINUTE)).unwrap();
    /// assert!(old.acquire(4).unwrap().allowed); // 6 tokens left
    /// // A worker restarted with a new limit: 5 a minute. The 6 tokens are capped at 5.
    /// let new = Limiter::open_replacing(&path, &Config::gcra(5, MINUTE)).unwrap();
    /// assert_eq!(old.config(), &Config::gcra(5, MINUTE)); // the old handle follows
    /// assert!(new.acquire(5).unwrap().allowed);
    /// assert!(!old.acquire(1).unwrap().allowed);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`open`](Self::open), and as [`set_config`](Self::set_config) when the file's rule
    /// cannot be carried over to `config` (another algorithm, a sliding log's rule).
    pub fn open_replacing(path: impl AsRef<Path>, config: &Config) -> Result<Self, OpenError> {
        Self::open_file(path.as_ref(), config, true)
    }

    /// loom's atomics are models, not words of memory a file could hold: see
    /// [`model_file`](Self::model_file).
    #[cfg(loom)]
    fn open_file(path: &Path, config: &Config, replace: bool) -> Result<Self, OpenError> {
        let _ = (Decider::new(config)?, replace);
        let unsupported = std::io::ErrorKind::Unsupported.into();
        Err(OpenError::Io(crate::error::FileError::new(
            path,
            unsupported,
        )))
    }

    #[cfg(not(loom))]
    fn open_file(path: &Path, config: &Config, replace: bool) -> Result<Self, OpenError> {
        let decider = Decider::new(config)?;
        time::prepare();
        let identity = Identity::of(KIND_LIMITER, config, &decider, 0);
        let contents = Contents {
            state_words: file_words(decider.state_words()),
            initial: &|_| 0,
            kept: &kept,
            descriptor: &[],
            hash_key: [0, 0],
            pid_namespace: 0,
            changeable: true,
        };
        let mapping = Arc::new(Mapping::open(path, identity, &contents)?);
        let limiter =
            Self::attached(mapping, config).map_err(|why| OpenError::shared(path, why))?;
        let same = same_rule(limiter.config(), config);
        settle_opened(path, same, replace, || limiter.set_config(config))?;
        Ok(limiter)
    }

    /// A limiter on a file's words, `mapping`, opened with `config`: deciding on the rule
    /// in force in the file, whichever it is.
    fn attached(mapping: Arc<Mapping>, config: &Config) -> Result<Self, SharedError> {
        let first = mapping.first_rule().ok_or(SharedError::Incompatible)?;
        Self::in_file(mapping, 0, &first, config)
    }

    /// A limiter on the words of a file's `mapping` from state word `start` (a limiter
    /// file's, or a keyed policy's global rule's), created with the rule `first`, opened
    /// with `config`: deciding on the rule in force in the file, whichever it is.
    ///
    /// # Errors
    /// [`SharedError::Incompatible`] if `first` is no rule of the file's size, or the rule in
    /// force no rule (bytes another writer put there).
    pub(crate) fn in_file(
        mapping: Arc<Mapping>,
        start: usize,
        first: &Config,
        config: &Config,
    ) -> Result<Self, SharedError> {
        let first = *as_opened(first, config);
        let first_decider = in_file(&first)?;
        // The header's rule sizes side A: words another process wrote there may ask for
        // more than the file holds.
        if start + file_words(first_decider.state_words()) > mapping.state_words() {
            return Err(SharedError::Incompatible);
        }
        let file = InFile {
            attached: Attached::new(mapping, start, first),
            first_words: first_decider.state_words(),
        };
        let generation = file.generation(first_decider, &first, 0);
        Ok(Self::with(Generations::in_file(generation, file)?))
    }

    /// Under loom, a limiter on the words of a new limiter file of rule `config`, in this
    /// process's memory: each [`attach_model`](Self::attach_model) of it plays another
    /// process that opened the file. Not public API.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn model_file(config: &Config) -> Result<Self, crate::error::Error> {
        let words = file_words(Decider::new(config)?.state_words());
        Ok(Self::attached(
            Arc::new(Mapping::model(*config, words)),
            config,
        )?)
    }

    /// Under loom, another process's limiter on this one's file. Not public API.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn attach_model(&self) -> Result<Self, SharedError> {
        let mapping = self
            .generations
            .mapping()
            .expect("a limiter of `model_file`");
        Self::attached(mapping, self.config())
    }
}
