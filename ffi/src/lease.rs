//! Leases (docs/leases.md) for the bindings: a holder that decides in process from its
//! share of a global rule, without I/O. Each binding sends the lease script through its
//! own Redis client on its own background mechanism, with the arguments and the answers
//! passed through here, so every language runs the same script and the same holder.

use super::explain::{unknown_algorithm, write_reason};
use super::{
    boundary, path_of, rate_config, rate_decision, report, status_of, RATE_E_INVALID_CONFIG,
};
use super::{RATE_E_NULL, RATE_E_REPLY, RATE_E_UNSUPPORTED, RATE_OK};
use librate::lease::{Fallback, Grant, HolderState, LeaseHolder, Renewal};
use librate::{ConfigError, Instant, LeaseRule};
use std::ffi::c_char;
use std::time::Duration;

/// `rate_lease_state`: decisions come from the share, under a lease.
pub const RATE_LEASE_LEASED: i32 = 0;
/// `rate_lease_state`: Redis answered that the holder holds no share: denied.
pub const RATE_LEASE_UNSHARED: i32 = 1;
/// `rate_lease_state`: no lease and no answer: decisions come from the fallback.
pub const RATE_LEASE_FALLBACK: i32 = 2;

/// The most bytes of a holder's name.
pub const RATE_LEASE_NAME_MAX: usize = 64;
/// The bytes of each argument of a `rate_lease_renewal`, its NUL included.
pub const RATE_LEASE_ARG_BYTES: usize = 72;
/// The arguments of a lease script call.
pub const RATE_LEASE_ARGS: usize = 7;
/// The integers of a lease script's answer, after its status.
pub const RATE_LEASE_FIELDS: usize = 8;
// Literals above, so cbindgen writes numbers: every argument fits, a name its longest.
const _: () = assert!(RATE_LEASE_ARG_BYTES > RATE_LEASE_NAME_MAX && RATE_LEASE_ARG_BYTES > 21);

/// An opaque holder of a lease. Safe to use from many threads at once, but its renewals
/// (`rate_lease_renew*`, `rate_lease_apply*`, `rate_lease_release`) are one thread's at a
/// time; `rate_lease_holder_free` must not race with any other call on it.
pub struct rate_lease_holder {
    holder: LeaseHolder,
}

/// A global rule and the timing of its leases.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rate_lease_rule {
    /// The global rule: GCRA, or a fixed window whose period is a whole number of
    /// microseconds.
    pub config: rate_config,
    /// How long a lease lasts, by Redis's clock: 1 ms to below 2^53 us.
    pub lease_ns: u64,
    /// How often the holder renews: 0 for a quarter of the lease.
    pub renew_every_ns: u64,
}

/// One call of the lease script: send `args` (ARGV, in order, each NUL-terminated) with
/// the rule's Redis key as the one key, then pass this struct back with the answer to
/// `rate_lease_apply`. Plain memory of the caller's; nothing to free.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rate_lease_renewal {
    /// When the holder asked, on its clock (ns).
    pub sent_at_ns: u64,
    /// The script's arguments.
    pub args: [[c_char; RATE_LEASE_ARG_BYTES]; RATE_LEASE_ARGS],
}

/// A holder's last grant, as the script answered it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rate_lease_grant {
    /// The share's rate, in millionths of the rule's (0: no share).
    pub rate: u64,
    /// The share's burst, in units (0: no share).
    pub burst: u64,
    /// How long the share is held from the script's time, in microseconds.
    pub lease_us: u64,
    /// When Redis made the rule's state (it changes when the state is lost).
    pub epoch: u64,
    /// The rates every holder may still be deciding from, this one's included.
    pub held_rate: u64,
    /// Their bursts.
    pub held_burst: u64,
    /// The holders that asked within a lease.
    pub holders: u64,
    /// A fixed window's number (its start over its period); 0 for GCRA. A window's share
    /// is a count: `rate` and `held_rate` are 0, `burst` the count and `held_burst` the
    /// counts granted in the window.
    pub window: u64,
}

/// Creates a holder of `rule`, named `name` (`name_len` bytes, no NUL, at most
/// RATE_LEASE_NAME_MAX; `name_len` 0 for a random name), deciding by `fallback` (a local
/// rule; NULL: deny) when it holds no lease and Redis does not answer. Two holders of one
/// name are one holder to Redis: a name must be unique among a rule's holders.
///
/// Ownership: on RATE_OK, `*out` receives a handle the caller owns and must release with
/// `rate_lease_holder_free`; on error `*out` is left untouched.
///
/// NULL: `rule` or `out` NULL, or `name` NULL with a non-zero `name_len`, is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, RATE_E_UNSUPPORTED (a sliding window or log: leases divide
/// GCRA and fixed windows), or RATE_E_INVALID_CONFIG (a rule `rate_redis_prepare` rejects,
/// a window's period not a whole number of microseconds, a lease or renewal interval out
/// of bounds, an invalid fallback, or a name too long or holding a NUL).
///
/// # Safety
/// `rule` is NULL or readable; `fallback` is NULL or readable; `name` is NULL or points to
/// `name_len` readable bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_holder_new(
    rule: *const rate_lease_rule,
    fallback: *const rate_config,
    name: *const u8,
    name_len: usize,
    out: *mut *mut rate_lease_holder,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract.
        let Some(asked) = (unsafe { Asked::read(rule, fallback, name, name_len) }) else {
            return RATE_E_NULL;
        };
        if out.is_null() {
            return RATE_E_NULL;
        }
        match asked.holder() {
            Ok(holder) => {
                // SAFETY: `out` is non-NULL and the caller promised it is writable.
                unsafe { *out = Box::into_raw(Box::new(rate_lease_holder { holder })) };
                RATE_OK
            }
            Err(refusal) => refusal.status(),
        }
    })
}

/// Explains why `rate_lease_holder_new` refuses the same arguments: writes one English
/// sentence naming what is wrong and the bound it broke to `reason`, as
/// `rate_limiter_explain_config` does (a fallback's reason starts "fallback: "). Nothing is
/// created.
///
/// Ownership: as `rate_limiter_explain_config`.
///
/// NULL: `rule` NULL, or `name` NULL with a non-zero `name_len`, is RATE_E_NULL; `reason`
/// may be NULL.
///
/// Returns RATE_OK (`rate_lease_holder_new` accepts them), RATE_E_UNSUPPORTED or
/// RATE_E_INVALID_CONFIG (the reason says why), or RATE_E_NULL.
///
/// # Safety
/// As `rate_lease_holder_new`; `reason` is NULL or points to `reason_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_explain(
    rule: *const rate_lease_rule,
    fallback: *const rate_config,
    name: *const u8,
    name_len: usize,
    reason: *mut c_char,
    reason_len: usize,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract.
        let Some(asked) = (unsafe { Asked::read(rule, fallback, name, name_len) }) else {
            return RATE_E_NULL;
        };
        let refusal = asked.holder().err();
        let text = refusal.as_ref().map(Refusal::to_string).unwrap_or_default();
        // SAFETY: per this function's contract.
        unsafe { write_reason(&text, reason, reason_len) };
        refusal.map_or(RATE_OK, |refusal| refusal.status())
    })
}

/// What a caller asks a holder to be, read from C.
pub(super) struct Asked<'a> {
    rule: &'a rate_lease_rule,
    fallback: Option<&'a rate_config>,
    name: Option<&'a [u8]>,
}

/// Why a holder is refused.
pub(super) enum Refusal {
    /// A sliding window or log: leases divide GCRA and fixed windows.
    Unsupported(ConfigError),
    /// The rule, its lease, the fallback or the name; the reason's text.
    Invalid(String),
}

impl Refusal {
    pub(super) fn status(&self) -> i32 {
        match self {
            Self::Unsupported(_) => RATE_E_UNSUPPORTED,
            Self::Invalid(_) => RATE_E_INVALID_CONFIG,
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unsupported(why) => why.fmt(f),
            Self::Invalid(why) => f.write_str(why),
        }
    }
}

impl<'a> Asked<'a> {
    /// The arguments of `rate_lease_holder_new`; `None` for a NULL the caller may not pass.
    ///
    /// # Safety
    /// As `rate_lease_holder_new`'s, for `rule`, `fallback` and `name`.
    pub(super) unsafe fn read(
        rule: *const rate_lease_rule,
        fallback: *const rate_config,
        name: *const u8,
        name_len: usize,
    ) -> Option<Self> {
        // SAFETY: per this function's contract; `as_ref` checks NULL.
        let rule = unsafe { rule.as_ref() }?;
        let name = match (name.is_null(), name_len) {
            (_, 0) => None,
            (true, _) => return None,
            // SAFETY: non-NULL, and the caller promised `name_len` readable bytes.
            (false, len) => Some(unsafe { std::slice::from_raw_parts(name, len) }),
        };
        // SAFETY: per this function's contract; `as_ref` checks NULL.
        let fallback = unsafe { fallback.as_ref() };
        Some(Self {
            rule,
            fallback,
            name,
        })
    }

    /// The holder asked for, or why not.
    fn holder(&self) -> Result<LeaseHolder, Refusal> {
        let (rule, fallback) = self.parts()?;
        match self.name()? {
            None => LeaseHolder::new(&rule, fallback),
            Some(name) => LeaseHolder::named(&rule, fallback, name),
        }
        .map_err(|why| Refusal::Invalid(why.to_string()))
    }

    /// The name asked for (`None`: a random one), or why it is refused.
    pub(super) fn name(&self) -> Result<Option<&'a str>, Refusal> {
        self.name
            .map(name_text)
            .transpose()
            .map_err(|why| Refusal::Invalid(why.to_string()))
    }

    /// The rule and the fallback asked for, or why not.
    pub(super) fn parts(&self) -> Result<(LeaseRule, Fallback), Refusal> {
        let invalid = |why: ConfigError| Refusal::Invalid(why.to_string());
        let Some(config) = self.rule.config.to_config() else {
            return Err(Refusal::Invalid(unknown_algorithm(
                self.rule.config.algorithm,
            )));
        };
        let lease = Duration::from_nanos(self.rule.lease_ns);
        let mut rule = match LeaseRule::new(&config, lease) {
            Err(why @ ConfigError::LeaseAlgorithm(_)) => return Err(Refusal::Unsupported(why)),
            other => other.map_err(invalid)?,
        };
        if self.rule.renew_every_ns != 0 {
            let every = Duration::from_nanos(self.rule.renew_every_ns);
            rule = rule.renewing_every(every).map_err(invalid)?;
        }
        let fallback = match self.fallback {
            None => Fallback::Deny,
            Some(local) => {
                let local = local
                    .to_config()
                    .ok_or_else(|| unknown_algorithm(local.algorithm))
                    .and_then(|local| {
                        local
                            .validate()
                            .map(|()| local)
                            .map_err(|why| why.to_string())
                    })
                    .map_err(|why| Refusal::Invalid(format!("fallback: {why}")))?;
                Fallback::Local(local)
            }
        };
        Ok((rule, fallback))
    }
}

/// A holder's name as text: at most RATE_LEASE_NAME_MAX bytes of UTF-8 without NUL.
fn name_text(name: &[u8]) -> Result<&str, ConfigError> {
    match std::str::from_utf8(name) {
        Ok(text) if name.len() <= RATE_LEASE_NAME_MAX && !name.contains(&0) => Ok(text),
        _ => Err(ConfigError::LeaseName {
            name: String::from_utf8_lossy(name).into_owned(),
        }),
    }
}

/// Frees a holder. It does not hand its share back: call `rate_lease_release` and send
/// its renewal first (otherwise the share returns to the rule when its lease ends).
///
/// # Safety
/// `holder` is NULL or a live handle, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_holder_free(holder: *mut rate_lease_holder) {
    boundary(|| {
        if !holder.is_null() {
            // SAFETY: non-NULL handles come from `Box::into_raw` in `rate_lease_holder_new`,
            // and the caller gives this one back exactly once.
            drop(unsafe { Box::from_raw(holder) });
        }
    })
}

/// Opens the holder of `rule` for this host, in the file at `path` (created with mode 0600
/// if absent): every process that opens it decides from one share under one name, and one
/// of them renews it at a time (`rate_lease_lead`). Each process decides by its own
/// `fallback` (NULL: deny), and opens the file once. `rate_lease_explain` explains a
/// refused `rule` or `fallback` (with no name).
///
/// Ownership: as `rate_lease_holder_new`; freeing the handle leaves the file in place.
///
/// NULL: `path`, `rule` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, RATE_E_UNSUPPORTED or RATE_E_INVALID_CONFIG (as
/// `rate_lease_holder_new`), RATE_E_INCOMPATIBLE (the file is no holder of this rule and
/// lease; it is left untouched), or RATE_E_IO (`errno` says why).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `rule` and `fallback` are NULL or readable;
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_holder_open(
    path: *const c_char,
    rule: *const rate_lease_rule,
    fallback: *const rate_config,
    out: *mut *mut rate_lease_holder,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract.
        let (Some(path), Some(asked)) = (unsafe { path_of(path) }, unsafe {
            Asked::read(rule, fallback, std::ptr::null(), 0)
        }) else {
            return RATE_E_NULL;
        };
        if out.is_null() {
            return RATE_E_NULL;
        }
        let (rule, fallback) = match asked.parts() {
            Ok(parts) => parts,
            Err(refusal) => return refusal.status(),
        };
        match LeaseHolder::open(path, &rule, fallback) {
            Ok(holder) => {
                // SAFETY: `out` is non-NULL and the caller promised it is writable.
                unsafe { *out = Box::into_raw(Box::new(rate_lease_holder { holder })) };
                RATE_OK
            }
            Err(error) => status_of(error),
        }
    })
}

/// Whether this process renews the holder's share: 1 (always, for a holder of its own; for
/// a host's, if no live process does, this one claims it), 0 (another process does), or
/// RATE_E_NULL. A client sends renewals only while this says 1.
///
/// # Safety
/// `holder` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_lead(holder: *const rate_lease_holder) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        match unsafe { holder_ref(holder) } {
            Some(holder) => i32::from(holder.lead()),
            None => RATE_E_NULL,
        }
    })
}

/// Gives up renewing a host's share, if this process did, so another may claim it: what a
/// process that stops does instead of `rate_lease_release`, which would hand back the share
/// every process of the host decides from. Returns RATE_OK or RATE_E_NULL.
///
/// # Safety
/// `holder` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_step_down(holder: *const rate_lease_holder) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        match unsafe { holder_ref(holder) } {
            Some(holder) => {
                holder.step_down();
                RATE_OK
            }
            None => RATE_E_NULL,
        }
    })
}

/// Borrows the holder behind a handle.
///
/// # Safety
/// `holder` is NULL or a live handle.
pub(super) unsafe fn holder_ref<'a>(holder: *const rate_lease_holder) -> Option<&'a LeaseHolder> {
    // SAFETY: per this function's contract; `as_ref` checks NULL.
    unsafe { holder.as_ref() }.map(|handle| &handle.holder)
}

/// Acquires `n` units now (CLOCK_MONOTONIC) from the holder's share, with atomics alone:
/// never waits on Redis. Without a lease: the fallback's decision, or a denial whose
/// `retry_after_ns` is the renewal interval. The decision's fields are the share's.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `holder` NULL is RATE_E_NULL; `out` may be NULL.
///
/// Returns RATE_OK, RATE_LIMITED, RATE_E_NULL, or RATE_E_INSUFFICIENT_CAPACITY (`n` above
/// the global rule's burst).
///
/// # Safety
/// `holder` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_acquire(
    holder: *mut rate_lease_holder,
    n: u64,
    out: *mut rate_decision,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe { rate_lease_acquire_at(holder, n, Instant::now().as_nanos(), out) }
}

/// `rate_lease_acquire` at `now_ns` on the caller's timeline (one timeline for every
/// holder of a rule and their renewals).
///
/// # Safety
/// As `rate_lease_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_acquire_at(
    holder: *mut rate_lease_holder,
    n: u64,
    now_ns: u64,
    out: *mut rate_decision,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let Some(holder) = (unsafe { holder_ref(holder) }) else {
            return RATE_E_NULL;
        };
        let at = Instant::from_nanos(now_ns);
        if out.is_null() {
            return super::outcome_status(holder.try_acquire_at(n, at));
        }
        // SAFETY: `out` is non-NULL and writable, as the caller promised.
        unsafe { report(holder.acquire_at(n, at), out) }
    })
}

/// Where the holder's decisions come from now: RATE_LEASE_LEASED, RATE_LEASE_UNSHARED or
/// RATE_LEASE_FALLBACK; RATE_E_NULL for a NULL handle.
///
/// # Safety
/// `holder` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_state(holder: *const rate_lease_holder) -> i32 {
    // SAFETY: the caller's promise.
    unsafe { rate_lease_state_at(holder, Instant::now().as_nanos()) }
}

/// `rate_lease_state` at `now_ns`.
///
/// # Safety
/// As `rate_lease_state`.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_state_at(holder: *const rate_lease_holder, now_ns: u64) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        match unsafe { holder_ref(holder) } {
            Some(holder) => state_code(holder.state_at(Instant::from_nanos(now_ns))),
            None => RATE_E_NULL,
        }
    })
}

/// A holder's statistics, for dashboards: what `rate_lease_read_stats` writes. Kept by the
/// handle that renews (a host holder's other processes renew nothing).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rate_lease_stats {
    /// Answers of the lease script this handle applied (`rate_lease_apply`).
    pub renewals: u64,
    /// Nanoseconds, since this handle's first renewal, during which decisions came from
    /// the fallback: no lease held and no answer (RATE_LEASE_FALLBACK).
    pub fallback_ns: u64,
    /// The share held by the last grant: millionths of the rule's rate (0 before the
    /// first grant).
    pub held_rate: u64,
    /// The share held by the last grant: units at once.
    pub held_burst: u64,
    /// Where decisions come from at the time asked: RATE_LEASE_LEASED,
    /// RATE_LEASE_UNSHARED or RATE_LEASE_FALLBACK.
    pub state: i32,
}

/// Writes the holder's statistics now to `*out`.
///
/// Thread-safety: safe to call concurrently with any call on the handle.
///
/// Returns RATE_OK, or RATE_E_NULL for a NULL `holder` or `out`.
///
/// # Safety
/// `holder` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_read_stats(
    holder: *const rate_lease_holder,
    out: *mut rate_lease_stats,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe { rate_lease_read_stats_at(holder, Instant::now().as_nanos(), out) }
}

/// `rate_lease_read_stats` at `now_ns`: the fallback counted up to it.
///
/// # Safety
/// As `rate_lease_read_stats`.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_read_stats_at(
    holder: *const rate_lease_holder,
    now_ns: u64,
    out: *mut rate_lease_stats,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle, and NULL or a writable `out`.
        let (Some(holder), Some(out)) = (unsafe { holder_ref(holder) }, unsafe { out.as_mut() })
        else {
            return RATE_E_NULL;
        };
        let stats = holder.stats_at(Instant::from_nanos(now_ns));
        *out = rate_lease_stats {
            renewals: stats.renewals,
            fallback_ns: u64::try_from(stats.fallback.as_nanos()).unwrap_or(u64::MAX),
            held_rate: stats.held.rate,
            held_burst: stats.held.burst,
            state: state_code(stats.state),
        };
        RATE_OK
    })
}

fn state_code(state: HolderState) -> i32 {
    match state {
        HolderState::Leased => RATE_LEASE_LEASED,
        HolderState::Unshared => RATE_LEASE_UNSHARED,
        HolderState::Fallback => RATE_LEASE_FALLBACK,
    }
}

/// Fills `out` with the renewal to send now, the script reading the server's clock
/// (`ARGV[2]` is "").
///
/// NULL: `holder` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK or RATE_E_NULL.
///
/// # Safety
/// `holder` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_renew(
    holder: *const rate_lease_holder,
    out: *mut rate_lease_renewal,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe { renewal_into(holder, out, LeaseHolder::renewal) }
}

/// `rate_lease_renew` at `now_ns` on the caller's timeline, which the script decides at
/// (simulations, tests).
///
/// # Safety
/// As `rate_lease_renew`.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_renew_at(
    holder: *const rate_lease_holder,
    now_ns: u64,
    out: *mut rate_lease_renewal,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe {
        renewal_into(holder, out, |holder| {
            holder.renewal_at(Instant::from_nanos(now_ns))
        })
    }
}

/// Stops the holder deciding from its share (decisions fall back from now on) and fills
/// `out` with the call that hands the share back; its answer needs no applying.
///
/// # Safety
/// As `rate_lease_renew`.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_release(
    holder: *const rate_lease_holder,
    out: *mut rate_lease_renewal,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe { renewal_into(holder, out, LeaseHolder::release) }
}

/// Writes the renewal `make` gives into `out`.
///
/// # Safety
/// As `rate_lease_renew`.
unsafe fn renewal_into(
    holder: *const rate_lease_holder,
    out: *mut rate_lease_renewal,
    make: impl FnOnce(&LeaseHolder) -> Renewal,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let (Some(holder), false) = (unsafe { holder_ref(holder) }, out.is_null()) else {
            return RATE_E_NULL;
        };
        // SAFETY: `out` is non-NULL and writable, as the caller promised.
        unsafe { *out = renewal_of(&make(holder)) };
        RATE_OK
    })
}

/// A renewal (or any call of the lease script) as C reads it.
pub(super) fn renewal_of(renewal: &Renewal) -> rate_lease_renewal {
    let mut args = [[0; RATE_LEASE_ARG_BYTES]; RATE_LEASE_ARGS];
    for (slot, arg) in args.iter_mut().zip(renewal.args()) {
        // Every argument fits with its NUL: numbers of 20 digits at most, a name
        // RATE_LEASE_NAME_MAX bytes without NUL (checked when it was made).
        for (byte, &from) in slot.iter_mut().zip(arg.as_bytes()) {
            *byte = from as c_char;
        }
    }
    let sent_at_ns = renewal.sent_at().as_nanos();
    rate_lease_renewal { sent_at_ns, args }
}

/// Applies the lease script's answer to `renewal` now: `status` (`status_len` bytes,
/// "granted" or "quiet") and its RATE_LEASE_FIELDS integers in order (rate, burst,
/// lease_us, epoch, held_rate, held_burst, holders, window). Returns where decisions come from afterwards (a
/// RATE_LEASE_* state), RATE_E_NULL, or RATE_E_REPLY for an answer the script never
/// gives, of which nothing is applied.
///
/// # Safety
/// `holder` is NULL or a live handle; `renewal` is NULL or readable; `status` is NULL or
/// points to `status_len` readable bytes; `fields` is NULL or points to RATE_LEASE_FIELDS
/// readable u64.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_apply(
    holder: *const rate_lease_holder,
    renewal: *const rate_lease_renewal,
    status: *const u8,
    status_len: usize,
    fields: *const u64,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe {
        rate_lease_apply_at(
            holder,
            renewal,
            status,
            status_len,
            fields,
            Instant::now().as_nanos(),
        )
    }
}

/// `rate_lease_apply` at `now_ns` on the caller's timeline.
///
/// # Safety
/// As `rate_lease_apply`.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_apply_at(
    holder: *const rate_lease_holder,
    renewal: *const rate_lease_renewal,
    status: *const u8,
    status_len: usize,
    fields: *const u64,
    now_ns: u64,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle, and the rest as it promised.
        unsafe {
            apply_to(
                holder_ref(holder),
                renewal,
                status,
                status_len,
                fields,
                now_ns,
            )
        }
    })
}

/// Applies an answer to `renewal` to `holder` at `now_ns`, as `rate_lease_apply_at`.
///
/// # Safety
/// As `rate_lease_apply_at`, for all but `holder`.
pub(super) unsafe fn apply_to(
    holder: Option<&LeaseHolder>,
    renewal: *const rate_lease_renewal,
    status: *const u8,
    status_len: usize,
    fields: *const u64,
    now_ns: u64,
) -> i32 {
    // SAFETY: the caller passes NULL or readable memory.
    let (Some(holder), Some(renewal)) = (holder, unsafe { renewal.as_ref() }) else {
        return RATE_E_NULL;
    };
    if status.is_null() || fields.is_null() {
        return RATE_E_NULL;
    }
    // SAFETY: non-NULL, and the caller promised the lengths readable.
    let (status, fields) = unsafe {
        (
            std::slice::from_raw_parts(status, status_len),
            *fields.cast::<[u64; RATE_LEASE_FIELDS]>(),
        )
    };
    let Ok(grant) = Grant::from_fields(status, fields) else {
        return RATE_E_REPLY;
    };
    let sent = Renewal::sent(Instant::from_nanos(renewal.sent_at_ns));
    match holder.apply_at(&sent, &grant, Instant::from_nanos(now_ns)) {
        Ok(state) => state_code(state),
        Err(_) => RATE_E_REPLY,
    }
}

/// Writes the holder's last grant to `out` (all zero before the first). Returns RATE_OK or
/// RATE_E_NULL.
///
/// # Safety
/// `holder` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_last_grant(
    holder: *const rate_lease_holder,
    out: *mut rate_lease_grant,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let (Some(holder), false) = (unsafe { holder_ref(holder) }, out.is_null()) else {
            return RATE_E_NULL;
        };
        let grant = holder
            .last_grant()
            .map_or_else(rate_lease_grant::default, |grant| rate_lease_grant {
                rate: grant.share.rate,
                burst: grant.share.burst,
                lease_us: grant.lease_us,
                epoch: grant.epoch,
                held_rate: grant.held.rate,
                held_burst: grant.held.burst,
                holders: grant.holders,
                window: grant.window,
            });
        // SAFETY: `out` is non-NULL and writable, as the caller promised.
        unsafe { *out = grant };
        RATE_OK
    })
}

/// The lease script of the holder's rule (GCRA's or the fixed window's), NUL-terminated
/// and static (valid for the life of the process), or NULL for a NULL holder: a client
/// sends it with EVALSHA (loading it after NOSCRIPT) naming the rule's Redis key, a hash,
/// as its one key (on a Cluster it is the rule's slot), and a `rate_lease_renewal`'s
/// arguments.
///
/// # Safety
/// `holder` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_script(holder: *const rate_lease_holder) -> *const c_char {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        match unsafe { holder_ref(holder) } {
            Some(holder) => holder.script_with_nul().as_ptr().cast(),
            None => std::ptr::null(),
        }
    })
}
