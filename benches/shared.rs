//! A shared limiter (`Limiter::open`: its state in a file every process maps) against a
//! private one (`Limiter::new`) of the same configuration: `cargo bench --bench shared`.
//!
//! Each pair runs in the same criterion group, the private limiter first, the shared one
//! right after it, so the two are measured minutes apart at most on the same machine
//! state. Both are fresh for each measurement and taken to the same state first.
//!
//! | group | what |
//! |---|---|
//! | `shared_through_clock` | `try_acquire` and `acquire`, the clock included |
//! | `shared_at_frozen_time` | `acquire_at` on a black-boxed frozen time: the decision alone |
//! | `shared_changed` | a shared limiter whose rule never changed against one whose rule changed once in its file (`set_config_at`: its decisions go through the rule in force, pinned), `try_acquire` through the clock and `acquire_at` at a frozen time; and the same for the idle keyed table of `shared_keyed`, shared |
//! | `shared_keyed` | a keyed table of 1,000 keys, all present, visited in turn by `try_acquire`: idle keys (each admits) and drained keys (each denies), private (`KeyedLimiter::new`) then shared (`KeyedLimiter::open`) |
//! | `shared_contended_2_threads` | 2 threads on one admitting limiter (the slower thread's time per call); `shared_two_mappings`: each thread through its own `open` of the file, as two processes would |
//! | `shared_vs_redis` | the shared limiter against what a user would do on one host instead: a Redis `INCR` + `EXPIRE` round trip to a local redis-server, over loopback and a Unix socket (see `local_redis.rs`; skipped when `redis-server` is not installed) |
//!
//! The subjects are those of `gcra.rs`, with the same configurations, so their private
//! rows can be read against that bench's. The files go in `/dev/shm` (a tmpfs: the file
//! lives in memory) or, where there is none, the temporary directory; set
//! `LIBRATE_BENCH_SHARED_DIR` to measure another file system. Each file is removed when its
//! limiter is dropped.

#![deny(missing_docs)]

use std::hint::black_box;
use std::io::{Read, Write};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use librate::{Config, Instant, KeyedLimiter, Limiter};

mod local_redis;
mod timing;
use local_redis::{Counter, LocalRedis};
use timing::{contended, single};

const US: u64 = 1_000;
const SECOND: u64 = 1_000_000 * US;
const HOUR: Duration = Duration::from_secs(3600);
/// The time `acquire_at` is asked about in the frozen-time benches (as in `gcra.rs`).
const FROZEN_NS: u64 = 1_000 * SECOND;
/// `gcra.rs`' burst for its busy and frozen buckets (governor's largest).
const LARGE_BURST: u64 = u32::MAX as u64;

/// A limiter to measure and the state it is measured in.
struct Subject {
    label: &'static str,
    config: Config,
    /// Units taken before any measured call.
    prefill: u64,
    /// Whether every measured call is admitted (else every one is denied).
    allowing: bool,
}

const fn subject(label: &'static str, config: Config, prefill: u64, allowing: bool) -> Subject {
    Subject {
        label,
        config,
        prefill,
        allowing,
    }
}

/// `gcra.rs`' counters: one window for the whole run, with far more room than its calls.
fn counter(label: &'static str, config: fn(u64, Duration) -> Config) -> Subject {
    subject(
        label,
        config(1 << 40, Duration::from_nanos(1 << 62)),
        0,
        true,
    )
}

/// Through the clock: `gcra.rs`' busy and idle buckets, its two counters, its log, and
/// its drained bucket (every call a denial). See that file for why each keeps its shape
/// for a whole run.
fn through_clock_subjects() -> [Subject; 6] {
    [
        subject(
            "gcra_busy",
            Config::per_second(10_000_000).with_burst(LARGE_BURST),
            1_000_000,
            true,
        ),
        subject("gcra_idle", Config::per_second(1_000_000_000), 0, true),
        counter("fixed_window", Config::fixed_window),
        counter("sliding_window", Config::sliding_window),
        subject(
            "sliding_log",
            Config::sliding_log(1 << 13, Duration::from_micros(100)),
            0,
            true,
        ),
        subject("gcra_drained", Config::gcra(1, HOUR), 1, false),
    ]
}

/// At a frozen time: `gcra.rs`' frozen bucket and its two counters (the log has no
/// frozen-time case: with time standing still its ring fills).
fn frozen_subjects() -> [Subject; 3] {
    [
        subject(
            "gcra_frozen",
            Config::per_second(1_000_000_000).with_burst(LARGE_BURST),
            0,
            true,
        ),
        counter("fixed_window", Config::fixed_window),
        counter("sliding_window", Config::sliding_window),
    ]
}

/// Where a limiter's state lives.
#[derive(Clone, Copy)]
enum Store {
    /// `Limiter::new`: this process's heap.
    Private,
    /// `Limiter::open`: a file every process can map.
    Shared,
}

impl Store {
    fn name(self) -> &'static str {
        match self {
            Store::Private => "private",
            Store::Shared => "shared",
        }
    }
}

/// A limiter and, for a shared one, its file, removed on drop.
struct Subjected {
    limiter: Limiter,
    file: Option<PathBuf>,
}

impl Deref for Subjected {
    type Target = Limiter;
    fn deref(&self) -> &Limiter {
        &self.limiter
    }
}

impl Drop for Subjected {
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            // The mapping outlives the name: the limiter still works until it is dropped.
            let _ = std::fs::remove_file(file);
        }
    }
}

/// The directory the shared files go in.
fn shared_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("LIBRATE_BENCH_SHARED_DIR") {
        return dir.into();
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// A path no other limiter of this run (or another run) uses.
fn fresh_path(label: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let serial = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = format!("librate-bench-{}-{serial}-{label}", std::process::id());
    shared_dir().join(name)
}

impl Subject {
    /// A fresh limiter in `store` with the prefill taken at `now_ns`.
    fn make(&self, store: Store, now_ns: u64) -> Subjected {
        let subjected = match store {
            Store::Private => Subjected {
                limiter: Limiter::new(&self.config).expect("bench configs are valid"),
                file: None,
            },
            Store::Shared => {
                let path = fresh_path(self.label);
                let limiter = Limiter::open(&path, &self.config)
                    .unwrap_or_else(|error| panic!("open {}: {error}", path.display()));
                Subjected {
                    limiter,
                    file: Some(path),
                }
            }
        };
        let prefill = subjected.acquire_at(self.prefill, Instant::from_nanos(now_ns));
        assert!(prefill.expect("prefill ≤ burst").allowed, "{}", self.label);
        subjected
    }

    fn id(&self, operation: &str, store: Store) -> BenchmarkId {
        BenchmarkId::new(self.label, format!("{operation}/{}", store.name()))
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

const STORES: [Store; 2] = [Store::Private, Store::Shared];

/// `try_acquire` and `acquire` through the clock, private then shared.
fn through_clock(c: &mut Criterion) {
    let mut group = c.benchmark_group("shared_through_clock");
    for subject in &through_clock_subjects() {
        for store in STORES {
            let ours = subject.make(store, librate::now_ns());
            let try_acquire = || ours.try_acquire(black_box(1)) == Ok(true);
            single(&mut group, subject.id("try_acquire", store), try_acquire);
            subject.expect("try_acquire", try_acquire());
        }
        for store in STORES {
            let ours = subject.make(store, librate::now_ns());
            let acquire = || ours.acquire(black_box(1)).is_ok_and(|d| d.allowed);
            single(&mut group, subject.id("acquire", store), acquire);
            subject.expect("acquire", acquire());
        }
    }
    group.finish();
}

/// `acquire_at` on a black-boxed [`FROZEN_NS`], private then shared.
fn at_frozen_time(c: &mut Criterion) {
    let mut group = c.benchmark_group("shared_at_frozen_time");
    for subject in &frozen_subjects() {
        for store in STORES {
            let ours = subject.make(store, FROZEN_NS);
            let acquire_at = || {
                let decision =
                    ours.acquire_at(black_box(1), black_box(Instant::from_nanos(FROZEN_NS)));
                decision.is_ok_and(|d| d.allowed)
            };
            single(&mut group, subject.id("acquire_at", store), acquire_at);
            subject.expect("acquire_at", acquire_at());
        }
    }
    group.finish();
}

/// How a shared limiter's rule came to be its subject's.
#[derive(Clone, Copy)]
enum History {
    /// Opened with the subject's rule, never changed.
    NeverChanged,
    /// Opened with another rule (its burst one less), then changed once in its file to the
    /// subject's (`set_config_at`): every decision finds side A's words replaced and
    /// decides pinned, on the rule in force.
    ChangedOnce,
}

impl History {
    fn name(self) -> &'static str {
        match self {
            History::NeverChanged => "never_changed",
            History::ChangedOnce => "changed_once",
        }
    }
}

impl Subject {
    /// A fresh shared limiter of this subject with `history`, the prefill taken at
    /// `now_ns`.
    fn make_shared(&self, history: History, now_ns: u64) -> Subjected {
        let path = fresh_path(self.label);
        let opened = match history {
            History::NeverChanged => self.config,
            History::ChangedOnce => self.config.with_burst(self.config.burst - 1),
        };
        let limiter = Limiter::open(&path, &opened)
            .unwrap_or_else(|error| panic!("open {}: {error}", path.display()));
        if let History::ChangedOnce = history {
            limiter
                .set_config_at(&self.config, Instant::from_nanos(now_ns))
                .expect("a change of burst carries over");
            assert_eq!(limiter.config(), &self.config);
        }
        let subjected = Subjected {
            limiter,
            file: Some(path),
        };
        let prefill = subjected.acquire_at(self.prefill, Instant::from_nanos(now_ns));
        assert!(prefill.expect("prefill ≤ burst").allowed, "{}", self.label);
        subjected
    }
}

const HISTORIES: [History; 2] = [History::NeverChanged, History::ChangedOnce];

/// The busy bucket's `try_acquire` and the frozen bucket's `acquire_at`, each on a shared
/// limiter whose rule never changed, then on one whose rule changed once.
fn changed(c: &mut Criterion) {
    let mut group = c.benchmark_group("shared_changed");
    let [busy, ..] = through_clock_subjects();
    for history in HISTORIES {
        let ours = busy.make_shared(history, librate::now_ns());
        let try_acquire = || ours.try_acquire(black_box(1)) == Ok(true);
        let id = BenchmarkId::new(busy.label, format!("try_acquire/{}", history.name()));
        single(&mut group, id, try_acquire);
        busy.expect("try_acquire", try_acquire());
    }
    let [frozen, ..] = frozen_subjects();
    for history in HISTORIES {
        let ours = frozen.make_shared(history, FROZEN_NS);
        let acquire_at = || {
            let decision = ours.acquire_at(black_box(1), black_box(Instant::from_nanos(FROZEN_NS)));
            decision.is_ok_and(|d| d.allowed)
        };
        let id = BenchmarkId::new(frozen.label, format!("acquire_at/{}", history.name()));
        single(&mut group, id, acquire_at);
        frozen.expect("acquire_at", acquire_at());
    }
    // The idle keyed table of `keyed`, shared, never changed and changed once (opened
    // with a burst one less, then given its rule).
    let config = Config::per_second(1_000_000_000);
    for history in HISTORIES {
        let opened = match history {
            History::NeverChanged => config,
            History::ChangedOnce => config.with_burst(config.limit - 1),
        };
        let table = keyed_table(&opened, Store::Shared, librate::now_ns());
        if let History::ChangedOnce = history {
            table
                .set_config(&config)
                .expect("a change of burst carries over");
        }
        let mut next = 0u64;
        let mut try_acquire = || {
            next = (next + 1) % KEYS;
            table.try_acquire(black_box(&next.to_le_bytes()), 1) == Ok(true)
        };
        let id = BenchmarkId::new(
            "idle_1000_keys",
            format!("keyed_try_acquire/{}", history.name()),
        );
        single(&mut group, id, &mut try_acquire);
        assert!(try_acquire(), "idle keys admit");
    }
    group.finish();
}

/// Two threads on the busy bucket: one private limiter, one shared handle, and two
/// handles of one file (each thread its own mapping of the same memory).
fn contended_2_threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("shared_contended_2_threads");
    let [busy, ..] = through_clock_subjects();
    for store in STORES {
        let ours = busy.make(store, librate::now_ns());
        let try_acquire = |_| ours.try_acquire(black_box(1)) == Ok(true);
        contended(&mut group, busy.id("try_acquire", store), try_acquire);
        busy.expect("try_acquire", try_acquire(0));
    }
    let first = busy.make(Store::Shared, librate::now_ns());
    let path = first.file.as_ref().expect("a shared limiter has a file");
    let second = Limiter::open(path, &busy.config).expect("the same file and config");
    let handles = [&first.limiter, &second];
    let try_acquire = |index: usize| handles[index].try_acquire(black_box(1)) == Ok(true);
    let id = BenchmarkId::new(busy.label, "try_acquire/shared_two_mappings");
    contended(&mut group, id, try_acquire);
    busy.expect("try_acquire", try_acquire(0) && try_acquire(1));
    group.finish();
}

/// Keys in the keyed pair: as `keyed.rs`' 1,000-key rows.
const KEYS: u64 = 1_000;

/// A keyed table of [`KEYS`] keys in `store`, every key inserted at `now_ns` by one unit,
/// and for a shared one its file, removed before returning (the mapping stays).
fn keyed_table(config: &Config, store: Store, now_ns: u64) -> KeyedLimiter {
    let table = match store {
        Store::Private => KeyedLimiter::new(config, KEYS).map_err(librate::Error::from),
        Store::Shared => {
            let path = fresh_path("keyed");
            let table = KeyedLimiter::open(&path, config, KEYS);
            let _ = std::fs::remove_file(&path);
            table.map_err(librate::Error::from)
        }
    }
    .expect("bench configs are valid");
    for key in 0..KEYS {
        let inserted = table.acquire_at(&key.to_le_bytes(), 1, Instant::from_nanos(now_ns));
        assert!(inserted.expect("capacity for every key").allowed);
    }
    table
}

/// `try_acquire` on the 1,000 keys in turn, private then shared: idle keys (a billion per
/// second: each admits, at the precise clock) and drained keys (one per hour, taken: each
/// denies).
fn keyed(c: &mut Criterion) {
    let mut group = c.benchmark_group("shared_keyed");
    let cases = [
        ("idle_1000_keys", Config::per_second(1_000_000_000), true),
        (
            "drained_1000_keys",
            Config::gcra(1, HOUR).with_burst(1),
            false,
        ),
    ];
    for (label, config, allowing) in cases {
        for store in STORES {
            let table = keyed_table(&config, store, librate::now_ns());
            let mut next = 0u64;
            let mut try_acquire = || {
                next = (next + 1) % KEYS;
                table.try_acquire(black_box(&next.to_le_bytes()), 1) == Ok(true)
            };
            let id = BenchmarkId::new(label, format!("try_acquire/{}", store.name()));
            single(&mut group, id, &mut try_acquire);
            assert_eq!(
                try_acquire(),
                allowing,
                "{label} changed shape during the run"
            );
        }
    }
    group.finish();
}

/// The busy bucket's shared `try_acquire` and `acquire`, then one Redis round trip per
/// call over loopback and over the Unix socket, in one group.
fn versus_redis(c: &mut Criterion) {
    let Some(server) = LocalRedis::start() else {
        return;
    };
    let mut group = c.benchmark_group("shared_vs_redis");
    let [busy, ..] = through_clock_subjects();
    let ours = busy.make(Store::Shared, librate::now_ns());
    let try_acquire = || ours.try_acquire(black_box(1)) == Ok(true);
    single(
        &mut group,
        busy.id("try_acquire", Store::Shared),
        try_acquire,
    );
    busy.expect("try_acquire", try_acquire());
    let acquire = || ours.acquire(black_box(1)).is_ok_and(|d| d.allowed);
    single(&mut group, busy.id("acquire", Store::Shared), acquire);
    busy.expect("acquire", acquire());

    let key = format!("librate-bench:{}", std::process::id());
    let connected = "connect to the local redis-server";
    round_trips(
        &mut group,
        "tcp",
        Counter::new(server.tcp().expect(connected), &key),
    );
    round_trips(
        &mut group,
        "unix",
        Counter::new(server.unix().expect(connected), &key),
    );
    group.finish();
}

/// One Redis `INCR` + `EXPIRE` round trip per call, over `transport`.
fn round_trips(
    group: &mut BenchmarkGroup<WallTime>,
    transport: &str,
    mut counter: Counter<impl Read + Write>,
) {
    let id = BenchmarkId::new("redis_incr_expire", transport);
    single(group, id, || counter.incr_expire().expect("redis answers"));
}

criterion_group! {
    name = benches;
    // Short runs, as in `gcra.rs`: the machine is shared, and the ratios that matter are
    // measured within one run.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = through_clock, at_frozen_time, changed, keyed, contended_2_threads, versus_redis
}
criterion_main!(benches);
