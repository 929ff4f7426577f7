//! A live change's memory is bounded (docs/live-changes.md, "What a change costs"): a keyed
//! table of 100,000 keys changed 1,000 times and a limiter changed 100,000 times, with
//! acquires racing the changes from other threads, never hold more than a few times their
//! own size above the memory they started with.
//!
//! Measured by this binary's global allocator, which counts the bytes live in the process
//! and their peak: every byte librate holds (a table's regions, a limiter's generations
//! and their state words) comes from it. It cannot pass by accident: each test first checks
//! that one change shows up in the count as at least the size of what it replaced (so the
//! allocator sees what a change allocates), and a change that kept the version it replaced
//! would add that size again on every change, hundreds of times past the bound.
//!
//! The table's test sweeps 200,000 slots a change: it runs in release builds
//! (`cargo test --release --test live_memory`, which `scripts/test.sh` runs).

use librate::{Config, Instant, KeyedLimiter, Limiter};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to `System` unchanged; the counters only observe them.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's promises, passed on.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's promises, passed on.
        unsafe { System.dealloc(pointer, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The tests run one at a time, so that each counts only its own bytes (and the harness's,
/// a few hundred at most: [`SLACK`]).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// What the test harness may allocate meanwhile.
const SLACK: usize = 16 << 10;

/// Starts counting the peak from the bytes live now, which it returns.
fn start_peak() -> usize {
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    live
}

/// Runs `changes` on this thread while `threads` threads run `acquire` in a loop, and
/// returns how many acquires they made.
fn race(threads: usize, acquire: impl Fn(u64) + Sync, changes: impl FnOnce()) -> u64 {
    let done = AtomicBool::new(false);
    let acquires = AtomicU64::new(0);
    thread::scope(|scope| {
        for thread in 0..threads {
            let (done, acquires, acquire) = (&done, &acquires, &acquire);
            scope.spawn(move || {
                let mut made = 0;
                while !done.load(Ordering::Relaxed) {
                    acquire(made * threads as u64 + thread as u64);
                    made += 1;
                }
                acquires.fetch_add(made, Ordering::Relaxed);
            });
        }
        changes();
        done.store(true, Ordering::Relaxed);
    });
    acquires.into_inner()
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "minutes unoptimized: run `cargo test --release --test live_memory`"
)]
fn a_table_of_100_000_keys_changed_1_000_times_stays_within_a_few_table_sizes() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const KEYS: u64 = 100_000;
    let rules = [
        Config::gcra(10, SECOND).with_burst(20),
        Config::gcra(20, SECOND).with_burst(30),
    ];
    let table = KeyedLimiter::new(&rules[0], KEYS).unwrap();
    for key in 0..KEYS {
        assert!(
            table
                .acquire_at(&key.to_le_bytes(), 1, Instant::ZERO)
                .unwrap()
                .allowed
        );
    }
    let size = table.table_bytes();
    let start = start_peak();
    // The allocator sees a change: it allocates the new region.
    table.set_config_at(&rules[1], Instant::ZERO).unwrap();
    assert!(PEAK.load(Ordering::Relaxed) >= start + size);
    let acquires = race(
        2,
        |i| {
            let key = (i * 7_919) % KEYS;
            let _ = table
                .acquire_at(&key.to_le_bytes(), 1, Instant::ZERO)
                .unwrap();
        },
        || {
            for change in 1..1_000 {
                table
                    .set_config_at(&rules[change % 2], Instant::ZERO)
                    .unwrap();
            }
        },
    );
    assert!(acquires > 0);
    let peak = PEAK.load(Ordering::Relaxed);
    println!(
        "table: {size} bytes a region; peak {} bytes above the start, {} after; {acquires} acquires",
        peak - start,
        LIVE.load(Ordering::Relaxed) - start
    );
    // The first region (in `start`), the one in force, two replaced ones waiting for
    // threads that may still read them, and the one a change builds: four above `start`.
    assert!(
        peak <= start + 4 * size + SLACK,
        "peak {} bytes above the start, a table is {size} bytes",
        peak - start
    );
    // Every key kept its state: 1 taken of 20, then carried over, capped at 30 or 20.
    assert_eq!(table.live_keys_at(Instant::ZERO), KEYS);
}

#[test]
fn a_limiter_changed_100_000_times_stays_within_a_few_limiter_sizes() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let rules = [
        Config::gcra(1_000, SECOND).with_burst(2_000),
        Config::gcra(2_000, SECOND).with_burst(3_000),
    ];
    let limiter = Limiter::new(&rules[0]).unwrap();
    let start = start_peak();
    limiter.set_config_at(&rules[1], Instant::ZERO).unwrap();
    // One generation: what a change allocates, and what it would keep if it kept the one
    // it replaced.
    let generation = LIVE.load(Ordering::Relaxed) - start;
    assert!(generation >= 256, "the state words and their padding");
    let acquires = race(
        2,
        |_| {
            let _ = limiter.acquire_at(1, Instant::ZERO).unwrap();
        },
        || {
            for change in 1..100_000 {
                limiter
                    .set_config_at(&rules[change % 2], Instant::ZERO)
                    .unwrap();
            }
        },
    );
    assert!(acquires > 0);
    let peak = PEAK.load(Ordering::Relaxed);
    println!(
        "limiter: {generation} bytes a generation; peak {} bytes above the start, {} after; \
         {acquires} acquires",
        peak - start,
        LIVE.load(Ordering::Relaxed) - start
    );
    assert!(
        peak <= start + 4 * generation + SLACK,
        "peak {} bytes above the start, a generation is {generation} bytes",
        peak - start
    );
}
