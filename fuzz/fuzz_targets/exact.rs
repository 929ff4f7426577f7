//! One limiter of a configuration drawn near the bounds of docs/decision.md's table, and a
//! sequence of acquires, reserves and resets through the C functions at times anywhere on
//! the `u64` timeline, every decision compared field for field with the closed-form
//! reference model (`tests/common/exact.rs`), which owes nothing to the library's
//! arithmetic. Any difference is a crash, and so is a panic.

#![no_main]
#![deny(missing_docs)]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use librate_fuzz::exact::{valid, Exact, STORABLE};
use librate_fuzz::{algorithm, out_pointer, outcome, rust_config, status, trace, UNTOUCHED};
use rate::*;
use std::ptr;

fuzz_target!(|data: &[u8]| {
    // Running out of input ends a sequence early: a shorter sequence, never a finding.
    let _ = limiter(&mut Unstructured::new(data));
});

/// A value around `center`: exactly it, or up to 255 either side (saturating).
fn near(input: &mut Unstructured<'_>, center: u64) -> Result<u64> {
    let offset = u64::from(input.arbitrary::<u8>()?);
    Ok(if input.arbitrary()? {
        center.saturating_add(offset)
    } else {
        center.saturating_sub(offset)
    })
}

/// Any value, of any magnitude.
fn any(input: &mut Unstructured<'_>) -> Result<u64> {
    Ok(input.arbitrary::<u64>()? >> input.int_in_range(0..=63)?)
}

/// A configuration, often next to a bound: L near P or P/4, B·T near 2⁶⁴ − 257, P near
/// `u64::MAX` or FOREVER. It may be invalid: the constructor must then say so.
fn config(input: &mut Unstructured<'_>) -> Result<rate_config> {
    let algorithm = algorithm(input)?;
    let period_ns = match input.int_in_range(0u8..=5)? {
        0 => input.int_in_range(1..=64)?,
        1 => near(input, u64::MAX)?,
        2 => {
            let power = 1 << input.int_in_range(1..=63)?;
            near(input, power)?
        }
        _ => any(input)?,
    };
    let limit = match input.int_in_range(0u8..=5)? {
        0 => input.int_in_range(1..=8)?,
        1 => near(input, period_ns)?,
        2 => near(input, period_ns / 4)?,
        3 => {
            let share = period_ns / input.int_in_range(1..=255)?;
            near(input, share)?
        }
        _ => any(input)?,
    };
    // The model logs every unit: a log's limit stays short unless it never refills.
    let limit = if algorithm == RATE_SLIDING_LOG && period_ns != RATE_FOREVER {
        limit.min(1 << 12)
    } else {
        limit
    };
    let interval = (period_ns / limit.max(1)).max(1);
    let burst = match input.int_in_range(0u8..=4)? {
        0 => 0,
        1 => input.int_in_range(1..=8)?,
        2 | 3 => near(input, STORABLE as u64 / interval)?,
        _ => any(input)?,
    };
    Ok(rate_config {
        algorithm,
        limit,
        period_ns,
        burst,
    })
}

/// The next time: the same, a step either way, a window's edge, near 0 or the end of the
/// timeline, the last instants a full GCRA bucket fits, or anywhere.
fn next_time(
    input: &mut Unstructured<'_>,
    now: u64,
    config: &rate_config,
    limit: u64,
) -> Result<u64> {
    let p = config.period_ns;
    Ok(match input.int_in_range(0u8..=8)? {
        0 => now,
        1 => now.saturating_add(input.int_in_range(0..=p.saturating_mul(2))?),
        2 => now.saturating_sub(input.int_in_range(0..=p.saturating_mul(2))?),
        3 => near(input, now)?,
        4 => {
            let edge = (now / p)
                .saturating_add(input.int_in_range(0..=2)?)
                .saturating_mul(p);
            near(input, edge)?
        }
        5 => near(input, 0)?,
        6 => near(input, u64::MAX)?,
        7 => {
            let tau = (p / config.limit).saturating_mul(limit);
            near(input, (STORABLE as u64).saturating_sub(tau))?
        }
        _ => input.arbitrary()?,
    })
}

fn limiter(input: &mut Unstructured<'_>) -> Result<()> {
    let config = config(input)?;
    let mut handle = ptr::null_mut();
    // SAFETY: `config` and `handle` are live locals.
    let created = unsafe { rate_limiter_new(&config, &mut handle) };
    let rust = rust_config(&config);
    assert_eq!(
        created == RATE_OK,
        valid(&rust),
        "{config:?}: status {created}"
    );
    if created != RATE_OK {
        assert_eq!(created, RATE_E_INVALID_CONFIG);
        return Ok(());
    }
    trace!("limiter {config:?}");
    let mut model = Exact::new(&rust);
    let limit = model.limit();
    let mut now = input.arbitrary()?;
    let mut step = 0;
    let result = (|| {
        while !input.is_empty() {
            step += 1;
            now = next_time(input, now, &config, limit)?;
            let n = match input.int_in_range(0u8..=4)? {
                0 => 0,
                1 => near(input, limit)?,
                2 => input.int_in_range(1..=limit.min(8))?,
                _ => input.int_in_range(0..=limit)?,
            };
            if input.int_in_range(0u8..=15)? == 0 {
                // SAFETY: a live handle.
                assert_eq!(unsafe { rate_limiter_reset(handle) }, RATE_OK);
                trace!("reset");
                model.reset();
            }
            let written = input.arbitrary::<bool>()?;
            let mut out = UNTOUCHED;
            let out_ptr = out_pointer(written, &mut out);
            let (got, max_wait) = match input.int_in_range(0u8..=4)? {
                0 => (
                    // SAFETY: a live handle; `out_ptr` NULL or a live local.
                    unsafe { rate_limiter_acquire_at(handle, n, now, out_ptr) },
                    None,
                ),
                choice => {
                    let max_wait = match choice {
                        1 => 0,
                        2 => near(input, u64::MAX)?,
                        _ => any(input)?,
                    };
                    (
                        // SAFETY: as above.
                        unsafe { rate_limiter_reserve_at(handle, n, now, max_wait, out_ptr) },
                        Some(max_wait),
                    )
                }
            };
            let want = model.decide(now, n, max_wait);
            trace!("({n}, {now}, {max_wait:?}) = {got} {out:?}");
            assert_eq!(got, status(&want), "step {step}: model {want:?}");
            match want {
                Ok(_) if written => assert_eq!(outcome(got, &out), want, "step {step}"),
                _ => assert_eq!(out, UNTOUCHED, "step {step}: out written"),
            }
        }
        Ok(())
    })();
    // SAFETY: made above, freed once.
    unsafe { rate_limiter_free(handle) };
    result
}
