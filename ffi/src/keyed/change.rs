//! Changing a keyed table's rule at run time, through the C ABI.

use super::super::{boundary, rate_config, set_config_of, RATE_E_NULL, RATE_OK};
use super::rate_keyed;
use librate::Instant;

/// Replaces the rule every key of the table follows, now (`rate_now_ns`), keeping what
/// each key has consumed: as `rate_keyed_set_config_at`.
///
/// Thread-safety: safe to call concurrently on one handle, with any other call.
///
/// NULL: `keyed` or `config` NULL is RATE_E_NULL.
///
/// Returns as `rate_keyed_set_config_at`.
///
/// # Safety
/// `keyed` is NULL or a live handle; `config` is NULL or points to a readable
/// `rate_config`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_set_config(
    keyed: *mut rate_keyed,
    config: *const rate_config,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe { rate_keyed_set_config_at(keyed, config, librate::now_ns()) }
}

/// Replaces the rule every key of the table follows at `now_ns`, carrying each key's state
/// over as `rate_limiter_set_config_at` does (GCRA keeps the tokens, the window counters
/// their counts, capped at the new burst or limit). A key whose state is fresh (it would
/// admit as much as a new key), before or after the carry-over, starts anew under the new
/// rule. docs/live-changes.md has the rules in full.
///
/// Thread-safety: safe to call concurrently on one handle, with any other call. The keys
/// move to the new rule one table slot after another: each acquire of a key racing the
/// change is decided wholly under the old rule (and carried over) or wholly under the new
/// one. Keys already in the table never wait for the change; a new key waits until every
/// key has moved. Changes are serialized. The change allocates a table of the same size
/// for the new rule and frees the old one once no thread can still be reading it, so a
/// table holds a few tables at most, however many changes it sees.
///
/// A table opened from a file (`rate_keyed_open`) changes in the file, once, for every
/// process attached, each from its next decision: the change moves the keys into the
/// file's next region before the new rule takes effect, and requests for keys it has
/// moved wait until then (docs/shared.md, changing the rule).
///
/// NULL: `keyed` or `config` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, RATE_E_INVALID_CONFIG (a configuration
/// `rate_keyed_new` rejects, another algorithm, a sliding log's rule, whose entries are
/// not carried over, or a new table that cannot be allocated); for a table in a file,
/// also RATE_E_IO with `errno` EBUSY (another process's change, a decision pinned by a
/// stopped process, or an insert of one, held it for seconds; after an insert did, the
/// change stays in flight and the next process that needs it finishes it) or
/// RATE_E_INCOMPATIBLE (the file's rule words hold no rule). Else on error nothing
/// changes.
///
/// # Safety
/// `keyed` is NULL or a live handle; `config` is NULL or points to a readable
/// `rate_config`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_set_config_at(
    keyed: *mut rate_keyed,
    config: *const rate_config,
    now_ns: u64,
) -> i32 {
    // SAFETY: the caller passes NULL or a live handle, and NULL or a readable config.
    let table = unsafe { keyed.as_ref() }.map(|keyed| &keyed.table);
    // SAFETY: passed on from this function's contract.
    unsafe {
        set_config_of(table, config, |table, config| {
            table.set_config_at(config, Instant::from_nanos(now_ns))
        })
    }
}

/// Writes the rule every key of the table follows now to `out`: the configuration it was
/// made with, or the last `rate_keyed_set_config` gave. For a table opened from a file,
/// the file's rule in force, which a change by any process attached may have replaced.
///
/// Ownership: `out` is the caller's; nothing is kept.
///
/// Thread-safety: safe to call concurrently on one handle, with any other call.
///
/// NULL: `keyed` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK or RATE_E_NULL.
///
/// # Safety
/// `keyed` is NULL or a live handle; `out` is NULL or points to a writable `rate_config`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_get_config(
    keyed: *const rate_keyed,
    out: *mut rate_config,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle, and NULL or a writable config;
        // `as_ref` and `as_mut` check NULL.
        let (Some(keyed), Some(out)) = (unsafe { keyed.as_ref() }, unsafe { out.as_mut() }) else {
            return RATE_E_NULL;
        };
        *out = rate_config::from(keyed.table.config());
        RATE_OK
    })
}
