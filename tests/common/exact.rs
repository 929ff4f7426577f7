//! Reference models written straight from docs/decision.md in `u128`, every decision field
//! in closed form, for every configuration its bounds table accepts and every instant of
//! the `u64` timeline. Nothing here comes from the library's algorithm code: the closed
//! forms are derived from the definitions on that page ("the smallest wait d such that
//! …"), and `ffi/tests/exact_model.rs` checks each of them against a brute-force search of
//! those definitions on small configurations before comparing the library with them
//! everywhere. (`models.rs` finds the fields by bisection instead; these are independent
//! of it too.)

use super::Refused;
use librate::{Algorithm, Config, Decision};

/// The largest value a state word may hold: those above 2⁶⁴ − 257 are reserved
/// (docs/decision.md, "The end of the timeline"). A GCRA TAT above it cannot be stored.
pub const STORABLE: u128 = (1 << 64) - 257;
/// The last instant of the timeline.
pub const LAST: u128 = u64::MAX as u128;
/// "Never": a duration that cannot be represented saturates here (docs/decision.md).
pub const NEVER: u64 = u64::MAX;

/// The wait from `t` until the instant `at ≥ t`, or never if `at` is past the timeline.
fn until(at: u128, t: u128) -> u64 {
    if at > LAST {
        NEVER
    } else {
        (at - t) as u64
    }
}

/// `bits(L)`: L's bit length.
fn bits(value: u128) -> u32 {
    128 - value.leading_zeros()
}

/// Whether docs/decision.md's bounds table (and the section on FOREVER) accepts `config`.
pub fn valid(config: &Config) -> bool {
    let (l, p) = (u128::from(config.limit), config.period().as_nanos());
    let b = if config.burst == 0 {
        l
    } else {
        u128::from(config.burst)
    };
    if l == 0 || p == 0 {
        return false;
    }
    if config.period() == Config::FOREVER {
        // An allowance of C units, C from 1 to 2⁶⁴ − 257: B for GCRA, L for the others.
        let c = if config.algorithm == Algorithm::Gcra {
            b
        } else {
            l
        };
        return c <= STORABLE;
    }
    let last_window = LAST / p;
    match config.algorithm {
        Algorithm::Gcra => p / l >= 1 && b * (p / l) <= STORABLE,
        Algorithm::FixedWindow | Algorithm::SlidingWindow => {
            (last_window << bits(l)) + l <= STORABLE
        }
        Algorithm::SlidingLog => l <= 1 << 20 && l * (last_window + 1) <= STORABLE,
        algorithm => unimplemented!("no bounds for {algorithm:?}"),
    }
}

/// One limiter's state and rule, as docs/decision.md states them.
#[derive(Clone, Debug, PartialEq)]
pub enum Exact {
    /// T = ⌊P / L⌋, B, and the TAT (0 when fresh).
    Gcra { t: u128, b: u128, tat: u128 },
    /// L, P, and the count of the latest window anything was counted in.
    Fixed {
        l: u128,
        p: u128,
        window: u128,
        count: u128,
    },
    /// L, P, and the counts of the latest window anything was counted in and of the one
    /// before it.
    Sliding {
        l: u128,
        p: u128,
        window: u128,
        cur: u128,
        prev: u128,
    },
    /// L, P, every admitted unit's timestamp (ascending), and the latest time logged.
    Log {
        l: u128,
        p: u128,
        stamps: Vec<u128>,
        latest: u128,
    },
    /// A period of FOREVER: C units ever, u used. GCRA's keeps its reserve.
    Allowance { c: u128, used: u128, gcra: bool },
}

/// What a decision at `t` of this state reports, before `allowed`, `retry_after_ns` and
/// `wait_ns` are known.
fn decision(limit: u128, remaining: u128, reset_after_ns: u64) -> Decision {
    Decision {
        allowed: false,
        limit: limit as u64,
        remaining: remaining as u64,
        retry_after_ns: 0,
        reset_after_ns,
        wait_ns: 0,
    }
}

impl Exact {
    /// A fresh limiter of a `config` that [`valid`] accepts.
    pub fn new(config: &Config) -> Self {
        let (l, p) = (u128::from(config.limit), config.period().as_nanos());
        let b = if config.burst == 0 {
            l
        } else {
            u128::from(config.burst)
        };
        let gcra = config.algorithm == Algorithm::Gcra;
        if config.period() == Config::FOREVER {
            let c = if gcra { b } else { l };
            return Self::Allowance { c, used: 0, gcra };
        }
        match config.algorithm {
            Algorithm::Gcra => Self::Gcra {
                t: p / l,
                b,
                tat: 0,
            },
            Algorithm::FixedWindow => Self::Fixed {
                l,
                p,
                window: 0,
                count: 0,
            },
            Algorithm::SlidingWindow => Self::Sliding {
                l,
                p,
                window: 0,
                cur: 0,
                prev: 0,
            },
            Algorithm::SlidingLog => Self::Log {
                l,
                p,
                stamps: Vec::new(),
                latest: 0,
            },

            algorithm => unimplemented!("no model of {algorithm:?}"),
        }
    }

    /// The decision's `limit`: GCRA's burst, a window's limit, an allowance's C.
    pub fn limit(&self) -> u64 {
        (match self {
            Self::Gcra { b, .. } => *b,
            Self::Fixed { l, .. } | Self::Sliding { l, .. } | Self::Log { l, .. } => *l,
            Self::Allowance { c, .. } => *c,
        }) as u64
    }

    /// A reset (docs/keyed.md, "Resetting a limit"): new again from the latest time seen
    /// on. GCRA, the fixed window and an allowance are new at any time; the sliding
    /// window counter and the log still judge a request from before that time as made at
    /// it, so they keep their latest window or time and forget their counts.
    pub fn reset(&mut self) {
        match self {
            Self::Gcra { tat, .. } => *tat = 0,
            Self::Fixed { window, count, .. } => (*window, *count) = (0, 0),
            Self::Sliding { cur, prev, .. } => (*cur, *prev) = (0, 0),
            Self::Log { stamps, .. } => stamps.clear(),
            Self::Allowance { used, .. } => *used = 0,
        }
    }

    /// An acquire (`max_wait` `None`) or a reserve of `n` units at `now`; records what it
    /// admits.
    pub fn decide(&mut self, now: u64, n: u64, max_wait: Option<u64>) -> Result<Decision, Refused> {
        let reserves = matches!(self, Self::Gcra { .. } | Self::Allowance { gcra: true, .. });
        if max_wait.is_some() && !reserves {
            return Err(Refused::Unsupported);
        }
        if n > self.limit() {
            return Err(Refused::InsufficientCapacity);
        }
        let (now, n, w) = (
            u128::from(now),
            u128::from(n),
            u128::from(max_wait.unwrap_or(0)),
        );
        Ok(match self {
            Self::Gcra { t, b, tat } => gcra(*t, *b, tat, now, n, w),
            Self::Fixed {
                l,
                p,
                window,
                count,
            } => fixed(*l, *p, window, count, now, n),
            Self::Sliding {
                l,
                p,
                window,
                cur,
                prev,
            } => sliding(*l, *p, window, cur, prev, now, n),
            Self::Log {
                l,
                p,
                stamps,
                latest,
            } => log(*l, *p, stamps, latest, now, n),
            Self::Allowance { c, used, .. } => {
                let allowed = *used + n <= *c;
                if allowed {
                    *used += n;
                }
                Decision {
                    allowed,
                    retry_after_ns: if allowed { 0 } else { NEVER },
                    ..decision(*c, *c - *used, if *used > 0 { NEVER } else { 0 })
                }
            }
        })
    }
}

/// GCRA: admitted iff `max(TAT, t) + n·T − t ≤ τ + W` and the new TAT is storable.
fn gcra(t: u128, b: u128, tat: &mut u128, now: u128, n: u128, w: u128) -> Decision {
    let tau = b * t;
    // The most units a plain acquire takes at `now` from `tat`: m with
    // max(tat, now) + m·T − now ≤ τ and max(tat, now) + m·T ≤ 2⁶⁴ − 257.
    let remaining = |tat: u128| {
        let start = tat.max(now);
        let room = (tau + now)
            .saturating_sub(start)
            .min(STORABLE.saturating_sub(start));
        room / t
    };
    // Full (remaining = B) at x iff TAT ≤ x (any debt costs a unit) and x + τ is storable:
    // the first such x is max(TAT, now), if that one is.
    let reset = |tat: u128| {
        let full_at = tat.max(now);
        if full_at + tau > STORABLE {
            NEVER
        } else {
            (full_at - now) as u64
        }
    };
    let new_tat = (*tat).max(now) + n * t;
    let allowed = n == 0 || (new_tat - now <= tau + w && new_tat <= STORABLE);
    if !allowed {
        // The first condition holds from the first d with tat + n·T − (now + d) ≤ τ + W
        // (d = 0 once the TAT is not ahead: n·T ≤ τ). It holds for every later d, and
        // the second only fails later, so that d or never.
        let d = (*tat + n * t).saturating_sub(now + tau + w);
        let at = now + d;
        let storable = at <= LAST && (*tat).max(at) + n * t <= STORABLE;
        return Decision {
            retry_after_ns: if storable { d as u64 } else { NEVER },
            ..decision(b, remaining(*tat), reset(*tat))
        };
    }
    if n == 0 {
        return Decision {
            allowed,
            ..decision(b, remaining(*tat), reset(*tat))
        };
    }
    *tat = new_tat;
    Decision {
        allowed,
        wait_ns: (new_tat - now).saturating_sub(tau) as u64,
        ..decision(b, remaining(new_tat), reset(new_tat))
    }
}

/// Fixed window: the request counts in window ⌊t / P⌋, or in the latest window counted
/// in if that is later (time going backwards).
fn fixed(l: u128, p: u128, window: &mut u128, count: &mut u128, now: u128, n: u128) -> Decision {
    let k = (now / p).max(*window);
    let counted = if k == *window { *count } else { 0 };
    let allowed = counted + n <= l;
    let counted = if allowed { counted + n } else { counted };
    if allowed && n > 0 {
        (*window, *count) = (k, counted);
    }
    // The next window counts nothing: any n ≤ L fits there, and nothing before does.
    let next = until((k + 1) * p, now);
    Decision {
        allowed,
        retry_after_ns: if allowed { 0 } else { next },
        ..decision(l, l - counted, if counted > 0 { next } else { 0 })
    }
}

/// Sliding window counter: admitted iff `prev·(P − e) + (cur + n)·P ≤ L·P`, judged at the
/// start of the latest window counted in if the request is from an older one.
fn sliding(
    l: u128,
    p: u128,
    window: &mut u128,
    cur: &mut u128,
    prev: &mut u128,
    now: u128,
    n: u128,
) -> Decision {
    let at = now.max(*window * p);
    let k = at / p;
    let e = at - k * p;
    let (c, q) = if k == *window {
        (*cur, *prev)
    } else if k == *window + 1 {
        (0, *cur)
    } else {
        (0, 0)
    };
    let fits = |c: u128, q: u128, e: u128, m: u128| q * (p - e) + (c + m) * p <= l * p;
    let allowed = n == 0 || fits(c, q, e, n);
    let c = if allowed { c + n } else { c };
    if allowed && n > 0 {
        (*window, *cur, *prev) = (k, c, q);
    }
    let remaining = l.saturating_sub(c + (q * (p - e)).div_ceil(p));
    // Both windows count nothing from the end of the next window if this one counts,
    // else from the end of this one if the previous one does.
    let reset = if c > 0 {
        until((k + 2) * p, now)
    } else if q > 0 {
        until((k + 1) * p, now)
    } else {
        0
    };
    let mut retry = 0;
    if !allowed {
        // The first e' in a window, counting c and q, at which m units fit: q·(P − e') ≤
        // (L − c − m)·P ⟺ e' ≥ P − ⌊(L − c − m)·P / q⌋; none if that is P or more.
        let first = |c: u128, q: u128, from: u128, m: u128| -> Option<u128> {
            let room = (l * p).checked_sub((c + m) * p)?;
            // With q = 0 the previous window weighs nothing: from e' = 0.
            let needed = room
                .checked_div(q)
                .map_or(0, |units| p.saturating_sub(units));
            Some(needed.max(from)).filter(|&e| e < p)
        };
        let instant = match first(c, q, e, n) {
            Some(e) => k * p + e,
            // The next window weighs this one's count; the one after counts nothing.
            None => match first(0, c, 0, n) {
                Some(e) => (k + 1) * p + e,
                None => (k + 2) * p,
            },
        };
        retry = until(instant, now);
    }
    Decision {
        allowed,
        retry_after_ns: retry,
        ..decision(l, remaining, reset)
    }
}

/// Sliding log: admitted iff the units logged in `(t − P, t]` plus n are at most L; a
/// request older than the latest logged time is judged and logged at that time.
fn log(
    l: u128,
    p: u128,
    stamps: &mut Vec<u128>,
    latest: &mut u128,
    now: u128,
    n: u128,
) -> Decision {
    let at = now.max(*latest);
    // Entries that left the window never count again: every later request is judged at
    // `at` or later.
    let live: Vec<u128> = stamps.iter().copied().filter(|&s| s + p > at).collect();
    let count = live.len() as u128;
    let allowed = count + n <= l;
    let mut retry = 0;
    if allowed && n > 0 {
        *stamps = live;
        stamps.extend((0..n).map(|_| at));
        *latest = at;
    } else if !allowed {
        // n fit once all but L − n of the live entries left: the oldest of those to
        // leave last goes at its time + P.
        let oldest_staying = live[(count - (l - n)) as usize - 1];
        retry = until(oldest_staying + p, now);
    }
    let live: Vec<u128> = stamps.iter().copied().filter(|&s| s + p > at).collect();
    let reset = live.last().map_or(0, |&newest| until(newest + p, now));
    Decision {
        allowed,
        retry_after_ns: retry,
        ..decision(l, l - live.len() as u128, reset)
    }
}
