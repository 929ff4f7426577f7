//! The `RateLimit-Policy`, `RateLimit` and `Retry-After` values, written byte for byte as
//! the Python and Go middleware write them (docs/tower.md; the three are held to one
//! table of vectors, bindings/testdata/ratelimit_headers.json and policy_headers.json).

use crate::config::{Algorithm, Config};
use crate::decision::Decision;

/// The largest Integer of RFC 9651 (Structured Field Values, §3.3.1): 15 digits.
const SF_INTEGER_MAX: u64 = 999_999_999_999_999;

/// The longest duration Go's middleware reports: its `time.Duration` saturates at
/// 2⁶³ − 1 ns (about 292 years, "never"), and the fields must agree with it.
const DURATION_MAX_NS: u64 = i64::MAX as u64;

const NS_PER_SECOND: u64 = 1_000_000_000;

/// A count clamped to an sf-integer.
fn sf_integer(value: u64) -> u64 {
    value.min(SF_INTEGER_MAX)
}

/// A duration as delay-seconds: rounded up (a client that waits that long is admitted),
/// clamped as Go clamps it.
pub(super) fn seconds(ns: u64) -> u64 {
    sf_integer(ns.min(DURATION_MAX_NS).div_ceil(NS_PER_SECOND))
}

/// `name` quoted as an sf-string (RFC 9651 §3.3.3), `"` and `\` escaped; `None` if it
/// holds a character outside printable ASCII, which an sf-string cannot.
pub(super) fn sf_string(name: &str) -> Option<String> {
    let mut quoted = String::with_capacity(name.len() + 2);
    quoted.push('"');
    for c in name.chars() {
        if !(' '..='~').contains(&c) {
            return None;
        }
        if c == '"' || c == '\\' {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    Some(quoted)
}

/// One `RateLimit-Policy` member: the rule's quota `q` per window of `w` seconds, the
/// period rounded up to whole seconds (at least 1) and the limit scaled to that window,
/// rounded down, so the advertised rate never exceeds the real one.
fn policy_member(name: &str, rule: &Config) -> String {
    let window = seconds(rule.period_ns).max(1);
    // limit · window ns / period in 128 bits: no product of two u64 overflows it. A valid
    // rule's period is at least 1 ns.
    let quota = u128::from(rule.limit) * u128::from(window * NS_PER_SECOND)
        / u128::from(rule.period_ns.max(1));
    let quota = u64::try_from(quota).map_or(SF_INTEGER_MAX, sf_integer);
    format!("{name};q={quota};w={window}")
}

/// The `RateLimit-Policy` value: every rule, `names[i]` (an sf-string already) naming
/// `rules[i]`, joined by ", " as RFC 9651 §4.1.1 serializes a List.
pub(super) fn policy(names: &[String], rules: &[Config]) -> String {
    let members: Vec<String> = names
        .iter()
        .zip(rules)
        .map(|(name, rule)| policy_member(name, rule))
        .collect();
    members.join(", ")
}

/// The `RateLimit` value reporting one rule, `name` (an sf-string), by its own decision:
/// `r` its remaining units; `t` the seconds until its quota is whole again when
/// admitted, or until the request would be admitted when denied (so `t` equals
/// `Retry-After`).
pub(super) fn ratelimit(name: &str, own: &Decision) -> String {
    let window = if own.allowed {
        own.reset_after_ns
    } else {
        own.retry_after_ns
    };
    format!(
        "{name};r={};t={}",
        sf_integer(own.remaining),
        seconds(window)
    )
}

/// The rule a policy's `RateLimit` reports, of the rules `takes_part` keeps (those the
/// request costs, shadow rules left out). Denied: of the rules that denied, the one with
/// the longest `retry_after_ns` (the policy's own, so `t` equals `Retry-After`).
/// Admitted: the least `remaining`, and of those the longest `reset_after_ns` (the rule
/// whose quota comes back last). Ties go to the first rule; `None` when no rule takes
/// part.
pub(super) fn binding_rule(
    allowed: bool,
    rules: &[Decision],
    takes_part: impl Fn(usize) -> bool,
) -> Option<usize> {
    let mut binding: Option<usize> = None;
    for (index, rule) in rules.iter().enumerate() {
        if !takes_part(index) {
            continue;
        }
        let binds = match binding.map(|best| &rules[best]) {
            None => true,
            Some(best) if allowed => {
                rule.remaining < best.remaining
                    || rule.remaining == best.remaining && rule.reset_after_ns > best.reset_after_ns
            }
            Some(best) => {
                !rule.allowed && (best.allowed || rule.retry_after_ns > best.retry_after_ns)
            }
        };
        if binds {
            binding = Some(index);
        }
    }
    binding
}

/// The most units `rule` admits at once: GCRA's burst (0 means the limit), a window's
/// limit. A request's cost of the rule may not exceed it.
pub(super) fn capacity(rule: &Config) -> u64 {
    if rule.algorithm == Algorithm::Gcra && rule.burst != 0 {
        rule.burst
    } else {
        rule.limit
    }
}

/// The `Retry-After` of a 503 for a table full of live keys: one period of the first
/// rule, in whole seconds rounded up, at least 1 (as the Python middleware answers).
pub(super) fn table_full_retry_after(rule: &Config) -> u64 {
    rule.period_ns.div_ceil(NS_PER_SECOND).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const SECOND: u64 = NS_PER_SECOND;

    #[test]
    fn seconds_round_up_and_clamp_to_go_s_longest_duration() {
        assert_eq!(seconds(0), 0);
        assert_eq!(seconds(1), 1);
        assert_eq!(seconds(SECOND), 1);
        assert_eq!(seconds(SECOND + 1), 2);
        // 2⁶³ − 1 ns is 9,223,372,036.854… s: 9,223,372,037 rounded up, "never" included.
        assert_eq!(seconds(u64::MAX), 9_223_372_037);
    }

    #[test]
    fn a_name_outside_printable_ascii_is_no_sf_string() {
        assert_eq!(sf_string(r#"a "b" \c"#).unwrap(), r#""a \"b\" \\c""#);
        assert_eq!(sf_string("tab\there"), None);
        assert_eq!(sf_string("é"), None);
    }

    #[test]
    fn three_per_one_and_a_half_seconds_is_four_per_two() {
        let rule = Config::gcra(3, Duration::from_nanos(1_500_000_000));
        assert_eq!(policy(&["\"d\"".into()], &[rule]), "\"d\";q=4;w=2");
    }

    #[test]
    fn a_full_table_s_retry_after_is_one_period_at_least_one_second() {
        assert_eq!(
            table_full_retry_after(&Config::gcra(10, Duration::from_nanos(60 * SECOND))),
            60
        );
        assert_eq!(
            table_full_retry_after(&Config::gcra(10, Duration::from_nanos(SECOND / 10))),
            1
        );
    }
}
