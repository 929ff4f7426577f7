//! The timing loops the benches share: one call on one thread, or on [`THREADS`] at once.
//!
//! Each loop is written here, around the call itself, so the call is inlined into it as
//! into a caller's own loop (criterion's `iter` reaches it through a reference, which the
//! optimiser may leave as a call per iteration).

use std::hint::black_box;
use std::sync::Barrier;
use std::thread;
use std::time::Instant;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId};

/// How many threads a contended bench runs.
pub(crate) const THREADS: usize = 2;

/// Measures `call` on one thread.
pub(crate) fn single<R>(
    group: &mut BenchmarkGroup<WallTime>,
    id: BenchmarkId,
    mut call: impl FnMut() -> R,
) {
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(call());
            }
            start.elapsed()
        })
    });
}

/// Measures [`THREADS`] threads at once, thread `i` calling `call(i)`: the slower thread's
/// time per call.
pub(crate) fn contended<R>(
    group: &mut BenchmarkGroup<WallTime>,
    id: BenchmarkId,
    call: impl Fn(usize) -> R + Sync,
) {
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let start_line = Barrier::new(THREADS);
            thread::scope(|scope| {
                let threads: Vec<_> = (0..THREADS)
                    .map(|index| {
                        let (start_line, call) = (&start_line, &call);
                        scope.spawn(move || {
                            start_line.wait();
                            let start = Instant::now();
                            for _ in 0..iters {
                                black_box(call(index));
                            }
                            start.elapsed()
                        })
                    })
                    .collect();
                let elapsed = threads.into_iter().map(|thread| thread.join().unwrap());
                elapsed.max().unwrap_or_default()
            })
        })
    });
}
