//! What the fuzz targets share: the reference models (the integration tests' own, by
//! path: `models` finds each field by search, `exact` in closed form), decoding of
//! configurations and times from fuzz input, and the C statuses of model outcomes.

#![deny(missing_docs)]

use c_decision::decision_of;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use librate::Decision;
use rate::{
    rate_config, rate_decision, RATE_E_INSUFFICIENT_CAPACITY, RATE_E_TABLE_FULL,
    RATE_E_UNSUPPORTED, RATE_FIXED_WINDOW, RATE_FOREVER, RATE_GCRA, RATE_LIMITED, RATE_OK,
    RATE_SLIDING_LOG, RATE_SLIDING_WINDOW,
};
use std::time::Duration;

#[path = "../../ffi/tests/common/c_decision.rs"]
#[allow(dead_code, unreachable_pub)]
pub mod c_decision;

#[path = "../../tests/common/refused.rs"]
#[allow(dead_code, unreachable_pub, missing_docs)]
mod refused;
pub use refused::{refused, Refused};

#[path = "../../tests/common/exact.rs"]
#[allow(dead_code, unreachable_pub, missing_docs)]
pub mod exact;

#[path = "../../tests/common/models.rs"]
#[allow(dead_code, unreachable_pub, missing_docs, clippy::result_unit_err)]
pub mod models;

/// Any of the four algorithms.
pub fn algorithm(input: &mut Unstructured<'_>) -> Result<u32> {
    Ok([
        RATE_GCRA,
        RATE_FIXED_WINDOW,
        RATE_SLIDING_WINDOW,
        RATE_SLIDING_LOG,
    ][usize::from(input.int_in_range(0u8..=3)?)])
}

/// Where a call writes its decision: `out`, or NULL when the caller asks for none.
pub fn out_pointer<T>(written: bool, out: &mut T) -> *mut T {
    if written {
        out
    } else {
        std::ptr::null_mut()
    }
}

/// A configuration the models can follow quickly: small limits mostly (so sequences reach
/// them), large ones sometimes (so products overflow), any period from 1 ns to the end of
/// the timeline, now and then the period that never ends (`Config::FOREVER`, a rule that
/// never refills), and GCRA bursts whose tolerance is at its bound. It may be invalid;
/// the targets then expect the constructors to say so.
pub fn config(input: &mut Unstructured<'_>) -> Result<rate_config> {
    let algorithm = algorithm(input)?;
    // The log model keeps every admitted unit's timestamp: keep its limit small.
    let most = if algorithm == RATE_SLIDING_LOG {
        16
    } else {
        1 << 40
    };
    let limit = match input.int_in_range(0u8..=3)? {
        0 => most.min(input.arbitrary::<u64>()?),
        _ => input.int_in_range(1..=8)?,
    };
    let period_ns = match input.int_in_range(0u8..=7)? {
        0 => input.arbitrary::<u64>()?,
        1 => limit.saturating_mul(input.int_in_range(1..=1000)?),
        2 => [1_000_000, 1_000_000_000, 60_000_000_000][usize::from(input.int_in_range(0u8..=2)?)],
        3 => RATE_FOREVER,
        _ => limit
            .saturating_mul(4)
            .saturating_add(input.int_in_range(0..=64)?),
    };
    let burst = match input.int_in_range(0u8..=4)? {
        0 => 0,
        1 => input.int_in_range(1..=8)?,
        2 => input.arbitrary::<u64>()?,
        // GCRA's tolerance B·T at or just past its bound, 2⁶⁴ − 257.
        3 => (models::END / period_ns.checked_div(limit).unwrap_or(1).max(1))
            .saturating_add(input.int_in_range(0..=2)?)
            .saturating_sub(input.int_in_range(0..=2)?),
        _ => input.int_in_range(0..=64)?,
    };
    Ok(rate_config {
        algorithm,
        limit,
        period_ns,
        burst,
    })
}

/// The next time of a sequence after `now`: the same, a little or a period or two later
/// or earlier, anywhere, or near the end of the timeline.
pub fn next_time(input: &mut Unstructured<'_>, now: u64, period_ns: u64) -> Result<u64> {
    let span = period_ns.saturating_mul(2);
    Ok(match input.int_in_range(0u8..=7)? {
        0 => now,
        1 => now.saturating_add(input.int_in_range(0..=255)?),
        2 | 3 => now.saturating_add(input.int_in_range(0..=span)?),
        4 => now.saturating_sub(input.int_in_range(0..=span)?),
        5 => now.saturating_sub(input.int_in_range(0..=255)?),
        6 => input.arbitrary()?,
        _ => u64::MAX - input.int_in_range(0..=period_ns)?,
    })
}

/// The C status of an outcome.
pub fn status(outcome: &std::result::Result<Decision, Refused>) -> i32 {
    match outcome {
        Ok(decision) if decision.allowed => RATE_OK,
        Ok(_) => RATE_LIMITED,
        Err(Refused::InsufficientCapacity) => RATE_E_INSUFFICIENT_CAPACITY,
        Err(Refused::TableFull) => RATE_E_TABLE_FULL,
        Err(Refused::Unsupported) => RATE_E_UNSUPPORTED,
    }
}

/// The outcome a C call reported: its status, and the decision it wrote.
pub fn outcome(status: i32, out: &rate_decision) -> std::result::Result<Decision, Refused> {
    match status {
        RATE_OK | RATE_LIMITED => Ok(decision_of(out)),
        RATE_E_INSUFFICIENT_CAPACITY => Err(Refused::InsufficientCapacity),
        RATE_E_TABLE_FULL => Err(Refused::TableFull),
        RATE_E_UNSUPPORTED => Err(Refused::Unsupported),
        other => panic!("status {other} from a call that never returns it"),
    }
}

/// Bytes no decision writes, to see that an error leaves `out` untouched.
pub const UNTOUCHED: rate_decision = rate_decision {
    allowed: 0xAA,
    limit: 0xAAAA,
    remaining: 0xAAAA,
    retry_after_ns: 0xAAAA,
    reset_after_ns: 0xAAAA,
    wait_ns: 0xAAAA,
};

/// The Rust configuration of a C one whose algorithm is known.
pub fn rust_config(config: &rate_config) -> librate::Config {
    let algorithm = match config.algorithm {
        RATE_GCRA => librate::Algorithm::Gcra,
        RATE_FIXED_WINDOW => librate::Algorithm::FixedWindow,
        RATE_SLIDING_WINDOW => librate::Algorithm::SlidingWindow,
        _ => librate::Algorithm::SlidingLog,
    };
    let period = Duration::from_nanos(config.period_ns);
    librate::Config::new(algorithm, config.limit, period).with_burst(config.burst)
}

/// Whether to print each call (set `LIBRATE_FUZZ_TRACE=1` to read a finding).
pub fn tracing() -> bool {
    static TRACING: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACING.get_or_init(|| std::env::var_os("LIBRATE_FUZZ_TRACE").is_some())
}

/// Prints a call of a sequence when tracing.
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => {
        if $crate::tracing() {
            eprintln!($($arg)*);
        }
    };
}

/// A new file name for this process, `prefix` then its pid and a counter: on a tmpfs
/// where there is one.
pub fn new_path(prefix: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    // Relaxed: only uniqueness matters, and fetch_add gives that in any order.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::path::Path::new("/dev/shm");
    let dir = if dir.is_dir() {
        dir.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let next = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{prefix}-{}-{next}", std::process::id()))
}
