//! What a holder sends the lease script and what it answers (docs/leases.md, the
//! protocol), checked before anything of it is believed.

use super::rule::{Divided, LeaseRule, SCALE};
use super::share::Share;
use crate::time::Instant;
use std::fmt;

/// The largest time in whole microseconds the script holds exactly.
const EXACT_US: u64 = (1 << 53) - 1;

/// One call of the lease script a holder asks for: its arguments (the script's ARGV; the
/// rule's hash is its one key, the caller's), and when the holder asked, by its clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renewal {
    pub(crate) sent_at: Instant,
    args: Vec<String>,
}

impl Renewal {
    /// A renewal of `holder`'s lease with `demand` millionths of the rule's rate, asked at
    /// `sent_at`; `at` is the time the script decides at, `None` for the server's clock.
    pub(crate) fn renew(
        rule: &LeaseRule,
        holder: &str,
        demand: u64,
        sent_at: Instant,
        at: bool,
    ) -> Self {
        // On a caller's timeline, the script counts whole microseconds (below 2⁵³): the
        // holder then counts from the same floored instant, never after the script's.
        let (sent_at, now) = if at {
            let micros = (sent_at.as_nanos() / 1000).min(EXACT_US);
            (Instant::from_nanos(micros * 1000), micros.to_string())
        } else {
            (sent_at, String::new())
        };
        let [first, second] = rule.script_args();
        let args = vec![
            "renew".to_owned(),
            now,
            first.to_string(),
            second.to_string(),
            rule.lease_us().to_string(),
            holder.to_owned(),
            demand.to_string(),
        ];
        Self { sent_at, args }
    }

    /// The hand-back of `holder`'s share, which no longer decides, with the units of a
    /// window's count it left `unused` (0 for GCRA).
    pub(crate) fn release(rule: &LeaseRule, holder: &str, sent_at: Instant, unused: u64) -> Self {
        let mut renewal = Self::renew(rule, holder, unused, sent_at, false);
        renewal.set_op("release");
        renewal
    }

    /// The call made with `op` ('renew' by default), the script's first argument.
    pub(super) fn set_op(&mut self, op: &str) {
        op.clone_into(&mut self.args[0]);
    }

    /// A renewal asked for at `sent_at` whose arguments went their own way (the C ABI's
    /// callers keep them): what applying its answer needs.
    #[doc(hidden)]
    pub fn sent(sent_at: Instant) -> Self {
        Self {
            sent_at,
            args: Vec::new(),
        }
    }

    /// The script's arguments.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// When the holder asked.
    pub fn sent_at(&self) -> Instant {
        self.sent_at
    }
}

/// Whether the script granted a share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantStatus {
    /// A share (perhaps none: rate and burst 0), held for `lease_us` from the call.
    Granted,
    /// No grant: Redis made the rule afresh within a lease length (it had not seen it, or
    /// lost it), so a lease from before may still run; ask again after `lease_us`.
    Quiet,
}

/// The lease script's answer to a renewal, as a client reads it: `{status, rate, burst,
/// lease_us, epoch, held_rate, held_burst, holders, window}`. A fixed window's share is a
/// count of the window numbered `window`: its `rate` is 0 and its `burst` the count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// Granted or quiet.
    pub status: GrantStatus,
    /// The holder's share from now on.
    pub share: Share,
    /// How long the share is held, from the script's time, in microseconds.
    pub lease_us: u64,
    /// When Redis made the rule's state, which changes when it is lost.
    pub epoch: u64,
    /// Everything all holders may still be deciding from, this one's included.
    pub held: Share,
    /// The holders that asked within a lease, this one included.
    pub holders: u64,
    /// A fixed window's number (its start over its period), 0 for GCRA.
    pub window: u64,
}

impl Grant {
    /// Reads the script's reply fields (`status` and eight integers), as every client
    /// passes them.
    ///
    /// # Errors
    /// A [`ReplyError`] naming the first field that the script never answers.
    pub fn from_fields(status: &[u8], fields: [u64; 8]) -> Result<Self, ReplyError> {
        let status = match status {
            b"granted" => GrantStatus::Granted,
            b"quiet" => GrantStatus::Quiet,
            other => {
                return Err(ReplyError {
                    field: "status",
                    value: String::from_utf8_lossy(other).into_owned(),
                })
            }
        };
        let [rate, burst, lease_us, epoch, held_rate, held_burst, holders, window] = fields;
        Ok(Self {
            status,
            share: Share { rate, burst },
            lease_us,
            epoch,
            held: Share {
                rate: held_rate,
                burst: held_burst,
            },
            holders,
            window,
        })
    }

    /// This grant, if the script of `rule` could have answered it.
    pub(crate) fn checked(&self, rule: &LeaseRule) -> Result<&Self, ReplyError> {
        let bad = |field: &'static str, value: u64| {
            Err(ReplyError {
                field,
                value: value.to_string(),
            })
        };
        let Share { rate, burst } = self.share;
        let most = rule.most();
        let (rate_bound, lease_bound) = match rule.divided() {
            Divided::Gcra { .. } => (SCALE, rule.lease_us()),
            Divided::FixedWindow { period_us, .. } => (0, period_us),
        };
        if rate > rate_bound || (rate_bound > 0 && (rate == 0) != (burst == 0)) {
            return bad("rate", rate);
        }
        if burst > most {
            return bad("burst", burst);
        }
        if self.lease_us > lease_bound {
            return bad("lease_us", self.lease_us);
        }
        if self.held.rate > rate_bound {
            return bad("held_rate", self.held.rate);
        }
        if self.held.burst > most {
            return bad("held_burst", self.held.burst);
        }
        if rate_bound > 0 && self.window != 0 {
            return bad("window", self.window);
        }
        Ok(self)
    }
}

/// A reply the lease script never gives: nothing of it was applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplyError {
    /// The field, as the script names it.
    pub field: &'static str,
    /// Its value.
    pub value: String,
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the lease script never answers {} {}: nothing applied",
            self.field, self.value
        )
    }
}

impl std::error::Error for ReplyError {}
