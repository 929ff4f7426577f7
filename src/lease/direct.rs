//! A request decided in Redis by the lease script, against what the leases leave (a keyed
//! rule's keys that this holder does not lease: docs/leases.md, keys): its arguments, and
//! the decision its answer holds, checked before it is believed.

use super::grant::{Renewal, ReplyError};
use super::rule::LeaseRule;
use crate::decision::Decision;
use crate::time::Instant;

impl Renewal {
    /// The script call that decides `n` units of `rule` in Redis: at `at` on the caller's
    /// timeline, or by the server's clock (`None`).
    pub fn acquire(rule: &LeaseRule, n: u64, at: Option<Instant>) -> Self {
        let mut call = Self::renew(rule, "", n, at.unwrap_or(Instant::ZERO), at.is_some());
        call.set_op("acquire");
        call
    }
}

/// The decision of an `acquire` call's reply, `{allowed, limit, remaining,
/// retry_after_us, reset_after_us}`, as every client passes it (integers, any sign), for
/// `n` units of `rule`.
///
/// # Errors
/// A [`ReplyError`] naming the first field the script never answers; nothing is believed.
pub fn decision_of(rule: &LeaseRule, n: u64, fields: [i64; 5]) -> Result<Decision, ReplyError> {
    let [allowed, limit, remaining, retry_after_us, reset_after_us] = fields;
    let bad = |field: &'static str, value: i64| ReplyError {
        field,
        value: value.to_string(),
    };
    let most = rule.most();
    let within = |field, value: i64, bound: u64| match u64::try_from(value) {
        Ok(value) if value <= bound => Ok(value),
        _ => Err(bad(field, value)),
    };
    let allowed = match allowed {
        0 => false,
        1 => true,
        other => return Err(bad("allowed", other)),
    };
    let limit = within("limit", limit, most)?;
    let remaining = within("remaining", remaining, limit)?;
    // Times the script counts are whole microseconds below 2⁵³.
    let longest = (1u64 << 53) - 1;
    let retry_after_us = within("retry_after_us", retry_after_us, longest)?;
    let reset_after_us = within("reset_after_us", reset_after_us, longest)?;
    if allowed != (retry_after_us == 0) || (allowed && n > 0 && n > limit) {
        return Err(bad("allowed", i64::from(allowed)));
    }
    Ok(Decision {
        allowed,
        limit,
        remaining,
        retry_after_ns: retry_after_us * 1000,
        reset_after_ns: reset_after_us * 1000,
        wait_ns: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::time::Duration;

    fn rule() -> LeaseRule {
        // 10 a second, a burst of 10.
        LeaseRule::new(&Config::per_second(10), Duration::from_secs(2)).unwrap()
    }

    #[test]
    fn an_acquire_names_the_units_and_no_holder() {
        let call = Renewal::acquire(&rule(), 3, Some(Instant::from_nanos(1_500_999)));
        assert_eq!(
            call.args(),
            ["acquire", "1500", "100000000", "10", "2000000", "", "3"]
        );
        let by_server = Renewal::acquire(&rule(), 3, None);
        assert_eq!(by_server.args()[1], "");
    }

    #[test]
    fn a_reply_becomes_the_decision_in_nanoseconds() {
        let decision = decision_of(&rule(), 1, [1, 10, 9, 0, 100_000]).unwrap();
        assert_eq!(
            decision,
            Decision {
                allowed: true,
                limit: 10,
                remaining: 9,
                retry_after_ns: 0,
                reset_after_ns: 100_000_000,
                wait_ns: 0
            }
        );
        let denied = decision_of(&rule(), 2, [0, 2, 0, 50_000, 450_000]).unwrap();
        assert!(!denied.allowed);
        assert_eq!(denied.retry_after_ns, 50_000_000);
    }

    #[test]
    fn garbage_names_its_field() {
        let field = |fields| decision_of(&rule(), 1, fields).unwrap_err().field;
        assert_eq!(field([2, 10, 9, 0, 0]), "allowed");
        assert_eq!(field([1, 11, 9, 0, 0]), "limit");
        assert_eq!(field([1, 10, 11, 0, 0]), "remaining");
        assert_eq!(field([0, 10, 0, -1, 0]), "retry_after_us");
        assert_eq!(field([1, 10, 0, 0, -5]), "reset_after_us");
        // Admitted yet told to wait, or denied with no wait.
        assert_eq!(field([1, 10, 0, 7, 0]), "allowed");
        assert_eq!(field([0, 10, 0, 0, 0]), "allowed");
    }
}
