//! A configuration and a sequence of calls through the C functions, every decision
//! compared field for field with the sequential reference models: a single limiter
//! (acquire, reserve, query, reset, times jumping both ways), a keyed table (arbitrary
//! keys, reserve, reset, both batch forms, statistics) or a policy of up to four rules.
//! Any difference is a crash, and so is a panic.

#![no_main]
#![deny(missing_docs)]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use librate_fuzz::models::{KeyedModel, PolicyModel, RuleModel};
use librate_fuzz::{
    config, next_time, out_pointer, outcome, rust_config, status, trace, UNTOUCHED,
};
use rate::*;
use std::ptr;

fuzz_target!(|data: &[u8]| {
    let mut input = Unstructured::new(data);
    // Running out of input ends a sequence early: a shorter sequence, never a finding.
    let _ = match input.int_in_range(0u8..=2) {
        Ok(0) => limiter(&mut input),
        Ok(1) => keyed(&mut input),
        _ => policy(&mut input),
    };
});

/// A cost: a query, within the limit, or past it.
fn cost(input: &mut Unstructured<'_>, limit: u64) -> Result<u64> {
    Ok(match input.int_in_range(0u8..=7)? {
        0 => 0,
        1 => limit.saturating_add(1),
        2 => input.arbitrary()?,
        _ => input.int_in_range(1..=limit)?,
    })
}

/// A reserve's patience: none, some, or forever.
fn max_wait(input: &mut Unstructured<'_>, period_ns: u64) -> Result<u64> {
    Ok(match input.int_in_range(0u8..=3)? {
        0 => 0,
        1 => u64::MAX - input.int_in_range(0..=2)?,
        _ => input.int_in_range(0..=period_ns.saturating_mul(3))?,
    })
}

/// Checks one C call's status and decision against the model's outcome. With `out` NULL
/// (`written` false) only the status is compared; on an error `out` must be untouched.
fn compare(
    step: usize,
    got: i32,
    out: &rate_decision,
    written: bool,
    want: &std::result::Result<librate::Decision, librate_fuzz::Refused>,
) {
    assert_eq!(got, status(want), "step {step}: status; model {want:?}");
    match want {
        Ok(decision) if written => assert_eq!(*out, rate_decision::from(*decision), "step {step}"),
        _ => assert_eq!(*out, UNTOUCHED, "step {step}: out written"),
    }
}

fn limiter(input: &mut Unstructured<'_>) -> Result<()> {
    let config = config(input)?;
    let mut handle = ptr::null_mut();
    // SAFETY: `config` and `handle` are live locals.
    let created = unsafe { rate_limiter_new(&config, &mut handle) };
    if created != RATE_OK {
        assert_eq!(created, RATE_E_INVALID_CONFIG);
        return Ok(());
    }
    trace!("limiter {config:?}");
    let mut model = RuleModel::new(&rust_config(&config));
    let limit = model.limit();
    let mut now = input.arbitrary()?;
    let mut step = 0;
    let result = (|| {
        while !input.is_empty() {
            step += 1;
            now = next_time(input, now, config.period_ns)?;
            let n = cost(input, limit)?;
            let written = input.arbitrary::<bool>()?;
            let mut out = UNTOUCHED;
            let out_ptr = out_pointer(written, &mut out);
            match input.int_in_range(0u8..=5)? {
                0 => {
                    // SAFETY: a live handle.
                    assert_eq!(unsafe { rate_limiter_reset(handle) }, RATE_OK);
                    trace!("reset");
                    model.reset(&rust_config(&config));
                }
                1 | 2 => {
                    let patience = max_wait(input, config.period_ns)?;
                    // SAFETY: a live handle; `out_ptr` NULL or a live local.
                    let got = unsafe { rate_limiter_reserve_at(handle, n, now, patience, out_ptr) };
                    let want = model.decide(now, n, Some(patience));
                    trace!("reserve_at({n}, {now}, {patience}) = {got} {out:?}");
                    compare(step, got, &out, written, &want);
                }
                _ => {
                    // SAFETY: as above.
                    let got = unsafe { rate_limiter_acquire_at(handle, n, now, out_ptr) };
                    let want = model.decide(now, n, None);
                    trace!("acquire_at({n}, {now}) = {got} {out:?}");
                    compare(step, got, &out, written, &want);
                }
            }
        }
        Ok(())
    })();
    // SAFETY: made above, freed once.
    unsafe { rate_limiter_free(handle) };
    result
}

/// A key: one of a few (the empty key and one with a NUL among them), or any bytes.
fn key(input: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    const FEW: [&[u8]; 5] = [b"", b"a", b"a\0", b"b", b"\0"];
    Ok(match input.int_in_range(0u8..=7)? {
        index @ 0..=4 => FEW[usize::from(index)].to_vec(),
        _ => {
            let len = input.int_in_range(0..=12)?;
            input.bytes(len)?.to_vec()
        }
    })
}

fn keyed(input: &mut Unstructured<'_>) -> Result<()> {
    let config = config(input)?;
    let capacity = input.int_in_range(1..=4)?;
    let mut handle = ptr::null_mut();
    // SAFETY: `config` and `handle` are live locals.
    let created = unsafe { rate_keyed_new(&config, capacity, &mut handle) };
    if created != RATE_OK {
        assert_eq!(created, RATE_E_INVALID_CONFIG);
        return Ok(());
    }
    trace!("keyed {config:?}, capacity {capacity}");
    let mut model = KeyedModel::new(&rust_config(&config), capacity);
    let limit = RuleModel::new(&rust_config(&config)).limit();
    let mut now = input.arbitrary()?;
    let mut step = 0;
    let same = |a: &librate::Decision, b: &librate::Decision| a == b;
    let same_outcome = |a: &librate::Decision, b: &librate::Decision| a.allowed == b.allowed;
    let result = (|| {
        while !input.is_empty() {
            step += 1;
            now = next_time(input, now, config.period_ns)?;
            let n = cost(input, limit)?;
            match input.int_in_range(0u8..=7)? {
                0 => {
                    let key = key(input)?;
                    // SAFETY: a live handle; `key` points to `key.len()` bytes.
                    assert_eq!(
                        unsafe { rate_keyed_reset(handle, key.as_ptr(), key.len()) },
                        RATE_OK
                    );
                    model.reset(&key);
                    trace!("reset({key:?})");
                }
                1 => {
                    let mut stats = rate_keyed_stats::default();
                    // SAFETY: a live handle and a live local.
                    assert_eq!(
                        unsafe { rate_keyed_read_stats_at(handle, now, &mut stats) },
                        RATE_OK
                    );
                    assert_eq!((stats.capacity, stats.max_keys), (capacity, 2 * capacity));
                    assert!(stats.live_keys <= stats.max_keys, "step {step}: {stats:?}");
                }
                2 | 3 => {
                    let keys = (0..input.int_in_range(0..=20)?)
                        .map(|_| key(input))
                        .collect::<Result<Vec<_>>>()?;
                    let mut statuses = vec![i32::MIN; keys.len()];
                    let lens: Vec<usize> = keys.iter().map(Vec::len).collect();
                    let got = if input.arbitrary()? {
                        let pointers: Vec<*const u8> =
                            keys.iter().map(|key| key.as_ptr()).collect();
                        // SAFETY: every array holds `keys.len()` elements, each key its length.
                        unsafe {
                            rate_keyed_acquire_batch_at(
                                handle,
                                pointers.as_ptr(),
                                lens.as_ptr(),
                                keys.len(),
                                n,
                                now,
                                statuses.as_mut_ptr(),
                            )
                        }
                    } else {
                        let packed = keys.concat();
                        // SAFETY: `packed` holds the sum of `lens`; the others `keys.len()`.
                        unsafe {
                            rate_keyed_acquire_packed_at(
                                handle,
                                packed.as_ptr(),
                                lens.as_ptr(),
                                keys.len(),
                                n,
                                now,
                                statuses.as_mut_ptr(),
                            )
                        }
                    };
                    trace!("batch_at({keys:?}, {n}, {now}) = {got} {statuses:?}");
                    if n > limit {
                        assert_eq!(got, RATE_E_INSUFFICIENT_CAPACITY, "step {step}");
                        assert!(
                            statuses.iter().all(|&s| s == i32::MIN),
                            "step {step}: statuses written"
                        );
                        continue;
                    }
                    assert_eq!(got, RATE_OK, "step {step}");
                    for (i, key) in keys.iter().enumerate() {
                        let decided = rate_decision {
                            allowed: u8::from(statuses[i] == RATE_OK),
                            ..rate_decision::default()
                        };
                        let got = outcome(statuses[i], &decided);
                        if let Err(why) = model.check(key, now, n, None, got, same_outcome) {
                            panic!("step {step}, batch key {i} {key:?}: {why}");
                        }
                    }
                }
                operation => {
                    let key = key(input)?;
                    let written = input.arbitrary::<bool>()?;
                    let mut out = UNTOUCHED;
                    let out_ptr = out_pointer(written, &mut out);
                    let (got, patience) = if operation == 4 {
                        let patience = max_wait(input, config.period_ns)?;
                        // SAFETY: a live handle; `key` its length; `out_ptr` NULL or a local.
                        (
                            unsafe {
                                rate_keyed_reserve_at(
                                    handle,
                                    key.as_ptr(),
                                    key.len(),
                                    n,
                                    now,
                                    patience,
                                    out_ptr,
                                )
                            },
                            Some(patience),
                        )
                    } else {
                        // SAFETY: as above.
                        (
                            unsafe {
                                rate_keyed_acquire_at(
                                    handle,
                                    key.as_ptr(),
                                    key.len(),
                                    n,
                                    now,
                                    out_ptr,
                                )
                            },
                            None,
                        )
                    };
                    trace!(
                        "{}({key:?}, {n}, {now}, {patience:?}) = {got} {out:?}",
                        if written { "acquire" } else { "acquire_null" }
                    );
                    if !written || got < 0 {
                        assert_eq!(out, UNTOUCHED, "step {step}: out written");
                    }
                    if !written {
                        out.allowed = u8::from(got == RATE_OK);
                    }
                    let checked = if written {
                        model.check(&key, now, n, patience, outcome(got, &out), same)
                    } else {
                        model.check(&key, now, n, patience, outcome(got, &out), same_outcome)
                    };
                    if let Err(why) = checked {
                        panic!("step {step}, key {key:?}: {why}");
                    }
                }
            }
        }
        Ok(())
    })();
    // SAFETY: made above, freed once.
    unsafe { rate_keyed_free(handle) };
    result
}

fn policy(input: &mut Unstructured<'_>) -> Result<()> {
    let rules = (0..input.int_in_range(1..=4)?)
        .map(|_| config(input))
        .collect::<Result<Vec<_>>>()?;
    let mut handle = ptr::null_mut();
    // SAFETY: `rules` holds `rules.len()` configurations; `handle` is a live local.
    let created = unsafe { rate_policy_new(rules.as_ptr(), rules.len(), &mut handle) };
    if created != RATE_OK {
        assert_eq!(created, RATE_E_INVALID_CONFIG);
        return Ok(());
    }
    trace!("policy {rules:?}");
    let mut model = PolicyModel(
        rules
            .iter()
            .map(|rule| RuleModel::new(&rust_config(rule)))
            .collect(),
    );
    let limit = model.0.iter().map(RuleModel::limit).min().unwrap_or(0);
    let period_ns = rules.iter().map(|rule| rule.period_ns).max().unwrap_or(1);
    let mut now = input.arbitrary()?;
    let mut step = 0;
    let result = (|| {
        while !input.is_empty() {
            step += 1;
            now = next_time(input, now, period_ns)?;
            let n = cost(input, limit)?;
            let written = input.arbitrary::<bool>()?;
            let untouched = rate_policy_decision {
                decision: UNTOUCHED,
                ..Default::default()
            };
            let mut out = untouched;
            let out_ptr = out_pointer(written, &mut out);
            // SAFETY: a live handle; `out_ptr` NULL or a live local.
            let got = unsafe { rate_policy_acquire_at(handle, n, now, out_ptr) };
            trace!("acquire_at({n}, {now}) = {got} {out:?}");
            match model.decide(now, n) {
                Err(error) => {
                    assert_eq!(got, status(&Err(error)), "step {step}");
                    assert_eq!(out, untouched, "step {step}: out written");
                }
                Ok((decision, denied_by, each)) => {
                    assert_eq!(
                        got,
                        status(&Ok(decision)),
                        "step {step}: model {decision:?}"
                    );
                    if !written {
                        continue;
                    }
                    assert_eq!(out.decision, rate_decision::from(decision), "step {step}");
                    let denied_by = denied_by.map_or(RATE_POLICY_NO_RULE, |rule| rule as u32);
                    assert_eq!(
                        (out.denied_by, out.rules_len as usize),
                        (denied_by, each.len()),
                        "step {step}"
                    );
                    let reported: Vec<librate::Decision> = each.into_iter().collect();
                    for (rule, want) in reported.iter().enumerate() {
                        assert_eq!(
                            out.rules[rule],
                            rate_decision::from(*want),
                            "step {step}: rule {rule}"
                        );
                    }
                }
            }
        }
        Ok(())
    })();
    // SAFETY: made above, freed once.
    unsafe { rate_policy_free(handle) };
    result
}
