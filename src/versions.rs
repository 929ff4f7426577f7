//! **Versions** of a rule and its state: what a live change replaces (docs/live-changes.md),
//! for a limiter (a generation: `generations.rs`) and a keyed table (a region:
//! `keyed/change.rs`), and through them for policies. A replaced version is freed once no
//! thread can still be deciding on it, so an owner's memory stays bounded however many
//! changes it sees.
//!
//! # The first version, in place
//! An owner holds the version it was built with in place, never freed, and the version in
//! force behind an atomic pointer, null while the first is in force. An owner whose rule
//! never changed decides on the first version with no pointer to follow and nothing to
//! pin: the scheme below costs it nothing.
//!
//! # Pinning
//! A thread reads a version of the heap only **pinned** ([`Versions::pin`]), for as long
//! as it holds what it read there; it keeps a version's serial past its pin, never its
//! address, which a later version may reuse (`Change::serial`). Pinning counts the thread
//! in one of two counters, chosen by the parity of the owner's **epoch**, and checks that
//! the epoch did not move meanwhile (else it counts itself again, in the new parity).
//!
//! # Freeing
//! Changes are serialized by a lock that no decision takes. A change publishes its version
//! and **retires** the one it replaced, tagged with the epoch `g` then, once no thread can
//! reach it from the owner any more (a keyed table's sweep still reads it: it retires it
//! when the sweep ends). The epoch moves from `e` to `e + 1` only when no thread is pinned
//! in `e - 1` (the counter of that parity reads 0); a version retired in `g` is freed when
//! the epoch reaches `g + 2`. That is safe:
//! - a thread that read a retired version pinned in an epoch `e ≤ g`: its pin's check
//!   (Acquire) read `e`, so had an advance to `e > g` been made, the thread would have
//!   seen the pointer stored before it (the advance's Release), not the retired version;
//! - while it stays pinned in `e` the epoch cannot pass `e + 1 ≤ g + 1`: the advance to
//!   `e + 2` reads its counter. The counter and the pointer form a store-then-load pair on
//!   each side (the pin: count, then read the pointer; the change: store the pointer, then
//!   read the counter), ordered by a `SeqCst` fence on each side, so at least one side sees
//!   the other's store: the change sees the count, or the thread sees the new pointer.
//!
//! # Bounded memory
//! A change advances the epoch as far as pinned threads let it and frees what is due. While
//! more than [`MAX_RETIRED`] replaced versions still wait, it waits itself (spinning, then
//! yielding) for the threads pinned before it to unpin, which takes as long as the
//! decisions they are making. So an owner holds its first version, the one in force and
//! at most [`MAX_RETIRED`] others, however many changes it sees. A thread never changes an
//! owner while it holds a pin on it, which that change could wait for (a keyed batch ends
//! its view before it calls its caller back).
//!
//! # Why not crossbeam-epoch
//! Its collector is process-wide: a version would be freed only as every thread pinned
//! anywhere in the process moves the global epoch on, and its loom build is
//! `cfg(crossbeam_loom)`, not this crate's `cfg(loom)`, so the models would not see it.
//! An epoch per owner, over `sync.rs`, is checked by the same models as the rest, and
//! lets an owner whose rule never changed skip pinning altogether.
//!
//! `tests/loom_live_changes.rs` and `tests/loom_keyed_live.rs` model-check a change racing
//! decisions and a free racing a thread that read the old version before the change.

mod change;

use crate::sync::{fence, load_latest, AtomicPtr, AtomicU64, Mutex, Ordering};
use crossbeam_utils::CachePadded;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::PoisonError;

/// The replaced versions a change lets wait for pinned threads before it waits itself.
/// Two lets a change that follows another closely return before the first one's readers
/// have finished, and keeps an owner within a few versions of its size. Under loom, none:
/// every change then waits until the version it replaced is freed, so each model explores
/// the free and the wait.
pub(crate) const MAX_RETIRED: usize = if cfg!(loom) { 0 } else { 2 };

/// Values an owner has had, each kept once for as long as the owner lives: the
/// configurations its `config()` lends out by reference, which a later change must not
/// free. Bounded by the distinct values, not by the changes.
#[derive(Debug)]
pub(crate) struct Kept<T> {
    values: Mutex<Vec<Box<T>>>,
}

impl<T: PartialEq + Copy> Kept<T> {
    pub(crate) fn new() -> Self {
        Self {
            values: Mutex::new(Vec::new()),
        }
    }

    /// `part` of the version in force, lent for as long as `versions` lives: the first
    /// version's own (read in place, unpinned), or after a change, the kept copy of it.
    pub(crate) fn lend<'a, V>(
        &'a self,
        versions: &'a Versions<V>,
        part: impl Fn(&V) -> &T,
    ) -> &'a T {
        match versions.first_in_force() {
            Some(first) => part(first),
            None => self.get(part(versions.pin().current())),
        }
    }

    /// The kept value equal to `value`, kept now if none is.
    fn get(&self, value: &T) -> &T {
        let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = match values.iter().position(|kept| **kept == *value) {
            Some(index) => &*values[index],
            None => {
                values.push(Box::new(*value));
                &**values.last().expect("just pushed")
            }
        };
        let kept: *const T = kept;
        // SAFETY: a `Box` never moved or freed while `self` lives (values are only pushed),
        // so the reference outlives the lock.
        unsafe { &*kept }
    }
}

/// A version of an owner's rule and state.
#[derive(Debug)]
pub(crate) struct Version<T> {
    value: T,
    /// Under loom, touched by every pinned read and by the free, so that a free not
    /// ordered after a read is reported as a data race.
    #[cfg(loom)]
    read: crate::sync::ModelCell<()>,
}

impl<T> Version<T> {
    fn new(value: T) -> Self {
        Self {
            value,
            #[cfg(loom)]
            read: crate::sync::ModelCell::new(()),
        }
    }
}

impl<T> Deref for Version<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.value
    }
}

#[cfg(loom)]
impl<T> Drop for Version<T> {
    fn drop(&mut self) {
        self.read.with_mut(|_| ());
    }
}

/// An owner's versions: the first, in place; the one in force; the replaced ones that
/// pinned threads may still read.
pub(crate) struct Versions<T> {
    first: Version<T>,
    /// The version in force: null for `first`, else a leaked `Box`.
    current: AtomicPtr<Version<T>>,
    /// Only changes advance it, holding `changes`.
    epoch: AtomicU64,
    /// How many threads are pinned, by their epoch's parity: written by every pin of a
    /// changed owner, so on lines of their own, away from the words every decision reads.
    pinned: CachePadded<[AtomicU64; 2]>,
    /// The changes' lock, and what it guards: the versions retired and not freed yet.
    changes: Mutex<Retired<T>>,
}

/// Replaced versions not freed yet, each with the epoch it was retired in.
struct Retired<T> {
    waiting: Vec<(NonNull<Version<T>>, u64)>,
    /// The last serial given (`Change::serial`).
    serial: u64,
}

// SAFETY: the versions are owned by this value: `first` in place, the others leaked
// `Box`es it frees alone (in `reclaim`, once no thread reads them, and in `drop`). A
// version is shared between threads as a `&T`, which `T: Sync` allows, and moved between
// them (freed by another thread than the one that built it) as a `T`, which `T: Send` does.
unsafe impl<T: Send + Sync> Send for Versions<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Versions<T> {}

impl<T> Versions<T> {
    pub(crate) fn new(first: T) -> Self {
        Self {
            first: Version::new(first),
            current: AtomicPtr::new(std::ptr::null_mut()),
            epoch: AtomicU64::new(0),
            pinned: CachePadded::new([AtomicU64::new(0), AtomicU64::new(0)]),
            changes: Mutex::new(Retired {
                waiting: Vec::new(),
                serial: 0,
            }),
        }
    }

    /// The first version, which lives as long as the owner: read without a pin.
    #[inline(always)]
    pub(crate) fn first(&self) -> &Version<T> {
        &self.first
    }

    /// The first version if it is still in force, else `None` (then read the one in force
    /// pinned). Acquire: pairs with the Release store that published a later version, so
    /// that a thread that finds one sees the first version's words as the change left them.
    #[inline(always)]
    pub(crate) fn first_in_force(&self) -> Option<&Version<T>> {
        if self.current.load(Ordering::Acquire).is_null() {
            Some(&self.first)
        } else {
            None
        }
    }

    /// Pins this thread (module docs): the versions it reads through the pin stay
    /// allocated until the pin is dropped.
    pub(crate) fn pin(&self) -> Pin<'_, T> {
        Pin {
            versions: self,
            parity: count_in(&self.epoch, &*self.pinned),
            #[cfg(loom)]
            read: std::cell::Cell::new(std::ptr::null()),
            _not_send: PhantomData,
        }
    }

    /// The version `pointer` names: `first` for null.
    ///
    /// # Safety
    /// `pointer` was loaded from `current` by a thread still pinned (or holding the
    /// changes' lock, which alone retires versions).
    #[inline(always)]
    unsafe fn version(&self, pointer: *mut Version<T>) -> &Version<T> {
        if pointer.is_null() {
            &self.first
        } else {
            // SAFETY: a leaked `Box`, not freed while the caller is pinned (the caller's
            // promise; module docs).
            unsafe { &*pointer }
        }
    }

    /// Moves the epoch on by one if no thread is pinned in the epoch before it (module
    /// docs); whether it did. Called holding the changes' lock, which alone stores the epoch.
    fn advance(&self) -> bool {
        // Relaxed: only this thread, holding the lock, stores it.
        let epoch = self.epoch.load(Ordering::Relaxed);
        // SeqCst: pairs with the fence in `pin`: a thread pinned before it is counted
        // below, or one pinned after it loads the pointer this change stored.
        fence(Ordering::SeqCst);
        // Acquire: pairs with the Release of `Pin::drop`, so every read the thread made
        // under its pin happens before the versions this frees are freed.
        if self.pinned[((epoch + 1) & 1) as usize].load(Ordering::Acquire) != 0 {
            return false;
        }
        // Release: pairs with the Acquire check in `pin` (its doc).
        self.epoch.store(epoch + 1, Ordering::Release);
        true
    }
}

/// Counts this thread in `pinned[p]`, `p` the parity of `epoch`, once the epoch is seen
/// not to have moved meanwhile (else it counts itself again, in the new parity), and
/// returns `p`: the pin of an owner's versions (module docs, Pinning), and of a shared
/// file's rules across processes (`shared/pins.rs`), whose changes read the counters
/// after moving the epoch and a `SeqCst` fence.
pub(crate) fn count_in(epoch: &AtomicU64, pinned: &[AtomicU64]) -> usize {
    // Relaxed: checked below.
    let mut seen = epoch.load(Ordering::Relaxed);
    loop {
        let parity = (seen & 1) as usize;
        // Relaxed: ordered before the reads the pin protects by the fence below.
        pinned[parity].fetch_add(1, Ordering::Relaxed);
        // SeqCst: pairs with the fence a change makes between its store (of the pointer,
        // or the epoch) and its read of this counter.
        fence(Ordering::SeqCst);
        // Acquire: pairs with the Release (or stronger) move of the epoch, so a pin in the
        // new epoch reads what the changes before the move stored.
        let now = epoch.load(Ordering::Acquire);
        if now == seen {
            return parity;
        }
        // Relaxed: nothing was read under this count.
        pinned[parity].fetch_sub(1, Ordering::Relaxed);
        seen = now;
    }
}

impl<T> Drop for Versions<T> {
    fn drop(&mut self) {
        let retired = self
            .changes
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let current = NonNull::new(self.current.load(Ordering::Relaxed));
        for (version, _) in retired.waiting.drain(..).chain(current.map(|c| (c, 0))) {
            // SAFETY: each a leaked `Box`, retired once or in force, and `&mut self`
            // means no thread reads any of them any more.
            drop(unsafe { Box::from_raw(version.as_ptr()) });
        }
    }
}

impl<T> std::fmt::Debug for Versions<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Versions").finish_non_exhaustive()
    }
}

/// A pinned thread's view of an owner's versions: what it reads through it stays
/// allocated until it is dropped. Not `Send`: the count it holds is its thread's.
pub(crate) struct Pin<'a, T> {
    versions: &'a Versions<T>,
    parity: usize,
    /// Under loom, the last version read, touched again at the unpin.
    #[cfg(loom)]
    read: std::cell::Cell<*const Version<T>>,
    _not_send: PhantomData<*const ()>,
}

impl<'a, T> Pin<'a, T> {
    /// The version in force. Acquire: pairs with the Release store that published it, so
    /// its words are read at least as the change wrote them.
    #[inline]
    pub(crate) fn current(&self) -> &Version<T> {
        // SAFETY: loaded while pinned.
        self.read(unsafe {
            self.versions
                .version(self.versions.current.load(Ordering::Acquire))
        })
    }

    /// The version in force, by a read-modify-write, which reads the pointer's latest value
    /// (a load may return an older one for a while): for a thread that found the version it
    /// read replaced, so that it does not retry on that one for ever.
    pub(crate) fn latest(&self) -> &Version<T> {
        // SAFETY: loaded while pinned.
        self.read(unsafe { self.versions.version(load_latest(&self.versions.current)) })
    }

    /// A version a version in force links to (a keyed table's predecessor, which its sweep
    /// retires when it ends), or the first for `None`.
    ///
    /// # Safety
    /// `link` was read from a version read through this pin, which said its sweep had not
    /// ended: the version it names was then not retired yet.
    pub(crate) unsafe fn linked(&self, link: Option<NonNull<Version<T>>>) -> &Version<T> {
        // SAFETY: not retired when this thread, pinned, read the link (the caller's
        // promise), so not freed before this pin is dropped.
        self.read(unsafe {
            self.versions
                .version(link.map_or(std::ptr::null_mut(), NonNull::as_ptr))
        })
    }

    #[inline(always)]
    fn read<'v>(&self, version: &'v Version<T>) -> &'v Version<T> {
        #[cfg(loom)]
        {
            version.read.with(|_| ());
            self.read.set(version);
        }
        version
    }
}

impl<T> Drop for Pin<'_, T> {
    fn drop(&mut self) {
        #[cfg(loom)]
        if let Some(version) = unsafe { self.read.get().as_ref() } {
            // The thread reads the version up to its unpin. (SAFETY: read through this
            // pin, so not freed yet.)
            version.read.with(|_| ());
        }
        // Release: pairs with the Acquire read of the counter in `advance`.
        self.versions.pinned[self.parity].fetch_sub(1, Ordering::Release);
    }
}
