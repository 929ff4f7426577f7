//! librate's acquire against governor 0.10, measured in the same criterion groups:
//! `cargo bench --bench gcra`.
//!
//! | group | what |
//! |---|---|
//! | `acquire_allow` | an always-admitting limiter through the clock, busy and idle bucket |
//! | `acquire_deny` | a drained limiter through the clock |
//! | `acquire_at` | the decision alone, on a frozen caller-supplied time (governor: fake clock) |
//! | `contended_2_threads` | 2 threads on one admitting limiter; time of the slower thread per op |
//! | `clock` | the clock reads themselves |
//! | `c_boundary` | `rate_limiter_acquire*` from Rust against the Rust API it wraps |
//! | `changed` | a limiter whose rule never changed against one changed once (`set_config_at` to the same rule), `try_acquire` busy and `acquire_at` frozen |
//! | `counting` | `try_acquire` counted (`enable_counts`) against uncounted, busy, idle and denying |
//!
//! Each group runs over a list of [`Subject`]s; another algorithm is one more line in
//! [`allowing`], [`denying`] or [`allowing_frozen`]. Governor is measured on the same
//! emission interval and burst wherever the subject is a GCRA.

#![deny(missing_docs)]

use std::hint::black_box;
use std::num::NonZeroU32;
use std::ptr;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use governor::clock::{Clock, DefaultClock, FakeRelativeClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use librate::{Algorithm, Config, Limiter};
use rate::{
    rate_config, rate_decision, rate_limiter, rate_limiter_acquire, rate_limiter_acquire_at,
    rate_limiter_free, rate_limiter_new, RATE_OK,
};

mod timing;
use timing::{contended, single};

const US: u64 = 1_000;
const MS: u64 = 1_000 * US;
const SECOND: u64 = 1_000 * MS;
const DAY: Duration = Duration::from_secs(86_400);
/// The time `acquire_at` is asked about in the frozen-time benches.
const FROZEN_NS: u64 = 1_000 * SECOND;
/// Governor's largest burst (its burst is a `NonZeroU32`).
const MAX_GOVERNOR_BURST: u64 = u32::MAX as u64;

/// Admitting through the clock, in the two shapes that take different paths in librate.
///
/// A criterion function here runs ~4 s (1 s warm-up, 3 s measuring) at ≥ 1 ns a call, so
/// it makes at most 4·10⁹ calls; each subject's arithmetic below keeps admitting through
/// that many, and [`Subject::expect`] checks after each run that it still admits.
fn allowing() -> Vec<Subject> {
    vec![
        busy_gcra(),
        // Idle bucket: T = 1 ns, shorter than the gap between calls, so TAT ≤ now at every
        // call. Admission is certain, but the new TAT is now + T, which only the precise
        // clock can give: `try_acquire` learns that from its first call (the limiter's
        // clock hint) and then reads the precise clock first, without the coarse read.
        Subject::new("gcra_idle", Config::per_second(1_000_000_000), 0, true),
        fixed_window(),
        sliding_window(),
        // Every admission logs the exact time, so it reads the precise clock (≥ 24 ns): at
        // most 4,167 calls land in 100 µs, never filling a ring of 2¹³. 128 KiB of
        // timestamps, a size a real limiter has (L2-resident), rather than the largest
        // ring the log allows, whose misses would swamp the algorithm.
        Subject::new(
            "sliding_log",
            Config::sliding_log(1 << 13, Duration::from_micros(100)),
            0,
            true,
        ),
    ]
}

/// Window of 2⁶² ns (146 years) holding up to 2⁴⁰ units: one window for the whole run,
/// far more room than its ≤ 4·10⁹ calls, and both coarse bounds always in the same window.
fn fixed_window() -> Subject {
    Subject::new(
        "fixed_window",
        Config::fixed_window(1 << 40, Duration::from_nanos(1 << 62)),
        0,
        true,
    )
}

/// As [`fixed_window`]: the previous window is empty, so the weighted test is the count.
fn sliding_window() -> Subject {
    Subject::new(
        "sliding_window",
        Config::sliding_window(1 << 40, Duration::from_nanos(1 << 62)),
        0,
        true,
    )
}

/// Busy bucket: T = 100 ns, longer than the ~10 ns between calls, so each admit pushes the
/// TAT further ahead of now. Once the TAT leads now by more than the coarse clock's slack
/// (8 ms here), the coarse bounds settle every decision and `try_acquire` never reads the
/// precise clock. The prefill of 10⁶ units puts the TAT 100 ms ahead from the first call.
/// Burst u32::MAX gives τ = 429 s: a run of ≤ 4·10⁸ calls at ≥ 10 ns adds ≤ 40 s of lead.
fn busy_gcra() -> Subject {
    Subject::new(
        "gcra_busy",
        Config::per_second(10_000_000).with_burst(MAX_GOVERNOR_BURST),
        1_000_000,
        true,
    )
}

/// Denying: drained by taking the whole burst first. One unit per hour refills long after
/// the run ends; the windows get a day, because their edges are aligned on the clock and
/// one falling inside a run would refill them (a chance of ~5·10⁻⁵ rather than ~10⁻³).
fn denying() -> Vec<Subject> {
    vec![
        Subject::new("gcra_drained", Config::per_hour(1), 1, false),
        Subject::new("fixed_window_full", Config::fixed_window(1, DAY), 1, false),
        Subject::new(
            "sliding_window_full",
            Config::sliding_window(1, DAY),
            1,
            false,
        ),
        Subject::new("sliding_log_full", Config::sliding_log(1, DAY), 1, false),
    ]
}

/// Admitting at the frozen time [`FROZEN_NS`]: with time standing still every admit adds
/// T = 1 ns of lead, and τ = (u32::MAX) ns ≈ 4.29 s covers the ≤ 4·10⁹ calls of a run.
/// The sliding log has no frozen-time variant: with time standing still its ring (at most
/// 2²⁰ entries) fills long before a run ends.
fn allowing_frozen() -> Vec<Subject> {
    vec![frozen_gcra(), fixed_window(), sliding_window()]
}

fn frozen_gcra() -> Subject {
    Subject::new(
        "gcra_frozen",
        Config::per_second(1_000_000_000).with_burst(MAX_GOVERNOR_BURST),
        0,
        true,
    )
}

/// A limiter to measure and the state it is measured in.
struct Subject {
    label: &'static str,
    config: Config,
    /// Units taken at the start, before any measured call.
    prefill: u64,
    /// Whether every measured call is admitted (else every one is denied).
    allowing: bool,
}

type Governor<C> = RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;

impl Subject {
    fn new(label: &'static str, config: Config, prefill: u64, allowing: bool) -> Self {
        Self {
            label,
            config,
            prefill,
            allowing,
        }
    }

    fn id(&self, operation: &str) -> BenchmarkId {
        BenchmarkId::new(self.label, operation)
    }

    /// A fresh librate limiter with the prefill taken at `now_ns`.
    fn ours(&self, now_ns: u64) -> Limiter {
        let limiter = Limiter::new(&self.config).expect("bench configs are valid");
        let prefill = limiter.acquire_at(self.prefill, librate::Instant::from_nanos(now_ns));
        assert!(prefill.expect("prefill ≤ burst").allowed, "{}", self.label);
        limiter
    }

    /// A fresh C handle with the prefill taken at `now_ns`.
    fn ffi(&self, now_ns: u64) -> FfiLimiter {
        let config = rate_config {
            algorithm: self.config.algorithm as u32,
            limit: self.config.limit,
            period_ns: self.config.period().as_nanos() as u64,
            burst: self.config.burst,
        };
        let mut handle = ptr::null_mut();
        // SAFETY: both pointers are to live locals.
        let status = unsafe { rate_limiter_new(&config, &mut handle) };
        assert_eq!(status, RATE_OK, "{}", self.label);
        let limiter = FfiLimiter(handle);
        assert_eq!(limiter.acquire_at(self.prefill, now_ns), RATE_OK);
        limiter
    }

    /// Governor on the same emission interval and burst, on `clock`, prefilled likewise;
    /// `None` when the subject is not a GCRA or its burst exceeds governor's.
    fn governor<C: Clock>(&self, clock: C) -> Option<Governor<C>> {
        if self.config.algorithm != Algorithm::Gcra {
            return None;
        }
        let burst = match self.config.burst {
            0 => self.config.limit,
            burst => burst,
        };
        let emission_interval =
            Duration::from_nanos(self.config.period().as_nanos() as u64 / self.config.limit);
        let burst = NonZeroU32::new(u32::try_from(burst).ok()?)?;
        let quota = Quota::with_period(emission_interval)?.allow_burst(burst);
        let limiter = RateLimiter::direct_with_clock(quota, clock);
        if let Some(prefill) = NonZeroU32::new(self.prefill.try_into().ok()?) {
            let taken = limiter.check_n(prefill);
            assert!(matches!(taken, Ok(Ok(()))), "{}", self.label);
        }
        Some(limiter)
    }

    /// Checks, after a run, that the limiter is still in the shape it was measured for.
    fn expect(&self, operation: &str, admitted: bool) {
        assert_eq!(
            admitted, self.allowing,
            "{}/{operation} changed shape during the run; its numbers measure the wrong case",
            self.label
        );
    }
}

/// A C handle, freed on drop.
struct FfiLimiter(*mut rate_limiter);

impl FfiLimiter {
    fn acquire(&self, n: u64, out: Option<&mut rate_decision>) -> i32 {
        let out = out.map_or(ptr::null_mut(), |out| out as *mut rate_decision);
        // SAFETY: the handle is live until drop; `out` is NULL or a live exclusive borrow.
        unsafe { rate_limiter_acquire(self.0, n, out) }
    }

    fn acquire_at(&self, n: u64, now_ns: u64) -> i32 {
        let mut out = rate_decision::default();
        // SAFETY: the handle is live until drop; `out` is a live local.
        unsafe { rate_limiter_acquire_at(self.0, n, now_ns, &mut out) }
    }
}

impl Drop for FfiLimiter {
    fn drop(&mut self) {
        // SAFETY: the handle came from `rate_limiter_new` and is freed once, here.
        unsafe { rate_limiter_free(self.0) }
    }
}

/// How a group runs one call: alone, or on [`timing::THREADS`] threads at once. Generic
/// over the call, so each is inlined into the timing loop as a caller's own code would be
/// (through a `dyn Fn` every call would pay an indirect call, librate's and governor's
/// alike).
trait Runner {
    fn run(group: &mut BenchmarkGroup<WallTime>, id: BenchmarkId, call: impl Fn() -> bool + Sync);
}

struct Single;
impl Runner for Single {
    fn run(group: &mut BenchmarkGroup<WallTime>, id: BenchmarkId, call: impl Fn() -> bool + Sync) {
        single(group, id, call);
    }
}

struct Contended;
impl Runner for Contended {
    fn run(group: &mut BenchmarkGroup<WallTime>, id: BenchmarkId, call: impl Fn() -> bool + Sync) {
        contended(group, id, |_| call());
    }
}

/// librate's `try_acquire` and `acquire` and governor's `check`, all through the clock,
/// each on a fresh limiter, each checked afterwards to still be in the subject's shape.
fn through_clock<R: Runner>(c: &mut Criterion, name: &str, subjects: &[Subject]) {
    let mut group = c.benchmark_group(name);
    for subject in subjects {
        let ours = subject.ours(librate::now_ns());
        let try_acquire = || ours.try_acquire(black_box(1)) == Ok(true);
        R::run(&mut group, subject.id("try_acquire"), try_acquire);
        subject.expect("try_acquire", try_acquire());

        let ours = subject.ours(librate::now_ns());
        let acquire = || ours.acquire(black_box(1)).is_ok_and(|d| d.allowed);
        R::run(&mut group, subject.id("acquire"), acquire);
        subject.expect("acquire", acquire());

        if let Some(governor) = subject.governor(DefaultClock::default()) {
            let check = || governor.check().is_ok();
            R::run(&mut group, subject.id("governor_check"), check);
            subject.expect("governor_check", check());
        }
    }
    group.finish();
}

fn acquire_allow(c: &mut Criterion) {
    through_clock::<Single>(c, "acquire_allow", &allowing());
}

fn acquire_deny(c: &mut Criterion) {
    through_clock::<Single>(c, "acquire_deny", &denying());
}

fn contended_2_threads(c: &mut Criterion) {
    through_clock::<Contended>(c, "contended_2_threads", &allowing());
}

/// The decision alone: librate's `acquire_at` on a black-boxed frozen time, against
/// governor's `check` on its `FakeRelativeClock` (an atomic load standing still).
fn acquire_at(c: &mut Criterion) {
    let mut group = c.benchmark_group("acquire_at");
    for subject in allowing_frozen().iter().chain(&denying()) {
        ours_at_frozen_time(&mut group, subject, "acquire_at");

        if let Some(governor) = subject.governor(FakeRelativeClock::default()) {
            let check = || governor.check().is_ok();
            single(&mut group, subject.id("governor_check_fake_clock"), check);
            subject.expect("governor_check_fake_clock", check());
        }
    }
    group.finish();
}

/// The clock reads: librate's precise clock, the coarse clock its shortcut reads,
/// governor's default (quanta, TSC-based) clock, and std's `Instant`.
fn clock(c: &mut Criterion) {
    let mut group = c.benchmark_group("clock");
    single(
        &mut group,
        BenchmarkId::from_parameter("rate_now_ns"),
        librate::now_ns,
    );
    single(
        &mut group,
        BenchmarkId::from_parameter("clock_monotonic_coarse"),
        || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `ts` is a live, writable timespec.
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
            ts
        },
    );
    let governor_clock = DefaultClock::default();
    single(
        &mut group,
        BenchmarkId::from_parameter("governor_default_clock"),
        || governor_clock.now(),
    );
    single(
        &mut group,
        BenchmarkId::from_parameter("std_instant"),
        Instant::now,
    );
    group.finish();
}

/// The C entry points against the Rust calls they wrap, on fresh limiters of the same
/// subject: what the boundary (NULL checks, `catch_unwind`, copying the decision) costs.
fn c_boundary(c: &mut Criterion) {
    let mut group = c.benchmark_group("c_boundary");
    boundary_through_clock(&mut group, &busy_gcra());
    boundary_at(&mut group, &frozen_gcra());
    group.finish();
}

/// `rate_limiter_acquire` with `out` NULL (outcome only: `try_acquire`) and with `out`
/// (the full decision: `acquire`), against those Rust calls.
fn boundary_through_clock(group: &mut BenchmarkGroup<WallTime>, subject: &Subject) {
    let ffi = subject.ffi(librate::now_ns());
    let out_null = || ffi.acquire(black_box(1), None) == RATE_OK;
    single(group, subject.id("ffi_acquire_out_null"), out_null);
    subject.expect("ffi_acquire_out_null", out_null());

    let ffi = subject.ffi(librate::now_ns());
    let mut decision = rate_decision::default();
    group.bench_function(subject.id("ffi_acquire_out"), |b| {
        b.iter(|| ffi.acquire(black_box(1), Some(&mut decision)))
    });
    subject.expect(
        "ffi_acquire_out",
        ffi.acquire(1, Some(&mut decision)) == RATE_OK,
    );

    let ours = subject.ours(librate::now_ns());
    let try_acquire = || ours.try_acquire(black_box(1)) == Ok(true);
    single(group, subject.id("rust_try_acquire"), try_acquire);
    subject.expect("rust_try_acquire", try_acquire());

    let ours = subject.ours(librate::now_ns());
    let acquire = || ours.acquire(black_box(1)).is_ok_and(|d| d.allowed);
    single(group, subject.id("rust_acquire"), acquire);
    subject.expect("rust_acquire", acquire());
}

/// `rate_limiter_acquire_at` against `Limiter::acquire_at`, both on a frozen time.
fn boundary_at(group: &mut BenchmarkGroup<WallTime>, subject: &Subject) {
    let ffi = subject.ffi(FROZEN_NS);
    let ffi_at = || ffi.acquire_at(black_box(1), black_box(FROZEN_NS)) == RATE_OK;
    single(group, subject.id("ffi_acquire_at_out"), ffi_at);
    subject.expect("ffi_acquire_at_out", ffi_at());

    ours_at_frozen_time(group, subject, "rust_acquire_at");
}

/// `Limiter::acquire_at` on a black-boxed [`FROZEN_NS`], on a fresh limiter.
fn ours_at_frozen_time(group: &mut BenchmarkGroup<WallTime>, subject: &Subject, operation: &str) {
    let ours = subject.ours(FROZEN_NS);
    let acquire_at = || {
        let decision = ours.acquire_at(
            black_box(1),
            black_box(librate::Instant::from_nanos(FROZEN_NS)),
        );
        decision.is_ok_and(|d| d.allowed)
    };
    single(group, subject.id(operation), acquire_at);
    subject.expect(operation, acquire_at());
}

/// What a change of rule costs the decisions after it: the busy bucket's `try_acquire` and
/// the frozen one's `acquire_at`, on a limiter whose rule never changed and on one whose
/// rule changed once (to the same rule, so the two decide alike): the changed one finds
/// its first words replaced on every call and decides pinned on the ones in force.
fn changed(c: &mut Criterion) {
    let mut group = c.benchmark_group("changed");
    for changes in ["never_changed", "changed_once"] {
        let subject = busy_gcra();
        let ours = subject.ours(librate::now_ns());
        if changes == "changed_once" {
            let change = ours.set_config_at(
                &subject.config,
                librate::Instant::from_nanos(librate::now_ns()),
            );
            change.expect("a change to the same rule is valid");
        }
        let try_acquire = || ours.try_acquire(black_box(1)) == Ok(true);
        single(
            &mut group,
            subject.id(&format!("try_acquire/{changes}")),
            try_acquire,
        );
        subject.expect("try_acquire", try_acquire());

        let subject = frozen_gcra();
        let ours = subject.ours(FROZEN_NS);
        if changes == "changed_once" {
            let change =
                ours.set_config_at(&subject.config, librate::Instant::from_nanos(FROZEN_NS));
            change.expect("a change to the same rule is valid");
        }
        let acquire_at = || {
            let decision = ours.acquire_at(
                black_box(1),
                black_box(librate::Instant::from_nanos(FROZEN_NS)),
            );
            decision.is_ok_and(|d| d.allowed)
        };
        single(
            &mut group,
            subject.id(&format!("acquire_at/{changes}")),
            acquire_at,
        );
        subject.expect("acquire_at", acquire_at());
    }
    group.finish();
}

/// `try_acquire` of a limiter that counts its requests (docs/metrics.md) against the same
/// limiter uncounted, in the busy, idle and denying shapes, one after the other in the
/// same run.
fn counting(c: &mut Criterion) {
    let mut group = c.benchmark_group("counting");
    let drained = Subject::new("gcra_drained", Config::per_hour(1), 1, false);
    let idle = Subject::new("gcra_idle", Config::per_second(1_000_000_000), 0, true);
    for subject in [busy_gcra(), idle, drained] {
        for counted in ["uncounted", "counted"] {
            let ours = subject.ours(librate::now_ns());
            if counted == "counted" {
                ours.enable_counts();
            }
            let try_acquire = || ours.try_acquire(black_box(1)) == Ok(true);
            single(
                &mut group,
                subject.id(&format!("try_acquire/{counted}")),
                try_acquire,
            );
            subject.expect("try_acquire", try_acquire());
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    // Short runs: the machine is shared; medians over 100 samples of 3 s are stable enough
    // for ratios measured in one run.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = acquire_allow, acquire_deny, acquire_at, contended_2_threads, clock, c_boundary,
        changed, counting
}
criterion_main!(benches);
