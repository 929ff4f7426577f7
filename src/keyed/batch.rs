//! Many keys in one call: [`KeyedLimiter::try_acquire_batch`] runs the same lookup,
//! update and insert per key as [`KeyedLimiter::try_acquire`]; it only reorders the work
//! around them. For each group of keys it hashes every key and prefetches its home line
//! first, then reads the clock once, then decides the keys in order. On a table past the
//! caches the group's misses are then in flight together instead of one after another.

use super::layout::Located;
use super::KeyedLimiter;
use crate::error::{InsufficientCapacity, KeyedAcquireError};
use crate::time::{self as clock, Instant};
use std::hash::BuildHasher;

/// Keys a batch hashes, and whose slots it prefetches, before it decides any of them:
/// enough hashes to cover a trip to DRAM, and few enough lines that they stay in L1 until
/// used.
const BATCH_KEYS: usize = 16;

impl<S: BuildHasher> KeyedLimiter<S> {
    /// Acquires `n` units for each key of `keys`, reporting whether each was admitted, as
    /// [`acquire_at`](Self::acquire_at) would decide them key after key at one reading of
    /// the library clock per group of up to 16 consecutive keys. `each(i, outcome)` is
    /// called once per key, in order, with `Err(TableFull)` for a new key that found the
    /// table full of live keys (it admitted nothing). A key that appears twice is decided
    /// twice, the second time after the first.
    ///
    /// Faster per key than one call per key when the table is larger than the CPU caches:
    /// the slots of a group's keys are prefetched before any of them is read, so their
    /// cache misses overlap, and the group's clock reading is taken after the prefetches.
    ///
    /// # Errors
    /// [`InsufficientCapacity`] if `n` exceeds the decision's `limit`, before any key is
    /// decided (`each` is not called).
    ///
    /// ```
    /// use librate::{Config, InsufficientCapacity, KeyedLimiter};
    /// use std::time::Duration;
    /// let users = KeyedLimiter::new(&Config::gcra(1, Duration::from_secs(1)), 1000).unwrap();
    /// let keys: [&[u8]; 3] = [b"ann", b"bob", b"ann"];
    /// let mut admitted = Vec::new();
    /// users.try_acquire_batch(&keys, 1, |_, outcome| admitted.push(outcome)).unwrap();
    /// // ann's second request, in the same instant, finds her one unit taken.
    /// assert_eq!(admitted, [Ok(true), Ok(true), Ok(false)]);
    /// let too_many = users.try_acquire_batch(&keys, 2, |_, _| unreachable!());
    /// assert_eq!(too_many, Err(InsufficientCapacity));
    /// ```
    pub fn try_acquire_batch(
        &self,
        keys: &[&[u8]],
        n: u64,
        each: impl FnMut(usize, Result<bool, KeyedAcquireError>),
    ) -> Result<(), InsufficientCapacity> {
        self.batch(keys, n, None, each)
    }

    /// [`try_acquire_batch`](Self::try_acquire_batch) with every key decided at `at`.
    ///
    /// # Errors
    /// As [`try_acquire_batch`](Self::try_acquire_batch).
    pub fn try_acquire_batch_at(
        &self,
        keys: &[&[u8]],
        n: u64,
        at: Instant,
        each: impl FnMut(usize, Result<bool, KeyedAcquireError>),
    ) -> Result<(), InsufficientCapacity> {
        self.batch(keys, n, Some(at.as_nanos()), each)
    }

    /// The batch acquire, at `now_ns` or (`None`) at a clock reading per group of keys.
    fn batch(
        &self,
        keys: &[&[u8]],
        n: u64,
        now_ns: Option<u64>,
        mut each: impl FnMut(usize, Result<bool, KeyedAcquireError>),
    ) -> Result<(), InsufficientCapacity> {
        self.decider().check(n)?;
        for (group, chunk) in keys.chunks(BATCH_KEYS).enumerate() {
            let mut outcomes = [const { Ok(false) }; BATCH_KEYS];
            {
                // The view ends before `each` runs: a caller's `each` may change the
                // table's rule, which may wait for views older than its change.
                let view = self.view();
                let region = view.current();
                let mut located = [Located {
                    fingerprint: 0,
                    home: 0,
                }; BATCH_KEYS];
                for (place, key) in located.iter_mut().zip(chunk) {
                    let key = self.locate(key);
                    region.prefetch_home(key);
                    *place = key;
                }
                let now_ns = now_ns.unwrap_or_else(clock::now_ns);
                for (outcome, &key) in outcomes.iter_mut().zip(&located[..chunk.len()]) {
                    // `n` was checked under the rule in force at the start: a change since
                    // may refuse it.
                    *outcome = match region.decider.check(n) {
                        Ok(()) => self.try_acquire_located_at(&view, region, key, now_ns, n),
                        Err(error) => Err(error.into()),
                    };
                }
            }
            for (offset, outcome) in outcomes.into_iter().take(chunk.len()).enumerate() {
                each(group * BATCH_KEYS + offset, self.counted(n, outcome));
            }
        }
        Ok(())
    }
}
