//! A change of an owner's version: it publishes the new one, retires the one it replaced,
//! and frees what no pinned thread can read any more (the parent module's docs, Freeing
//! and Bounded memory).

use super::{Retired, Version, Versions, MAX_RETIRED};
use crate::sync::{Backoff, MutexGuard, Ordering};
use std::ptr::NonNull;
use std::sync::PoisonError;

impl<T> Versions<T> {
    /// Starts a change: waits for any other to end.
    pub(crate) fn change(&self) -> Change<'_, T> {
        // The lock guards the list of retired versions, which a panic cannot leave
        // inconsistent (a push is whole or not made).
        let retired = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        Change {
            versions: self,
            retired,
            replaced: None,
            waits: true,
        }
    }

    /// Starts a change that never waits for pinned threads: for a thread that may hold a
    /// pin itself, adopting a version another process made (a keyed table's file rule),
    /// whose changes the file's own pins bound, so few versions wait however it runs.
    pub(crate) fn adopting(&self) -> Change<'_, T> {
        let mut change = self.change();
        change.waits = false;
        change
    }
}

/// A change in progress: it holds the changes' lock, and when dropped, retires the version
/// it replaced and frees what no thread can read any more.
pub(crate) struct Change<'a, T> {
    versions: &'a Versions<T>,
    retired: MutexGuard<'a, Retired<T>>,
    replaced: Option<NonNull<Version<T>>>,
    /// Whether it waits while more than [`MAX_RETIRED`] versions remain.
    waits: bool,
}

impl<'a, T> Change<'a, T> {
    /// The version in force, and its address for a link to it (`None` for the first).
    pub(crate) fn current(&self) -> (&'a Version<T>, Option<NonNull<Version<T>>>) {
        // Relaxed: only changes store the pointer, and this one holds their lock, which the
        // change before released after its store.
        let pointer = self.versions.current.load(Ordering::Relaxed);
        // SAFETY: only a change retires a version, and this one holds the lock.
        (
            unsafe { self.versions.version(pointer) },
            NonNull::new(pointer),
        )
    }

    /// The serial of the version this change publishes: the first version's is 0, and
    /// each change's one more. What a thread keeps, past its pin, to know a version again:
    /// unlike its address, never reused while the owner lives.
    pub(crate) fn serial(&self) -> u64 {
        self.retired.serial + 1
    }

    /// Makes `value` the version in force; the one it replaces is retired when this change
    /// is dropped (at most one publication a change).
    pub(crate) fn publish(&mut self, value: T) -> &'a Version<T> {
        debug_assert!(self.replaced.is_none(), "one publication a change");
        self.retired.serial += 1;
        let new = Box::into_raw(Box::new(Version::new(value)));
        let (_, old) = self.current();
        // Release: publishes the new version's words to every thread that loads it.
        self.versions.current.store(new, Ordering::Release);
        self.replaced = old;
        // SAFETY: just leaked; retired only by a later change, which waits for this one.
        unsafe { &*new }
    }

    /// Frees every retired version no thread can read, advancing the epoch as far as
    /// pinned threads let it, and waits while more than [`MAX_RETIRED`] remain.
    fn reclaim(&mut self) {
        let mut backoff = Backoff::default();
        loop {
            for _ in 0..2 {
                self.versions.advance();
            }
            // Relaxed: this thread alone stores it.
            let epoch = self.versions.epoch.load(Ordering::Relaxed);
            self.retired.waiting.retain(|&(version, retired_in)| {
                if retired_in + 2 > epoch {
                    return true;
                }
                // SAFETY: a leaked `Box`, retired once, in an epoch two behind: no thread
                // pinned can read it (module docs).
                drop(unsafe { Box::from_raw(version.as_ptr()) });
                false
            });
            if self.retired.waiting.len() <= MAX_RETIRED || !self.waits {
                return;
            }
            backoff.snooze();
        }
    }
}

impl<T> Drop for Change<'_, T> {
    fn drop(&mut self) {
        if let Some(replaced) = self.replaced.take() {
            // Relaxed: this thread alone stores it. The pointer's store above comes
            // before, so a thread that reads this epoch or a later one reads the new version.
            let epoch = self.versions.epoch.load(Ordering::Relaxed);
            self.retired.waiting.push((replaced, epoch));
        }
        self.reclaim();
    }
}
