//! A shared table's file (docs/shared.md) with a valid header and arbitrary state words, then
//! arbitrary calls on it: every call returns one of its documented statuses, never
//! panics (which the C boundary would report as RATE_E_INTERNAL), hangs (libFuzzer's
//! -timeout) or reads out of bounds (a bounds check would panic). A limiter's and a keyed
//! table's state words include their rule block and pins' registry, whose hostile words
//! may leave no rule in force: the opener and the calls may then say RATE_E_INCOMPATIBLE
//! (or RATE_E_IO, RATE_E_INVALID_CONFIG for a change in flight that cannot be finished).
//! `shared_rules` aims its words at those fields, and changes the rule, through the Rust
//! API.
//!
//! Tables are created once per configuration and kept mapped; each input first restores
//! the state as created, then writes its words over it through the file (the mapping is
//! the file's page cache), so most inputs cost no open. One input in 64 opens the
//! written file anew instead, through the path that attaches to an existing table.

#![no_main]
#![deny(missing_docs)]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use librate_fuzz::{config, new_path, next_time};
use rate::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::CString;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::ptr;

/// Header bytes of a table file: the state begins after them.
const HEADER_BYTES: u64 = 16 * 8;

/// A table of one configuration, kept open.
struct Table {
    handle: Handle,
    /// The file, unlinked once mapped: it lives as long as the mapping and this.
    file: File,
    /// The state as created.
    pristine: Vec<u8>,
}

#[derive(Clone, Copy)]
enum Handle {
    Limiter(*mut rate_limiter),
    Keyed(*mut rate_keyed),
}

/// What tells tables apart: keyed or not, the configuration's words, the capacity.
type TableId = (bool, [u64; 4], u64);

thread_local! {
    static TABLES: RefCell<HashMap<TableId, Table>> = RefCell::new(HashMap::new());
}

fuzz_target!(|data: &[u8]| {
    let mut input = Unstructured::new(data);
    let _ = run(&mut input);
});

/// Opens (or creates) the table at `path`; `None` if the configuration is invalid, or the
/// file (written by `run`) holds no rule in force.
fn open(path: &Path, keyed: bool, config: &rate_config, capacity: u64) -> Option<Handle> {
    let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
    if keyed {
        let mut handle = ptr::null_mut();
        // SAFETY: live locals, a NUL-terminated path.
        let status = unsafe { rate_keyed_open(c_path.as_ptr(), config, capacity, &mut handle) };
        assert!(
            matches!(
                status,
                RATE_OK | RATE_E_INVALID_CONFIG | RATE_E_INCOMPATIBLE
            ),
            "open: {status}"
        );
        (status == RATE_OK).then_some(Handle::Keyed(handle))
    } else {
        let mut handle = ptr::null_mut();
        // SAFETY: as above.
        let status = unsafe { rate_limiter_open(c_path.as_ptr(), config, &mut handle) };
        assert!(
            matches!(
                status,
                RATE_OK | RATE_E_INVALID_CONFIG | RATE_E_INCOMPATIBLE
            ),
            "open: {status}"
        );
        (status == RATE_OK).then_some(Handle::Limiter(handle))
    }
}

fn free(handle: Handle) {
    match handle {
        // SAFETY: a handle of `open`, freed once.
        Handle::Limiter(limiter) => unsafe { rate_limiter_free(limiter) },
        // SAFETY: as above.
        Handle::Keyed(keyed) => unsafe { rate_keyed_free(keyed) },
    }
}

/// A new table of this configuration: its handle, its file and its state as created.
fn create(keyed: bool, config: &rate_config, capacity: u64) -> Option<Table> {
    let path = new_path("librate-fuzz");
    let handle = open(&path, keyed, config, capacity)?;
    let file = File::options().read(true).write(true).open(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    Some(Table {
        handle,
        file,
        pristine: bytes[HEADER_BYTES as usize..].to_vec(),
    })
}

/// Writes the input's words over `pristine`: (word index, value) pairs, the values any
/// bytes, near a boundary, or a state word plus or minus a little.
fn corrupt(input: &mut Unstructured<'_>, pristine: &[u8]) -> Result<Vec<u8>> {
    let mut state = pristine.to_vec();
    let words = state.len() / 8;
    for _ in 0..input.int_in_range(0..=32)? {
        let at = 8 * input.int_in_range(0..=words - 1)?;
        let old = u64::from_le_bytes(state[at..at + 8].try_into().unwrap());
        let value = match input.int_in_range(0u8..=3)? {
            0 => input.arbitrary()?,
            1 => u64::MAX - input.int_in_range(0..=300)?,
            2 => input.int_in_range(0..=300)?,
            _ => old
                .wrapping_add(input.int_in_range(0..=64)?)
                .wrapping_sub(32),
        };
        state[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }
    Ok(state)
}

fn run(input: &mut Unstructured<'_>) -> Result<()> {
    let keyed = input.arbitrary::<bool>()?;
    let config = config(input)?;
    let capacity = if keyed { input.int_in_range(1..=4)? } else { 0 };
    let reopen = input.int_in_range(0u8..=63)? == 0;
    let id = (
        keyed,
        [
            u64::from(config.algorithm),
            config.limit,
            config.period_ns,
            config.burst,
        ],
        capacity,
    );
    let table = TABLES.with(|tables| {
        let mut tables = tables.borrow_mut();
        if !tables.contains_key(&id) {
            if tables.len() >= 1024 {
                // Many configurations seen: start over rather than keep them all mapped.
                for (_, table) in tables.drain() {
                    free(table.handle);
                }
            }
            let table = create(keyed, &config, capacity)?;
            tables.insert(id, table);
        }
        let table = &tables[&id];
        Some((
            table.handle,
            table.file.try_clone().unwrap(),
            table.pristine.clone(),
        ))
    });
    let Some((cached, file, pristine)) = table else {
        return Ok(());
    };
    let state = corrupt(input, &pristine)?;
    let handle = if reopen {
        // The attach path: a file of this header and these state words, opened anew.
        let path = new_path("librate-fuzz");
        let mut bytes = vec![0; HEADER_BYTES as usize];
        file.read_exact_at(&mut bytes, 0).unwrap();
        bytes.extend_from_slice(&state);
        std::fs::write(&path, &bytes).unwrap();
        let handle = open(&path, keyed, &config, capacity);
        std::fs::remove_file(&path).unwrap();
        let Some(handle) = handle else {
            return Ok(());
        };
        handle
    } else {
        file.write_all_at(&state, HEADER_BYTES).unwrap();
        cached
    };
    let result = calls(input, handle, config.period_ns);
    if reopen {
        free(handle);
    }
    result
}

/// Any key: a few bytes.
fn any_key(input: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    let len = input.int_in_range(0..=9)?;
    Ok(input.bytes(len)?.to_vec())
}

fn calls(input: &mut Unstructured<'_>, handle: Handle, period_ns: u64) -> Result<()> {
    let mut now = input.arbitrary()?;
    while !input.is_empty() {
        now = next_time(input, now, period_ns)?;
        let n = match input.int_in_range(0u8..=3)? {
            0 => input.arbitrary()?,
            _ => input.int_in_range(0..=9)?,
        };
        let mut out = rate_decision::default();
        let operation = input.int_in_range(0u8..=7)?;
        let status = match handle {
            // SAFETY (each call): a live handle, live locals.
            Handle::Limiter(limiter) => match operation {
                0 => unsafe { rate_limiter_reset(limiter) },
                1 => unsafe { rate_limiter_acquire(limiter, n, &mut out) },
                2 | 3 => unsafe {
                    rate_limiter_reserve_at(limiter, n, now, input.arbitrary()?, &mut out)
                },
                _ => unsafe { rate_limiter_acquire_at(limiter, n, now, &mut out) },
            },
            Handle::Keyed(keyed) => {
                let key = any_key(input)?;
                match operation {
                    0 => unsafe { rate_keyed_reset(keyed, key.as_ptr(), key.len()) },
                    1 => unsafe { rate_keyed_acquire(keyed, key.as_ptr(), key.len(), n, &mut out) },
                    2 => unsafe {
                        rate_keyed_reserve_at(
                            keyed,
                            key.as_ptr(),
                            key.len(),
                            n,
                            now,
                            input.arbitrary()?,
                            &mut out,
                        )
                    },
                    3 => {
                        let mut stats = rate_keyed_stats::default();
                        unsafe { rate_keyed_read_stats_at(keyed, now, &mut stats) }
                    }
                    4 => {
                        let keys = [key.clone(), any_key(input)?, any_key(input)?];
                        let lens = keys.each_ref().map(Vec::len);
                        let pointers = keys.each_ref().map(|key| key.as_ptr());
                        let mut statuses = [i32::MIN; 3];
                        let status = unsafe {
                            rate_keyed_acquire_batch_at(
                                keyed,
                                pointers.as_ptr(),
                                lens.as_ptr(),
                                3,
                                n,
                                now,
                                statuses.as_mut_ptr(),
                            )
                        };
                        if status == RATE_OK {
                            assert!(
                                statuses.iter().all(|s| matches!(
                                    *s,
                                    RATE_OK
                                        | RATE_LIMITED
                                        | RATE_E_TABLE_FULL
                                        | RATE_E_INCOMPATIBLE
                                        | RATE_E_IO
                                        | RATE_E_INVALID_CONFIG
                                )),
                                "{statuses:?}"
                            );
                        }
                        status
                    }
                    _ => unsafe {
                        rate_keyed_acquire_at(keyed, key.as_ptr(), key.len(), n, now, &mut out)
                    },
                }
            }
        };
        assert!(
            matches!(
                status,
                RATE_OK
                    | RATE_LIMITED
                    | RATE_E_INSUFFICIENT_CAPACITY
                    | RATE_E_TABLE_FULL
                    | RATE_E_UNSUPPORTED
                    | RATE_E_INCOMPATIBLE
                    | RATE_E_IO
                    | RATE_E_INVALID_CONFIG
            ),
            "status {status}"
        );
    }
    Ok(())
}
