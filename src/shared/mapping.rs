//! A table file mapped into this process: created whole or attached to, checked, and reset
//! for a new boot (the parent module's docs).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use crate::error::{ConfigError, FileError, OpenError};
use crate::sync::{AtomicU64, Ordering};

use super::file::{check_room, create_beside};
use super::header::{boot_id, header, W_ALGORITHM, W_BOOT, W_BURST, W_HASH_KEY, W_PID_NAMESPACE};
use super::header::{first_rule, Identity, HEADER_WORDS};

/// The boot word's mark of a reset in progress (boot ids use the low 60 bits).
const RESETTING: u64 = 1 << 63;
/// Words of a page, which a new file writes whole or leaves a hole.
const PAGE_WORDS: usize = 512;
/// How long an opener waits for another process's reset before doing it itself.
const RESET_PATIENCE: Duration = Duration::from_secs(1);

/// What a new table's state holds, and its hash key: how the creator fills a new file,
/// and how an opener resets a table of an earlier boot.
pub(crate) struct Contents<'a> {
    /// Words of state after the header.
    pub(crate) state_words: usize,
    /// The initial value of state word `index`.
    pub(crate) initial: &'a dyn Fn(usize) -> u64,
    /// Whether a reset for a new boot leaves state word `index`, holding `value`, as it
    /// is: it holds no time.
    pub(crate) kept: &'a dyn Fn(usize, u64) -> bool,
    /// The first state words, which say what the table is beyond what the header says (a
    /// keyed policy's rules), compared as the header is: empty for most tables. They are
    /// among `initial`'s values, and `kept`.
    pub(crate) descriptor: &'a [u64],
    /// A keyed table's hash key (`[0, 0]` for a limiter); a new file keeps it for good.
    pub(crate) hash_key: [u64; 2],
    /// The PID namespace the table's processes must share ([`pid_namespace`](super::pid_namespace)), or 0 where
    /// none is needed (a limiter) or it cannot be read. A keyed table's claims name
    /// processes by pid, which means nothing in another namespace: an opener from another
    /// one is refused, as with any other mismatch, rather than misjudge a claim.
    pub(crate) pid_namespace: u64,
    /// Whether the rule can change in the file (a limiter's: `rules.rs`): its header then
    /// names the rule the file was created with, and the owner compares the rule in force
    /// with the opener's, so the header's rule words are not compared here.
    pub(crate) changeable: bool,
}

/// A table file mapped into this process. Unmapped when dropped; the file stays.
#[derive(Debug)]
pub(crate) struct Mapping {
    words: NonNull<AtomicU64>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory accessed only through atomics; the pointer
// is owned by this value and unmapped once, in `drop`.
unsafe impl Send for Mapping {}
// SAFETY: as above: every access to the words is atomic.
unsafe impl Sync for Mapping {}

/// The error of a file of `state_words` words too large to map, for a table of `capacity`
/// keys (0 for a limiter, whose one "key" takes them all).
fn too_big(capacity: u64, state_words: usize) -> OpenError {
    let bytes = state_words as u64 * std::mem::size_of::<u64>() as u64;
    OpenError::Config(ConfigError::Capacity {
        capacity: capacity.max(1),
        bytes_per_key: bytes.div_ceil(capacity.max(1)),
    })
}

impl Mapping {
    /// Opens the table at `path`, creating it with `contents` if it does not exist.
    pub(crate) fn open(
        path: &Path,
        identity: Identity,
        contents: &Contents<'_>,
    ) -> Result<Self, OpenError> {
        let os_error = |error| OpenError::Io(FileError::new(path, error));
        let words = HEADER_WORDS
            .checked_add(contents.state_words)
            .and_then(|words| words.checked_next_multiple_of(8))
            .filter(|&words| words <= isize::MAX as usize / 8)
            .ok_or_else(|| too_big(identity.capacity, contents.state_words))?;
        loop {
            match OpenOptions::new().read(true).write(true).open(path) {
                Ok(file) => return Self::attach(path, &file, identity, words, contents),
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    // A symbolic link to nothing: linking a table there would fail for
                    // good, so this loop would never end.
                    if fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink()) {
                        return Err(os_error(error));
                    }
                    if let Some(created) = Self::create(path, identity, words, contents)? {
                        return Ok(created);
                    }
                    // Another process linked its table first: attach to that one.
                }
                Err(error) => return Err(os_error(error)),
            }
        }
    }

    /// The state words, after the header.
    pub(crate) fn state(&self, state_words: usize) -> &[AtomicU64] {
        &self.words()[HEADER_WORDS..HEADER_WORDS + state_words]
    }

    /// How many state words the file has, after the header.
    pub(crate) fn state_words(&self) -> usize {
        self.len - HEADER_WORDS
    }

    /// The rule a changeable file was created with, from its header: `None` if its words
    /// are no rule (bytes another writer put there).
    pub(crate) fn first_rule(&self) -> Option<crate::config::Config> {
        // Relaxed: written before the file was linked under its name, never changed.
        let words = std::array::from_fn(|index| self.words()[index].load(Ordering::Relaxed));
        first_rule(&words)
    }

    /// A keyed table's hash key, from its header.
    pub(crate) fn hash_key(&self) -> [u64; 2] {
        // Relaxed: written before the file was linked under its name, never changed.
        [0, 1].map(|index| self.words()[W_HASH_KEY + index].load(Ordering::Relaxed))
    }

    fn words(&self) -> &[AtomicU64] {
        // SAFETY: `words` points to `len` words mapped read-write for this value's life,
        // aligned (a page) and only ever accessed atomically.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr(), self.len) }
    }

    /// Builds the table in a temporary file and links it to `path`: `None` if `path`
    /// appeared meanwhile.
    fn create(
        path: &Path,
        identity: Identity,
        words: usize,
        contents: &Contents<'_>,
    ) -> Result<Option<Self>, OpenError> {
        let os_error = |error| OpenError::Io(FileError::new(path, error));
        let (temporary, mut file) = create_beside(path).map_err(os_error)?;
        let built = (|| {
            // Exactly 0600, whatever the umask removed or not.
            file.set_permissions(fs::Permissions::from_mode(0o600))?;
            check_room(&file, (words as u64).saturating_mul(8))?;
            let mut header = header(identity, words, boot_id(), contents.hash_key);
            header[W_PID_NAMESPACE] = contents.pid_namespace;
            let value = |index: usize| match index.checked_sub(HEADER_WORDS) {
                None => header[index],
                Some(state) if state < contents.state_words => (contents.initial)(state),
                Some(_) => 0,
            };
            // Written a page at a time, so a large table needs no second copy of itself in
            // memory; a page of zeros is left a hole (a file system that has none writes
            // zeros), which takes no memory on a tmpfs until it is written.
            let mut page = Vec::with_capacity(PAGE_WORDS * 8);
            for start in (0..words).step_by(PAGE_WORDS) {
                page.clear();
                for index in start..words.min(start + PAGE_WORDS) {
                    page.extend_from_slice(&value(index).to_le_bytes());
                }
                if page.iter().all(|&byte| byte == 0) {
                    file.seek(io::SeekFrom::Current(page.len() as i64))?;
                } else {
                    file.write_all(&page)?;
                }
            }
            file.set_len((words as u64).saturating_mul(8))?;
            fs::hard_link(&temporary, path)
        })();
        let _ = fs::remove_file(&temporary);
        match built {
            Ok(()) => Self::attach(path, &file, identity, words, contents).map(Some),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(None),
            Err(error) => Err(os_error(error)),
        }
    }

    /// Maps `file`, opened at `path`, and checks it is this table, resetting a table of
    /// an earlier boot.
    fn attach(
        path: &Path,
        file: &File,
        identity: Identity,
        words: usize,
        contents: &Contents<'_>,
    ) -> Result<Self, OpenError> {
        let os_error = |error| OpenError::Io(FileError::new(path, error));
        let incompatible = || OpenError::incompatible(path);
        let metadata = file.metadata().map_err(os_error)?;
        if !metadata.is_file() || metadata.len() != (words * 8) as u64 {
            return Err(incompatible());
        }
        // SAFETY: a fresh shared read-write mapping of the whole file, whose size was just
        // checked; the kernel picks the (page-aligned) address.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                words * 8,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if address == libc::MAP_FAILED {
            return Err(os_error(io::Error::last_os_error()));
        }
        let mapping = Self {
            words: NonNull::new(address.cast()).ok_or_else(incompatible)?,
            len: words,
        };
        let expected = header(identity, words, 0, [0, 0]);
        let found = mapping.words();
        let rule = W_ALGORITHM..=W_BURST;
        // Relaxed: the header never changes once linked (but for the boot word below).
        let matches = (0..W_BOOT)
            .filter(|index| !(contents.changeable && rule.contains(index)))
            .all(|index| found[index].load(Ordering::Relaxed) == expected[index]);
        // Relaxed: written before the file was linked, never changed (a reset keeps them).
        let described = found[HEADER_WORDS..]
            .iter()
            .zip(contents.descriptor)
            .all(|(word, &expected)| word.load(Ordering::Relaxed) == expected);
        if !matches || !described || contents.descriptor.len() > contents.state_words {
            return Err(incompatible());
        }
        mapping.settle_boot(boot_id(), contents);
        // Relaxed: ordered after `settle_boot`'s Acquire load of this boot, which the
        // creator's link or the reset's Release store published the namespace with.
        let namespace = found[W_PID_NAMESPACE].load(Ordering::Relaxed);
        if contents.pid_namespace != 0 && namespace != 0 && namespace != contents.pid_namespace {
            return Err(incompatible());
        }
        Ok(mapping)
    }

    /// Makes the table's times this boot's: resets a table written in an earlier boot.
    fn settle_boot(&self, boot: u64, contents: &Contents<'_>) {
        let word = &self.words()[W_BOOT];
        let started = Instant::now();
        loop {
            // Acquire: pairs with the Release store that ends a reset, so the zeroed state
            // is what this process then reads.
            let found = word.load(Ordering::Acquire);
            if found == boot {
                return;
            }
            let taken_over = found == RESETTING | boot && started.elapsed() > RESET_PATIENCE;
            if found != RESETTING | boot || taken_over {
                // Relaxed on success: the reset's stores are published by the Release store
                // of `boot` below, not by this swap.
                let claimed = taken_over
                    || word
                        .compare_exchange(
                            found,
                            RESETTING | boot,
                            Ordering::Relaxed,
                            Ordering::Relaxed,
                        )
                        .is_ok();
                if claimed {
                    for (index, state) in self.words()[HEADER_WORDS..][..contents.state_words]
                        .iter()
                        .enumerate()
                    {
                        // Relaxed: this resetter alone writes the words now.
                        let held = state.load(Ordering::Relaxed);
                        let initial = (contents.initial)(index);
                        // A word that holds its value already is not written, so pages
                        // of zeros a table never used stay unwritten.
                        if held != initial && !(contents.kept)(index, held) {
                            // Relaxed: published by the Release store below.
                            state.store(initial, Ordering::Relaxed);
                        }
                    }
                    // Relaxed: as the state. A new boot may have new namespaces.
                    self.words()[W_PID_NAMESPACE].store(contents.pid_namespace, Ordering::Relaxed);
                    // Release: publishes the zeroed state to every opener that sees `boot`.
                    word.store(boot, Ordering::Release);
                    return;
                }
                continue;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping this value made, once; nothing borrows it
        // past `self`.
        unsafe { libc::munmap(self.words.as_ptr().cast(), self.len * 8) };
    }
}
