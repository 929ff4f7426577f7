//! The C ABI against governor 0.10, in the same run: `cargo bench --bench c_abi`.
//!
//! A C caller links librate.so or librate.a and reaches each `rate_*` function through a
//! call it cannot inline. So every librate call here goes through a function pointer
//! passed through `black_box`: an indirect call the optimiser cannot see through, as a
//! call through the PLT is. Governor's calls are inlined into the timing loop, as a Rust
//! caller's are. Every call passes `out` NULL: the outcome alone.
//!
//! | group | librate | governor |
//! |---|---|---|
//! | `idle` | `rate_limiter_acquire(l, 1, NULL)`, reading its own clock | `check()` on its default clock |
//! | `frozen` | `rate_limiter_acquire_at(l, 1, t, NULL)` at a fixed `t` | `check()` on a `FakeRelativeClock` |
//! | `keyed/{1000,1000000}_{idle,drained}_keys` | `rate_keyed_acquire(k, key, 8, 1, NULL)` | `check_key(&key)` on a `DefaultKeyedRateLimiter<u64>` |
//! | `floor` | an empty `extern "C"` function through the same pointer, the clock reads, the hashes | |
//!
//! Keys are the `u64`s `0..count` in one shuffled order, the same for both, stepped
//! through so that each call's key differs from the last one's; librate is given each
//! key's 8 little-endian bytes and hashes them with SipHash-1-3 under its table's key,
//! governor hashes the `u64` with std's `RandomState` (SipHash-1-3 of the same 8 bytes).
//! Every key is inserted before timing. `benches/c_abi_table.py` makes the table of
//! docs/bench/c-abi.txt from several runs.

#![deny(missing_docs)]

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::hint::black_box;
use std::num::NonZeroU32;
use std::ptr;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use governor::clock::{Clock, DefaultClock, FakeRelativeClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use rate::{
    rate_config, rate_decision, rate_keyed, rate_keyed_acquire, rate_keyed_free, rate_keyed_new,
    rate_limiter, rate_limiter_acquire, rate_limiter_acquire_at, rate_limiter_free,
    rate_limiter_new, rate_now_ns, RATE_GCRA, RATE_LIMITED, RATE_OK,
};
use siphasher::sip::SipHasher13;

mod keys;
// Only `single`: the contended loop is for the other benches.
#[allow(dead_code)]
mod timing;
use keys::{cycle, shuffled};
use timing::single;

const SECOND: u64 = 1_000_000_000;
const HOUR: u64 = 3_600 * SECOND;
/// The time the `frozen` group decides at.
const FROZEN_NS: u64 = 1_000 * SECOND;
/// A billion a second: one unit a ns, so a bucket is full again by the next call.
const PER_SECOND: u32 = 1_000_000_000;

type Acquire = unsafe extern "C" fn(*mut rate_limiter, u64, *mut rate_decision) -> i32;
type AcquireAt = unsafe extern "C" fn(*mut rate_limiter, u64, u64, *mut rate_decision) -> i32;
type KeyedAcquire =
    unsafe extern "C" fn(*mut rate_keyed, *const u8, usize, u64, *mut rate_decision) -> i32;
type Direct<C> = RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;
type Keyed = RateLimiter<u64, DefaultKeyedStateStore<u64>, DefaultClock>;

/// A C limiter handle, freed on drop.
struct Handle(*mut rate_limiter);

impl Handle {
    /// A GCRA limiter of `limit` a second and `burst`, made through `rate_limiter_new`.
    fn new(limit: u64, burst: u64) -> Self {
        let config = rate_config {
            algorithm: RATE_GCRA,
            limit,
            period_ns: SECOND,
            burst,
        };
        let mut handle = ptr::null_mut();
        // SAFETY: both pointers are to live locals.
        assert_eq!(unsafe { rate_limiter_new(&config, &mut handle) }, RATE_OK);
        Self(handle)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle came from `rate_limiter_new` and is freed once, here.
        unsafe { rate_limiter_free(self.0) }
    }
}

/// A C keyed handle, freed on drop.
struct KeyedHandle(*mut rate_keyed);

impl Drop for KeyedHandle {
    fn drop(&mut self) {
        // SAFETY: the handle came from `rate_keyed_new` and is freed once, here.
        unsafe { rate_keyed_free(self.0) }
    }
}

/// An idle bucket through the clock: a unit a ns with a burst of a second's worth, so
/// every call admits, and stores a time only the precise clock gives.
fn idle(c: &mut Criterion) {
    let mut group = c.benchmark_group("idle");
    let handle = Handle::new(u64::from(PER_SECOND), 0);
    let acquire: Acquire = black_box(rate_limiter_acquire);
    let call = || {
        // SAFETY: a live handle, `out` NULL.
        unsafe { acquire(handle.0, black_box(1), ptr::null_mut()) == RATE_OK }
    };
    measured(&mut group, "librate", call);

    let quota = Quota::per_second(NonZeroU32::new(PER_SECOND).expect("non-zero"));
    let governor: Direct<DefaultClock> = RateLimiter::direct(quota);
    measured(&mut group, "governor", || governor.check().is_ok());
    group.finish();
}

/// The decision alone, at a frozen time: a unit a ns and a burst of `u32::MAX`, so each
/// admission moves the TAT one ns ahead and a run's calls all admit.
fn frozen(c: &mut Criterion) {
    let mut group = c.benchmark_group("frozen");
    let handle = Handle::new(u64::from(PER_SECOND), u64::from(u32::MAX));
    let acquire_at: AcquireAt = black_box(rate_limiter_acquire_at);
    let call = || {
        // SAFETY: a live handle, `out` NULL.
        let status = unsafe { acquire_at(handle.0, black_box(1), FROZEN_NS, ptr::null_mut()) };
        status == RATE_OK
    };
    measured(&mut group, "librate", call);

    let nanosecond = Quota::with_period(Duration::from_nanos(1)).expect("non-zero");
    let quota = nanosecond.allow_burst(NonZeroU32::MAX);
    let clock = FakeRelativeClock::default();
    let governor: Direct<FakeRelativeClock> = RateLimiter::direct_with_clock(quota, clock);
    measured(&mut group, "governor", || governor.check().is_ok());
    group.finish();
}

/// Times `call` and checks afterwards that it still admits: a run that changed shape
/// would measure the wrong case.
fn measured(group: &mut BenchmarkGroup<WallTime>, who: &str, mut call: impl FnMut() -> bool) {
    single(group, BenchmarkId::from_parameter(who), &mut call);
    assert!(call(), "{who} stopped admitting during the run");
}

/// One kind of keyed traffic: the rule for both, and whether each key admits.
struct Traffic {
    name: &'static str,
    limit: u64,
    period_ns: u64,
    quota: Quota,
    admits: bool,
}

/// The two kinds of keyed traffic: each key a unit a ns, so every call admits (as
/// `idle`); and each key one an hour, burst 1, its unit taken before timing, so every
/// call denies.
fn traffics() -> [Traffic; 2] {
    let per_second = NonZeroU32::new(PER_SECOND).expect("non-zero");
    [
        Traffic {
            name: "idle_keys",
            limit: u64::from(PER_SECOND),
            period_ns: SECOND,
            quota: Quota::per_second(per_second),
            admits: true,
        },
        Traffic {
            name: "drained_keys",
            limit: 1,
            period_ns: HOUR,
            quota: Quota::per_hour(NonZeroU32::MIN),
            admits: false,
        },
    ]
}

/// `rate_keyed_acquire` against governor's `check_key`, over `count` keys of `traffic`.
fn keyed_group(c: &mut Criterion, count: u64, traffic: &Traffic) {
    let keys = shuffled(count);
    let mut group = c.benchmark_group(format!("keyed/{count}_{}", traffic.name));
    let config = rate_config {
        algorithm: RATE_GCRA,
        limit: traffic.limit,
        period_ns: traffic.period_ns,
        burst: 0,
    };
    let mut handle = ptr::null_mut();
    // SAFETY: both pointers are to live locals.
    assert_eq!(
        unsafe { rate_keyed_new(&config, count, &mut handle) },
        RATE_OK
    );
    let table = KeyedHandle(handle);
    let acquire: KeyedAcquire = black_box(rate_keyed_acquire);
    let expected = if traffic.admits {
        RATE_OK
    } else {
        RATE_LIMITED
    };
    let call = |key: u64| {
        let bytes = key.to_le_bytes();
        // SAFETY: a live handle, 8 readable bytes, `out` NULL.
        unsafe { acquire(table.0, bytes.as_ptr(), bytes.len(), 1, ptr::null_mut()) }
    };
    for &key in &keys {
        assert_eq!(call(key), RATE_OK, "inserting key {key}");
    }
    let mut step = cycle(&keys);
    measured(&mut group, "librate", || call(step()) == expected);

    let governor: Keyed = RateLimiter::keyed(traffic.quota);
    for key in &keys {
        assert!(governor.check_key(key).is_ok(), "inserting key {key}");
    }
    let mut step = cycle(&keys);
    let check = |key| governor.check_key(&key).is_ok() == traffic.admits;
    measured(&mut group, "governor", || check(step()));
    group.finish();
}

fn keyed(c: &mut Criterion) {
    for count in [1_000, 1_000_000] {
        for traffic in traffics() {
            keyed_group(c, count, &traffic);
        }
    }
}

/// An `extern "C"` function that does nothing, called as `rate_limiter_acquire` is.
extern "C" fn empty(_: *mut rate_limiter, _: u64, _: *mut rate_decision) -> i32 {
    RATE_OK
}

/// What no implementation of the calls above can go below: an empty call through the
/// same pointer, each side's clock read, and each side's hash of an 8-byte key.
fn floor(c: &mut Criterion) {
    let mut group = c.benchmark_group("floor");
    let nothing: Acquire = black_box(empty);
    let call = || {
        // SAFETY: `empty` reads none of its arguments.
        unsafe { nothing(ptr::null_mut(), black_box(1), ptr::null_mut()) }
    };
    single(
        &mut group,
        BenchmarkId::from_parameter("empty_c_call"),
        call,
    );
    let now: extern "C" fn() -> u64 = black_box(rate_now_ns);
    single(
        &mut group,
        BenchmarkId::from_parameter("rate_now_ns"),
        || now(),
    );
    let clock = DefaultClock::default();
    single(
        &mut group,
        BenchmarkId::from_parameter("governor_clock"),
        || clock.now(),
    );

    let mut key = 0u64;
    let sip = SipHasher13::new_with_keys(black_box(1), black_box(2));
    let librate_hash = || {
        key = key.wrapping_add(1);
        let mut hasher = sip;
        hasher.write(&key.to_le_bytes());
        hasher.finish()
    };
    single(
        &mut group,
        BenchmarkId::from_parameter("librate_hash"),
        librate_hash,
    );
    let std_hash = RandomState::new();
    let mut key = 0u64;
    let governor_hash = || {
        key = key.wrapping_add(1);
        std_hash.hash_one(key)
    };
    single(
        &mut group,
        BenchmarkId::from_parameter("governor_hash"),
        governor_hash,
    );
    group.finish();
}

criterion_group! {
    name = benches;
    // Short runs, repeated: benches/c_abi_table.py takes the ratio within each run.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = idle, frozen, keyed, floor
}
criterion_main!(benches);
