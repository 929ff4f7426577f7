//! `rate_limiter_*`: one limiter, shared by any number of threads.

use super::{
    boundary, construct, construct_at, outcome_status, rate_config, rate_decision, report,
    set_config_of, RATE_E_NULL, RATE_LIMITED, RATE_OK,
};
use librate::Config;
use librate::Instant;
use librate::Limiter;
use librate::OpenError;
use std::ffi::c_char;
use std::path::Path;
use std::time::Duration;

/// An opaque rate limiter. Safe to use from many threads at once; `rate_limiter_free`
/// must not race with any other call on the same handle.
pub struct rate_limiter {
    limiter: Limiter,
}

/// Creates a limiter from `config`, full (at capacity) at any time.
///
/// Ownership: on RATE_OK, `*out` receives a new handle that the caller owns and must
/// release with `rate_limiter_free`; on error `*out` is left untouched.
///
/// NULL: `config` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, or RATE_E_INVALID_CONFIG (unknown algorithm, limit or
/// period 0, more than one unit per ns, a product that does not fit 64 bits, or a
/// window algorithm's bound: see `rate_config`).
///
/// # Safety
/// `config` is NULL or points to a readable `rate_config`; `out` is NULL or points to a
/// writable `rate_limiter *`.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_new(
    config: *const rate_config,
    out: *mut *mut rate_limiter,
) -> i32 {
    boundary(|| {
        // SAFETY: passed on from this function's contract.
        unsafe {
            construct(config, out, |config| {
                Limiter::new(config).map(|limiter| rate_limiter { limiter })
            })
        }
    })
}

/// Opens the limiter whose state lives in the file at `path`, creating the file if it does
/// not exist: every process that opens the same file shares one limit, exactly as threads
/// sharing one handle do. Put the file on a tmpfs such as `/dev/shm` (any file system
/// works). A new file is built whole and then given its name, mode 0600, so no process
/// ever sees a half-written one, and processes racing to create it all end on one table.
/// A table written during an earlier boot of the host is reset when opened (its times
/// are `CLOCK_MONOTONIC`'s, which restarts at boot). The handle is an ordinary
/// `rate_limiter`: every `rate_limiter_*` function works on it, and
/// `rate_limiter_set_config` changes the rule in the file, for every process.
///
/// A file that exists must hold the rule `config` gives: the one it was made with, or the
/// last one any process set in it. To open it with another rule, replacing the file's
/// (a rolling restart with a new limit), use `rate_limiter_open_replacing`;
/// `rate_describe_file` says what a refused file holds.
///
/// Ownership: on RATE_OK, `*out` receives a new handle that the caller owns and must
/// release with `rate_limiter_free`, which unmaps the file and leaves it in place; on
/// error `*out` is left untouched. `path` is only read during the call.
///
/// Thread-safety: safe to call from any thread and any process at any time, on the same
/// path too: racing creators all end on one file.
///
/// NULL: `path`, `config` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, RATE_E_INVALID_CONFIG (as `rate_limiter_new`),
/// RATE_E_INCOMPATIBLE (the file is not a librate limiter holding this rule; it is left
/// untouched, and `rate_describe_file` says what it holds), or RATE_E_IO (the operating
/// system refused to create, open or map the file; `errno` says why).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `config` is NULL or points to a readable
/// `rate_config`; `out` is NULL or points to a writable `rate_limiter *`.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_open(
    path: *const c_char,
    config: *const rate_config,
    out: *mut *mut rate_limiter,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        open_with(path, config, out, |path, config| {
            Limiter::open(path, config)
        })
    }
}

/// Opens the limiter in the file at `path` as `rate_limiter_open` does, but a file that
/// holds another rule is given `config` instead: the change is made in the file exactly as
/// `rate_limiter_set_config` makes it (now, on `rate_now_ns`'s clock, the state carried
/// over), and every process attached decides under `config` from its next decision. The
/// way to roll out a new limit: restart the processes sharing the file with the new rule,
/// one by one, and none of them is refused. A file that holds `config` already is opened
/// as it is; a new file is made with it. See docs/shared.md, changing the rule.
///
/// Ownership: as `rate_limiter_open`.
///
/// Thread-safety: as `rate_limiter_open`. Changes made in one file are serialized: of
/// openers racing with different rules, the last to change it wins.
///
/// NULL: `path`, `config` or `out` NULL is RATE_E_NULL.
///
/// Returns as `rate_limiter_open`, and RATE_E_INVALID_CONFIG when the file's rule cannot
/// be carried over to `config` (another algorithm, a sliding log's rule: see
/// `rate_limiter_set_config_at`), the file then unchanged; RATE_E_INCOMPATIBLE only for a
/// file that is no librate limiter this librate reads, or one whose state is of another
/// size than `config`'s (a sliding log's grows with its limit).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `config` is NULL or points to a readable
/// `rate_config`; `out` is NULL or points to a writable `rate_limiter *`.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_open_replacing(
    path: *const c_char,
    config: *const rate_config,
    out: *mut *mut rate_limiter,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        open_with(path, config, out, |path, config| {
            Limiter::open_replacing(path, config)
        })
    }
}

/// The body of `rate_limiter_open` and `rate_limiter_open_replacing`, which open by `open`.
///
/// # Safety
/// As theirs.
unsafe fn open_with(
    path: *const c_char,
    config: *const rate_config,
    out: *mut *mut rate_limiter,
    open: fn(&Path, &Config) -> Result<Limiter, OpenError>,
) -> i32 {
    boundary(|| {
        // SAFETY: passed on from this function's contract.
        unsafe {
            construct_at(path, config, out, |path, config| {
                open(path, config).map(|limiter| rate_limiter { limiter })
            })
        }
    })
}

/// Frees a limiter made by `rate_limiter_new`, `rate_limiter_open` or
/// `rate_limiter_open_replacing`.
///
/// Ownership: takes back the handle; it must not be used afterwards.
///
/// Thread-safety: must not race with any other call on the same handle.
///
/// NULL: a no-op.
///
/// # Safety
/// `limiter` is NULL or a live handle from `rate_limiter_new`, `rate_limiter_open` or
/// `rate_limiter_open_replacing`, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_free(limiter: *mut rate_limiter) {
    boundary(|| {
        if !limiter.is_null() {
            // SAFETY: non-NULL handles come from `Box::into_raw` in `rate_limiter_new`, and
            // the caller gives this one back exactly once.
            drop(unsafe { Box::from_raw(limiter) });
        }
    })
}

/// Borrows the limiter behind a handle.
///
/// # Safety
/// `limiter` is NULL or a live handle from `rate_limiter_new`.
pub(super) unsafe fn limiter_ref<'a>(limiter: *const rate_limiter) -> Option<&'a Limiter> {
    // SAFETY: per this function's contract; `as_ref` checks NULL.
    unsafe { limiter.as_ref() }.map(|handle| &handle.limiter)
}

/// Acquires `n` units now (CLOCK_MONOTONIC, see `rate_now_ns`). `n == 0` is a query:
/// admitted, changes nothing, reports the current state.
///
/// When `out` is NULL only the outcome is needed, and librate decides on the cheap coarse
/// clock whenever its bounds settle the outcome exactly, reading the precise clock
/// otherwise: pass NULL on hot paths that do not use the decision's fields.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `limiter` NULL is RATE_E_NULL; `out` may be NULL.
///
/// Returns RATE_OK (admitted), RATE_LIMITED (denied), RATE_E_NULL, or
/// RATE_E_INSUFFICIENT_CAPACITY (`n` > limit; `out` untouched).
///
/// # Safety
/// `limiter` is NULL or a live handle; `out` is NULL or points to a writable `rate_decision`.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_acquire(
    limiter: *mut rate_limiter,
    n: u64,
    out: *mut rate_decision,
) -> i32 {
    // A dispatch that saves no registers, to bodies reached by a jump: a function's
    // registers are saved on entry, before its first branch. The bodies are `extern "C"`,
    // which cannot unwind, so a call to them needs no landing pad here and can be a jump.
    // The common decision (an idle GCRA bucket's, the outcome alone) is made in a body
    // that calls nothing, `acquire_in_place`; where the clock cannot read inline it
    // never decides, and is skipped.
    if out.is_null() {
        // SAFETY (both): the caller's promise on `limiter`.
        if librate::clock_reads_inline() {
            return unsafe { acquire_in_place(limiter, n) };
        }
        return unsafe { acquire_outcome(limiter, n) };
    }
    // SAFETY: the caller's promises; `out` is non-NULL.
    unsafe { acquire_reported(limiter, n, out) }
}

/// `rate_limiter_acquire` with `out` NULL on a clock that reads inline: the common
/// decision in place, else [`acquire_outcome`].
///
/// # Safety
/// `limiter` is NULL or a live handle.
#[inline(never)]
unsafe extern "C" fn acquire_in_place(limiter: *mut rate_limiter, n: u64) -> i32 {
    let status = boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let limiter = unsafe { limiter_ref(limiter) }?;
        let admitted = limiter.try_acquire_inline(n)?;
        Some(if admitted { RATE_OK } else { RATE_LIMITED })
    });
    // SAFETY: the caller's promise on `limiter`.
    status.unwrap_or_else(|| unsafe { acquire_outcome(limiter, n) })
}

/// `rate_limiter_acquire` with a decision to write.
///
/// # Safety
/// `limiter` is NULL or a live handle; `out` points to a writable `rate_decision`.
#[inline(never)]
unsafe extern "C" fn acquire_reported(
    limiter: *mut rate_limiter,
    n: u64,
    out: *mut rate_decision,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let Some(limiter) = (unsafe { limiter_ref(limiter) }) else {
            return RATE_E_NULL;
        };
        // SAFETY: the caller promised `out` is writable.
        unsafe { report(limiter.acquire(n), out) }
    })
}

/// `rate_limiter_acquire` with `out` NULL: the hot path of a caller that needs the
/// outcome alone.
///
/// # Safety
/// `limiter` is NULL or a live handle.
#[inline(never)]
unsafe extern "C" fn acquire_outcome(limiter: *mut rate_limiter, n: u64) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        match unsafe { limiter_ref(limiter) } {
            Some(limiter) => outcome_status(limiter.try_acquire(n)),
            None => RATE_E_NULL,
        }
    })
}

/// Acquires `n` units at `now_ns` (nanoseconds on the caller's timeline; use one timeline
/// per limiter). An earlier `now_ns` than one already seen never admits more than the
/// latest time seen would.
///
/// When `out` is NULL only the outcome is needed, and librate skips the work of the
/// decision's fields: pass NULL on hot paths that do not use them.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `limiter` NULL is RATE_E_NULL; `out` may be NULL.
///
/// Returns RATE_OK, RATE_LIMITED, RATE_E_NULL, or RATE_E_INSUFFICIENT_CAPACITY.
///
/// # Safety
/// `limiter` is NULL or a live handle; `out` is NULL or points to a writable `rate_decision`.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_acquire_at(
    limiter: *mut rate_limiter,
    n: u64,
    now_ns: u64,
    out: *mut rate_decision,
) -> i32 {
    // As `rate_limiter_acquire`: a dispatch that saves no registers, to bodies reached by
    // a jump, so that the outcome alone pays for no decision's frame.
    if out.is_null() {
        // SAFETY: the caller's promise on `limiter`.
        return unsafe { acquire_at_outcome(limiter, n, now_ns) };
    }
    // SAFETY: the caller's promises; `out` is non-NULL.
    unsafe { acquire_at_reported(limiter, n, now_ns, out) }
}

/// `rate_limiter_acquire_at` with `out` NULL: the outcome alone.
///
/// # Safety
/// `limiter` is NULL or a live handle.
#[inline(never)]
unsafe extern "C" fn acquire_at_outcome(limiter: *mut rate_limiter, n: u64, now_ns: u64) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        match unsafe { limiter_ref(limiter) } {
            Some(limiter) => outcome_status(limiter.try_acquire_at(n, Instant::from_nanos(now_ns))),
            None => RATE_E_NULL,
        }
    })
}

/// `rate_limiter_acquire_at` with a decision to write.
///
/// # Safety
/// `limiter` is NULL or a live handle; `out` points to a writable `rate_decision`.
#[inline(never)]
unsafe extern "C" fn acquire_at_reported(
    limiter: *mut rate_limiter,
    n: u64,
    now_ns: u64,
    out: *mut rate_decision,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let Some(limiter) = (unsafe { limiter_ref(limiter) }) else {
            return RATE_E_NULL;
        };
        // SAFETY: the caller promised `out` is writable.
        unsafe { report(limiter.acquire_at(n, Instant::from_nanos(now_ns)), out) }
    })
}

/// Reserves `n` units at `now_ns`: the leaky bucket as a queue (traffic shaper). Admitted
/// iff the caller would wait at most `max_wait_ns` before acting; `out->wait_ns` says how
/// long. With `max_wait_ns == 0` it is exactly `rate_limiter_acquire_at`. A denied
/// reserve's `retry_after_ns` is for the same reserve with the same `max_wait_ns`.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `limiter` NULL is RATE_E_NULL; `out` may be NULL.
///
/// Returns RATE_OK, RATE_LIMITED, RATE_E_NULL, RATE_E_INSUFFICIENT_CAPACITY (`n` > burst),
/// or RATE_E_UNSUPPORTED (window algorithms have no reserve, whatever `n`; `out`
/// untouched).
///
/// # Safety
/// `limiter` is NULL or a live handle; `out` is NULL or points to a writable `rate_decision`.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_reserve_at(
    limiter: *mut rate_limiter,
    n: u64,
    now_ns: u64,
    max_wait_ns: u64,
    out: *mut rate_decision,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let Some(limiter) = (unsafe { limiter_ref(limiter) }) else {
            return RATE_E_NULL;
        };
        // SAFETY: the caller passes NULL or a writable decision.
        unsafe {
            report(
                limiter.reserve_at(
                    n,
                    Instant::from_nanos(now_ns),
                    Duration::from_nanos(max_wait_ns),
                ),
                out,
            )
        }
    })
}

/// Writes the rule the limiter enforces now to `out`: the configuration it was made with,
/// or the last `rate_limiter_set_config` gave. For a limiter opened from a file, the
/// file's rule in force, which a change by any process attached may have replaced (then
/// this call is that process's next decision, as far as following the file goes).
///
/// Ownership: `out` is the caller's; nothing is kept.
///
/// Thread-safety: safe to call concurrently on one handle, with any other call.
///
/// NULL: `limiter` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK or RATE_E_NULL.
///
/// # Safety
/// `limiter` is NULL or a live handle; `out` is NULL or points to a writable `rate_config`.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_get_config(
    limiter: *const rate_limiter,
    out: *mut rate_config,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle, and NULL or a writable config;
        // `as_mut` checks NULL.
        let (Some(limiter), Some(out)) = (unsafe { limiter_ref(limiter) }, unsafe { out.as_mut() })
        else {
            return RATE_E_NULL;
        };
        *out = rate_config::from(limiter.config());
        RATE_OK
    })
}

/// Replaces the rule the limiter enforces, now (`rate_now_ns`), keeping what it has
/// consumed: as `rate_limiter_set_config_at`.
///
/// Thread-safety: safe to call concurrently on one handle, with any other call.
///
/// NULL: `limiter` or `config` NULL is RATE_E_NULL.
///
/// Returns as `rate_limiter_set_config_at`.
///
/// # Safety
/// `limiter` is NULL or a live handle; `config` is NULL or points to a readable
/// `rate_config`.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_set_config(
    limiter: *mut rate_limiter,
    config: *const rate_config,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe { rate_limiter_set_config_at(limiter, config, librate::now_ns()) }
}

/// Replaces the rule the limiter enforces at `now_ns` (a customer changes plan, an
/// operator tightens a limit), carrying its state over: GCRA keeps its tokens (they then
/// refill at the new rate, capped at the new burst); the fixed window and the sliding
/// window counter keep their counts, moved to the new period's windows holding `now_ns`
/// (the window before it too, for the sliding window counter), capped at the new limit;
/// a period of RATE_FOREVER keeps its algorithm's rule (a bucket's whole tokens left, a
/// window's count used). docs/live-changes.md has the rules in full.
///
/// A shared limiter (`rate_limiter_open`) changes in its file, once, for every process:
/// each process attached decides under the new rule from its next decision, on the state
/// carried over as above, and later openers must give the new rule (or use
/// `rate_limiter_open_replacing`). docs/shared.md, changing the rule, has the details.
///
/// Thread-safety: safe to call concurrently on one handle, with any other call. Each
/// acquire racing the change is decided wholly under the old rule (and carried over) or
/// wholly under the new one. The old rule's state is freed once no thread can still be
/// deciding on it, so a limiter holds a few rules at most, however many changes it sees.
/// Changes are serialized, in a shared file across processes too.
///
/// NULL: `limiter` or `config` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, or RATE_E_INVALID_CONFIG (a configuration
/// `rate_limiter_new` rejects, another algorithm, or a sliding log's rule, whose entries
/// are not carried over). On error nothing changes.
///
/// # Safety
/// `limiter` is NULL or a live handle; `config` is NULL or points to a readable
/// `rate_config`.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_set_config_at(
    limiter: *mut rate_limiter,
    config: *const rate_config,
    now_ns: u64,
) -> i32 {
    // SAFETY: the caller passes NULL or a live handle, and NULL or a readable config.
    unsafe {
        set_config_of(limiter_ref(limiter), config, |limiter, config| {
            limiter.set_config_at(config, Instant::from_nanos(now_ns))
        })
    }
}

/// Resets the limiter, as when a customer's limit is lifted: it then decides as a new
/// limiter of its configuration would (full), from the latest time it has seen on. GCRA
/// and the fixed window are new at any time; the sliding window counter and the log judge
/// a request from before that latest time as made at it, as every call does. It reads no
/// clock. A shared limiter (`rate_limiter_open`) is reset for every process.
///
/// Thread-safety: safe to call concurrently on one handle. Each acquire racing the reset
/// is decided wholly before it (and forgotten by it) or wholly after it: together they
/// never admit more than some order of them would. In two rare races an acquire may be
/// denied where that order would admit it: on the log, while the resetting thread is
/// stalled between the reset's two writes; on the sliding window counter, the first acquire
/// of a new window racing the reset, which may record the old window's count as it stood
/// before the reset, to weigh in the new window.
///
/// NULL: `limiter` NULL is RATE_E_NULL.
///
/// Returns RATE_OK or RATE_E_NULL.
///
/// # Safety
/// `limiter` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_reset(limiter: *mut rate_limiter) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let Some(limiter) = (unsafe { limiter_ref(limiter) }) else {
            return RATE_E_NULL;
        };
        limiter.reset();
        RATE_OK
    })
}
