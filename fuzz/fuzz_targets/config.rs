//! Arbitrary `rate_config`s and capacities into every constructor (`rate_limiter_new`,
//! `rate_keyed_new`, `rate_policy_new`, the `_open` forms now and then) and both
//! `explain_config`s: a handle or RATE_E_INVALID_CONFIG, the same verdict from the
//! constructor and its explanation, never a panic (RATE_E_INTERNAL), and no allocation
//! larger than the state the configuration and capacity ask for. The same
//! configurations prepare Redis scripts (`rate_redis_prepare`, `rate_redis_policy_prepare`,
//! which need no server): the documented verdicts, arguments and limits.
//!
//! Capacities are small, or so large (2⁴⁴ and up) that no allocator grants them: a
//! capacity in between would be granted and its table written whole, which tests only
//! the machine's memory.

#![no_main]
#![deny(missing_docs)]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use rate::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::CString;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, remembering the largest request since it was last cleared.
struct Measured;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Measured {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // Relaxed: a statistic read by this thread after the calls it measures.
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: passed on from this function's contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: passed on from this function's contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Measured = Measured;

fuzz_target!(|data: &[u8]| {
    let mut input = Unstructured::new(data);
    let _ = run(&mut input);
});

/// Any configuration, its fields often at or near a boundary.
fn any_config(input: &mut Unstructured<'_>) -> Result<rate_config> {
    let algorithm = match input.int_in_range(0u8..=7)? {
        0 => input.arbitrary()?,
        choice => u32::from(choice % 5),
    };
    let number = |input: &mut Unstructured<'_>| -> Result<u64> {
        // Around the log's largest limit (2²⁰): rarely.
        Ok(match input.int_in_range(0u8..=15)? {
            0 => (1 << 20) + input.int_in_range(0..=2)? - 1,
            1..=3 => 0,
            4..=7 => input.int_in_range(1..=64)?,
            8 => u64::MAX, // `Config::FOREVER` as a period: the allowance that never refills
            9 => u64::MAX - input.int_in_range(0..=300)?,
            10..=12 => 1 << input.int_in_range(0..=63)?,
            _ => input.arbitrary()?,
        })
    };
    let mut config = rate_config {
        algorithm,
        limit: number(input)?,
        period_ns: number(input)?,
        burst: number(input)?,
    };
    // A log's state grows with its limit (16 MiB at 2²⁰), and every word of a state is
    // written when it is built, some times an input: a valid log is built with at most 64
    // units, or in one configuration of 256 at most 4096, never more. (The log's one bound
    // on its limit, 2²⁰, lies past them, but what rejects 2²⁰ + 1 and accepts 2²⁰ is
    // the validation every constructor runs before it allocates, which `explain_config`
    // runs too; its unit tests build logs of 2²⁰ units. The allocations grow linearly,
    // and are checked here at every size built.)
    let medium_log = input.int_in_range(0u8..=255)? == 0;
    if config.algorithm == RATE_SLIDING_LOG
        && config.limit > 64
        && config.limit <= 1 << 20
        && config.period_ns != u64::MAX
    {
        config.limit %= if medium_log { 4097 } else { 65 };
    }
    Ok(config)
}

/// The most bytes one allocation may take for `config` and `capacity` keys (0: a
/// limiter): each key two slots of at most a line or its state words, whichever is more;
/// the log's state is 16 bytes per unit of its limit.
fn allowance(config: &rate_config, capacity: u64) -> u128 {
    let state_words = if config.algorithm == RATE_SLIDING_LOG {
        8 + 2 * u128::from(config.limit)
    } else {
        8
    };
    let slots = 2 * u128::from(capacity.max(1));
    (slots * 8)
        .saturating_mul((state_words + 1).max(8))
        .saturating_add(64 * 1024)
}

/// Checks one constructor's status against the verdict of `explain`, and the largest
/// allocation since `LARGEST` was cleared against the allowance.
fn check(what: &str, status: i32, verdict: i32, config: &rate_config, capacity: u64) {
    assert!(
        matches!(status, RATE_OK | RATE_E_INVALID_CONFIG),
        "{what}: {status} for {config:?}"
    );
    assert_eq!(
        status, verdict,
        "{what}: explain disagrees on {config:?}, capacity {capacity}"
    );
    // Relaxed: written by this thread alone.
    let largest = LARGEST.swap(0, Ordering::Relaxed) as u128;
    assert!(
        largest <= allowance(config, capacity),
        "{what}: {largest} bytes at once for {config:?}, capacity {capacity}"
    );
}

/// The verdict of an explain call, with its reason checked: empty iff accepted.
fn explained(status: i32, reason: &[u8; RATE_REASON_LEN]) -> i32 {
    let len = reason
        .iter()
        .position(|&byte| byte == 0)
        .expect("a NUL-terminated reason");
    assert!(
        matches!(status, RATE_OK | RATE_E_INVALID_CONFIG),
        "explain: {status}"
    );
    assert_eq!(
        len == 0,
        status == RATE_OK,
        "reason {:?}",
        String::from_utf8_lossy(&reason[..len])
    );
    status
}

/// The verdict of `rate_limiter_explain_config` on `config`, its reason checked.
fn explain(config: &rate_config) -> i32 {
    let mut reason = [0xFFu8; RATE_REASON_LEN];
    // SAFETY: live locals; `reason` holds RATE_REASON_LEN bytes.
    let status =
        unsafe { rate_limiter_explain_config(config, reason.as_mut_ptr().cast(), reason.len()) };
    explained(status, &reason)
}

/// A live change of a limiter, one unit in, to its own configuration: made (refused for
/// a sliding log's ring, whose rule never changes), never leaving more units than before.
fn change_to_itself(limiter: *mut rate_limiter, config: &rate_config) {
    let (mut before, mut after) = (rate_decision::default(), rate_decision::default());
    // SAFETY: the live handle just made; live locals.
    let changed = unsafe {
        rate_limiter_acquire_at(limiter, 1, 0, ptr::null_mut());
        rate_limiter_acquire_at(limiter, 0, 0, &mut before);
        let changed = rate_limiter_set_config_at(limiter, config, 0);
        rate_limiter_acquire_at(limiter, 0, 0, &mut after);
        changed
    };
    let ring = config.algorithm == RATE_SLIDING_LOG && config.period_ns != RATE_FOREVER;
    let expected = if ring { RATE_E_INVALID_CONFIG } else { RATE_OK };
    assert_eq!(changed, expected, "set_config to itself: {config:?}");
    assert!(
        after.remaining <= before.remaining,
        "{config:?}: {before:?} then {after:?}"
    );
}

fn run(input: &mut Unstructured<'_>) -> Result<()> {
    let config = any_config(input)?;
    let open = input.int_in_range(0u8..=15)? == 0;
    let mut capacity = match input.int_in_range(0u8..=3)? {
        0 => 0,
        1 | 2 => input.int_in_range(1..=64)?,
        _ => input.arbitrary::<u64>()? | 1 << 44,
    };
    // A log's state grows with its limit: keep a granted table to some thousands of words
    // (each key two slots of 8 + 2 × limit words), every one of which is written when it
    // is built, three times an input.
    if config.algorithm == RATE_SLIDING_LOG && capacity < 1 << 44 {
        let fits = 512 / config.limit.saturating_add(4);
        capacity = capacity.min(fits.max(1));
    }

    let verdict = explain(&config);
    LARGEST.store(0, Ordering::Relaxed);
    let mut limiter = ptr::null_mut();
    // SAFETY: live locals.
    let status = unsafe { rate_limiter_new(&config, &mut limiter) };
    check("rate_limiter_new", status, verdict, &config, 0);
    if status == RATE_OK {
        change_to_itself(limiter, &config);
    }
    // SAFETY: NULL or the handle just made.
    unsafe { rate_limiter_free(limiter) };

    let mut reason = [0xFFu8; RATE_REASON_LEN];
    // SAFETY: live locals; `reason` holds RATE_REASON_LEN bytes.
    let keyed_verdict = explained(
        unsafe {
            rate_keyed_explain_config(&config, capacity, reason.as_mut_ptr().cast(), reason.len())
        },
        &reason,
    );
    LARGEST.store(0, Ordering::Relaxed);
    let mut keyed = ptr::null_mut();
    // SAFETY: live locals.
    let status = unsafe { rate_keyed_new(&config, capacity, &mut keyed) };
    check("rate_keyed_new", status, keyed_verdict, &config, capacity);
    // SAFETY: NULL or the handle just made.
    unsafe { rate_keyed_free(keyed) };
    assert!(
        keyed_verdict == RATE_E_INVALID_CONFIG || verdict == RATE_OK,
        "a keyed table of a rejected configuration"
    );

    let mut rules = vec![config];
    for _ in 0..input.int_in_range(0..=9)? {
        rules.push(any_config(input)?);
    }
    rules.truncate(input.int_in_range(0..=rules.len())?);
    // Each rule's verdict is its explanation's, which this target checks against
    // `rate_limiter_new` (on every input's first rule).
    let policy_verdict = if (1..=RATE_POLICY_MAX_RULES).contains(&rules.len())
        && rules.iter().all(|rule| explain(rule) == RATE_OK)
    {
        RATE_OK
    } else {
        RATE_E_INVALID_CONFIG
    };
    LARGEST.store(0, Ordering::Relaxed);
    let mut policy = ptr::null_mut();
    // SAFETY: `rules` holds `rules.len()` configurations (a dangling pointer for none).
    let status = unsafe { rate_policy_new(rules.as_ptr(), rules.len(), &mut policy) };
    let largest_rule = rules
        .iter()
        .max_by_key(|rule| allowance(rule, 0))
        .copied()
        .unwrap_or(config);
    check("rate_policy_new", status, policy_verdict, &largest_rule, 0);
    // SAFETY: NULL or the handle just made.
    unsafe { rate_policy_free(policy) };

    redis(&config, verdict, &rules);

    if open {
        let dir = std::path::Path::new("/dev/shm");
        let dir = if dir.is_dir() {
            dir.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let path = dir.join(format!("librate-fuzz-config-{}", std::process::id()));
        let c_path = CString::new(path.to_str().unwrap()).unwrap();
        let mut limiter = ptr::null_mut();
        // SAFETY: live locals, a NUL-terminated path.
        let status = unsafe { rate_limiter_open(c_path.as_ptr(), &config, &mut limiter) };
        assert_eq!(status, verdict, "rate_limiter_open on {config:?}");
        // SAFETY: NULL or the handle just made.
        unsafe { rate_limiter_free(limiter) };
        let _ = std::fs::remove_file(&path);
        let mut keyed = ptr::null_mut();
        // SAFETY: as above.
        let status = unsafe { rate_keyed_open(c_path.as_ptr(), &config, capacity, &mut keyed) };
        // A table too large to allocate may also be one too large to map.
        let io = verdict == RATE_OK && keyed_verdict != RATE_OK && status == RATE_E_IO;
        assert!(
            status == keyed_verdict || io,
            "rate_keyed_open: {status} on {config:?}, capacity {capacity}"
        );
        // SAFETY: NULL or the handle just made.
        unsafe { rate_keyed_free(keyed) };
        let _ = std::fs::remove_file(&path);
    }
    Ok(())
}

/// Checks that an output a call failed on is as it was before (compared as printed: the
/// C structs have no equality).
fn assert_untouched<T: std::fmt::Debug>(out: &T, before: &T) {
    assert_eq!(
        format!("{out:?}"),
        format!("{before:?}"),
        "an error wrote its output"
    );
}

/// Durations a Redis script holds as Lua numbers must be below 2⁵³ ns, which doubles hold
/// exactly.
const EXACT: u64 = 1 << 53;

/// The most units one request may take: GCRA's burst (0 means the limit), the others'
/// limit.
fn most_units(config: &rate_config) -> u64 {
    if config.algorithm == RATE_GCRA && config.burst > 0 {
        config.burst
    } else {
        config.limit
    }
}

/// `rate_redis_prepare`'s expected verdict on a configuration whose limiter verdict is
/// `verdict`: refused as by `rate_limiter_new`, and also for a period that never ends (no
/// script keeps an allowance) or a duration a script holds of 2⁵³ ns or more (GCRA: its
/// tolerance, burst × ⌊period / limit⌋; the others: the period).
fn redis_verdict(config: &rate_config, verdict: i32) -> i32 {
    if verdict != RATE_OK {
        return verdict;
    }
    let exact = match config.algorithm {
        _ if config.period_ns == u64::MAX => false,
        RATE_GCRA => most_units(config)
            .checked_mul(config.period_ns / config.limit)
            .is_some_and(|tolerance| tolerance < EXACT),
        _ => config.period_ns < EXACT,
    };
    if exact {
        RATE_OK
    } else {
        RATE_E_INVALID_CONFIG
    }
}

/// The prepared scripts of `config` (a limiter's, whose verdict is `verdict`) and of the
/// policy of `rules`: their statuses, arguments and limits as documented, and an output
/// untouched on an error. Nothing here needs a server.
fn redis(config: &rate_config, verdict: i32, rules: &[rate_config]) {
    let untouched = rate_redis_script {
        source: ptr::null(),
        config_args: [0xAAAA; RATE_REDIS_MAX_ARGS],
        config_args_len: 0xAAAA,
        limit: 0xAAAA,
    };
    let mut script = untouched;
    // SAFETY: live locals.
    let status = unsafe { rate_redis_prepare(config, &mut script) };
    assert_eq!(
        status,
        redis_verdict(config, verdict),
        "rate_redis_prepare on {config:?}"
    );
    if status == RATE_OK {
        let args = &script.config_args[..script.config_args_len as usize];
        let per_algorithm = if config.algorithm == RATE_GCRA {
            [config.period_ns / config.limit, most_units(config)]
        } else {
            [config.limit, config.period_ns]
        };
        assert_eq!(args, per_algorithm, "arguments for {config:?}");
        assert_eq!(script.limit, most_units(config), "limit of {config:?}");
        assert!(!script.source.is_null());
    } else {
        assert_untouched(&script, &untouched);
    }

    let untouched = rate_redis_policy_script {
        source: ptr::null(),
        config_args: [0xAAAA; RATE_REDIS_POLICY_MAX_ARGS],
        config_args_len: 0xAAAA,
        limit: 0xAAAA,
    };
    let mut script = untouched;
    // SAFETY: `rules` holds `rules.len()` configurations (a dangling pointer for none).
    let status = unsafe { rate_redis_policy_prepare(rules.as_ptr(), rules.len(), &mut script) };
    let each_prepared = rules
        .iter()
        .all(|rule| redis_verdict(rule, explain(rule)) == RATE_OK);
    let want = if (1..=RATE_POLICY_MAX_RULES).contains(&rules.len()) && each_prepared {
        RATE_OK
    } else {
        RATE_E_INVALID_CONFIG
    };
    assert_eq!(status, want, "rate_redis_policy_prepare on {rules:?}");
    if status == RATE_OK {
        let args = &script.config_args[..script.config_args_len as usize];
        assert_eq!(args.len(), 1 + 3 * rules.len(), "{rules:?}");
        assert_eq!(args[0], rules.len() as u64);
        for (rule, rule_args) in rules.iter().zip(args[1..].chunks(3)) {
            assert_eq!(rule_args[0], u64::from(rule.algorithm), "{rules:?}");
        }
        let least = rules.iter().map(most_units).min();
        assert_eq!(Some(script.limit), least, "limit of {rules:?}");
        assert!(!script.source.is_null());
    } else {
        assert_untouched(&script, &untouched);
    }
}
