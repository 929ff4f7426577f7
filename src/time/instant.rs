//! [`Instant`], a point on librate's timeline, as the public API takes explicit times.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

use super::clock::now_ns;

/// A point on librate's timeline: nanoseconds since an origin the caller chooses (`0` for
/// a test's own clock) or, from [`Instant::now`], since `CLOCK_MONOTONIC`'s
/// ([`now_ns`]). The `_at` forms of every operation take one; a limiter
/// decides on one timeline, whichever it is (docs/clock.md).
///
/// The timeline is `u64` nanoseconds, from [`Instant::ZERO`] to [`Instant::MAX`] (about
/// 584 years): adding a [`Duration`] saturates at `MAX`, the instant a period of
/// [`Config::FOREVER`](crate::Config::FOREVER) never reaches, and subtracting one at `ZERO`.
///
/// ```
/// use librate::{Config, Instant, Limiter};
/// use std::time::Duration;
/// let limiter = Limiter::new(&Config::per_second(1)).unwrap();
/// let start = Instant::from_nanos(0);
/// assert!(limiter.acquire_at(1, start).unwrap().allowed);
/// let denied = limiter.acquire_at(1, start + Duration::from_millis(400)).unwrap();
/// assert_eq!(denied.retry_after(), Duration::from_millis(600));
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The timeline's first instant, 0 ns.
    pub const ZERO: Self = Self(0);

    /// The timeline's last instant, `u64::MAX` ns.
    pub const MAX: Self = Self(u64::MAX);

    /// The time now on librate's clock, [`now_ns`].
    #[inline]
    pub fn now() -> Self {
        Self(now_ns())
    }

    /// The instant `nanos` nanoseconds after the timeline's origin.
    #[inline]
    pub const fn from_nanos(nanos: u64) -> Self {
        Self(nanos)
    }

    /// Nanoseconds since the timeline's origin.
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// `self + duration`, or `None` past [`Instant::MAX`].
    #[inline]
    pub const fn checked_add(self, duration: Duration) -> Option<Self> {
        match self.0.checked_add(nanos(duration)) {
            Some(sum) if duration.as_nanos() <= u64::MAX as u128 => Some(Self(sum)),
            _ => None,
        }
    }

    /// How long after `earlier` this is, or `None` if it is before it.
    #[inline]
    pub const fn checked_duration_since(self, earlier: Self) -> Option<Duration> {
        match self.0.checked_sub(earlier.0) {
            Some(nanos) => Some(Duration::from_nanos(nanos)),
            None => None,
        }
    }

    /// How long after `earlier` this is, or zero if it is before it.
    #[inline]
    pub const fn saturating_duration_since(self, earlier: Self) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

/// A duration's nanoseconds, `u64::MAX` for any longer than that (about 584 years): the
/// timeline's length, past which every period and wait means "never".
#[inline]
pub(crate) const fn nanos(duration: Duration) -> u64 {
    let nanos = duration.as_nanos();
    if nanos > u64::MAX as u128 {
        u64::MAX
    } else {
        nanos as u64
    }
}

/// Saturates at [`Instant::MAX`].
impl Add<Duration> for Instant {
    type Output = Self;

    #[inline]
    fn add(self, duration: Duration) -> Self {
        Self(self.0.saturating_add(nanos(duration)))
    }
}

/// Saturates at [`Instant::MAX`].
impl AddAssign<Duration> for Instant {
    #[inline]
    fn add_assign(&mut self, duration: Duration) {
        *self = *self + duration;
    }
}

/// Saturates at [`Instant::ZERO`].
impl Sub<Duration> for Instant {
    type Output = Self;

    #[inline]
    fn sub(self, duration: Duration) -> Self {
        Self(self.0.saturating_sub(nanos(duration)))
    }
}

/// [`saturating_duration_since`](Instant::saturating_duration_since): zero if `earlier`
/// is later.
impl Sub for Instant {
    type Output = Duration;

    #[inline]
    fn sub(self, earlier: Self) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// Nanoseconds, as `Instant(1500ns)`: an instant has no calendar meaning.
impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Instant({}ns)", self.0)
    }
}
