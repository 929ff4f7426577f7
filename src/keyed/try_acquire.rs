//! The answer alone: `try_acquire`, the fastest path, and its forms, each deciding on
//! the clock that settles it soonest; the outcome is always the one `acquire` gives.

use super::insert::Request;
use super::layout::Located;
use super::lookup::{Evicted, Lookup, Tenant};
use super::region::Region;
use super::regions::View;
use super::KeyedLimiter;
use crate::error::KeyedAcquireError;
use crate::sync::AtomicU64;
use crate::time::{self as clock, Hinted, Instant, Monotonic, ThreadHint, TimeSource};
use std::hash::BuildHasher;

impl<S: BuildHasher> KeyedLimiter<S> {
    /// Acquires `n` units for `key` now and says only whether they were admitted: the
    /// fastest path. For a key already in the table it decides on the coarse clock
    /// whenever that settles the outcome, as [`Limiter::try_acquire`](crate::limiter::Limiter::try_acquire)
    /// does, and like it reads the exact clock first while the decisions before needed it
    /// (on a table, this thread's last decision); the outcome is always the one
    /// [`acquire`](Self::acquire) would give.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn try_acquire(&self, key: &[u8], n: u64) -> Result<bool, KeyedAcquireError> {
        self.counted(n, self.try_acquire_now(key, n))
    }

    /// [`try_acquire`](Self::try_acquire), uncounted.
    #[inline(always)]
    fn try_acquire_now(&self, key: &[u8], n: u64) -> Result<bool, KeyedAcquireError> {
        let view = self.view();
        let region = view.current();
        region.decider.check(n)?;
        let key = self.locate(key);
        if self.uncached {
            // The key's slot is most likely a cache miss, which costs several clock reads:
            // read the exact time while the line travels rather than the coarse time now
            // and perhaps the exact time after it arrives.
            region.prefetch_home(key);
            return self.try_acquire_located_at(&view, region, key, clock::now_ns(), n);
        }
        if ThreadHint::read() && region.decider.follows_hint() {
            // This thread's last decision needed the exact time (an idle bucket's does):
            // read it before the lookup, so that the read overlaps the hash and the lookup
            // instead of following them.
            let time = Hinted::read_first(Monotonic, ThreadHint::<true>);
            return self.try_acquire_by(&view, region, key, n, time);
        }
        let time = Hinted::new(Monotonic, ThreadHint::<false>);
        self.try_acquire_by(&view, region, key, n, time)
    }

    /// Acquires `n` units for `key` at `at` and says only whether they were admitted:
    /// the outcome [`acquire_at`](Self::acquire_at) gives, without the report's work (the
    /// C ABI's `out` NULL). A query (`n == 0`) is admitted and never inserts its key, as
    /// `acquire_at`'s is.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn try_acquire_at(
        &self,
        key: &[u8],
        n: u64,
        at: Instant,
    ) -> Result<bool, KeyedAcquireError> {
        let view = self.view();
        let region = view.current();
        let admitted = match region.decider.check(n) {
            Ok(()) => {
                self.try_acquire_located_at(&view, region, self.locate(key), at.as_nanos(), n)
            }
            Err(error) => Err(error.into()),
        };
        self.counted(n, admitted)
    }

    /// A try_acquire of `n` (checked under `region`'s rule) for `key`, by `time`.
    #[inline(always)]
    fn try_acquire_by(
        &self,
        view: &View<'_>,
        region: &Region,
        key: Located,
        n: u64,
        time: impl TimeSource,
    ) -> Result<bool, KeyedAcquireError> {
        self.try_acquire_located(
            view,
            region,
            key,
            n,
            |region, state, tenant| region.decider.try_acquire(state, tenant, time, n),
            || time.now(),
        )
    }

    /// A try_acquire of `n` (checked under `region`'s rule) at `now_ns` for `key`.
    #[inline]
    pub(super) fn try_acquire_located_at(
        &self,
        view: &View<'_>,
        region: &Region,
        key: Located,
        now_ns: u64,
        n: u64,
    ) -> Result<bool, KeyedAcquireError> {
        if n == 0 {
            // A query: admitted, and a keyed query never inserts its key.
            return Ok(true);
        }
        self.try_acquire_located(
            view,
            region,
            key,
            n,
            |region, state, tenant| {
                let request = crate::state::TryAcquire { now: now_ns, n };
                region.decider.swap(state, tenant, request)
            },
            || now_ns,
        )
    }

    /// A try_acquire of `n` (checked under `region`'s rule) for `key`: by `decide` on its
    /// state if the key is in `region`, else as an acquire at `now()` wherever the table
    /// keeps the key or inserts it (`regions.rs`).
    #[inline(always)]
    fn try_acquire_located<'v>(
        &self,
        view: &'v View<'_>,
        region: &'v Region,
        key: Located,
        n: u64,
        decide: impl Fn(&Region, &[AtomicU64], &Tenant<'_>) -> Result<bool, Evicted>,
        now: impl FnOnce() -> u64,
    ) -> Result<bool, KeyedAcquireError> {
        let missed_in = match region.on_existing(key, 0, decide) {
            Lookup::Found(allowed) => return Ok(allowed),
            Lookup::Absent => Some(region),
            Lookup::Moved => None,
        };
        let request = Request::new(now(), n, None);
        let decided = self.acquire_located::<KeyedAcquireError>(view, key, request, missed_in);
        Ok(decided?.allowed)
    }
}
