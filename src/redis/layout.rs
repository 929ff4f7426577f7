//! Where a key's state lives in Redis: the Redis key of each limit, so that the keys of
//! one request share a Cluster hash slot (one script call may only name keys of one slot).
//!
//! A single limiter keeps `key` at `prefix{key}`: the braces make the key its hash tag,
//! and a request names one Redis key, so it is always in one slot. (A prefix holding a
//! `{` before a `}` is the tag itself then, putting every key of the prefix in one slot.)
//!
//! A policy keeps rule `i` of `key` at `prefix{=key}:i` (`i` in decimal): every rule's key
//! starts with the same `prefix{=key}`, and its first `{` opens a tag that is never empty
//! (the `=` keeps an empty key's tag from being `{}`, which would hash each whole key
//! alone), so Redis hashes the same bytes for every rule. The prefix may hold neither `{`
//! nor `}` ([`ConfigError::RedisPrefix`]): the tag is then always the key's, and the
//! subjects of one prefix spread over the Cluster.

use crate::error::ConfigError;

/// The Redis key of `key`'s state under `prefix`, for a single limiter.
pub(crate) fn limiter_key(prefix: &[u8], key: &[u8]) -> Vec<u8> {
    let mut full = Vec::with_capacity(prefix.len() + key.len() + 2);
    full.extend_from_slice(prefix);
    full.push(b'{');
    full.extend_from_slice(key);
    full.push(b'}');
    full
}

/// The Redis keys of `key`'s `rules` rules under `prefix`, for a policy, in rule order.
pub(crate) fn policy_keys(prefix: &[u8], key: &[u8], rules: usize) -> Vec<Vec<u8>> {
    let mut common = Vec::with_capacity(prefix.len() + key.len() + 5);
    common.extend_from_slice(prefix);
    common.extend_from_slice(b"{=");
    common.extend_from_slice(key);
    common.extend_from_slice(b"}:");
    (0..rules)
        .map(|rule| {
            let mut full = common.clone();
            full.extend_from_slice(rule.to_string().as_bytes());
            full
        })
        .collect()
}

/// Checks a policy's prefix: neither `{` nor `}` in it.
///
/// # Errors
/// [`ConfigError::RedisPrefix`].
pub(crate) fn check_policy_prefix(prefix: &[u8]) -> Result<(), ConfigError> {
    if prefix.iter().any(|&byte| byte == b'{' || byte == b'}') {
        Err(ConfigError::RedisPrefix {
            prefix: prefix.to_vec(),
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::slot;

    #[test]
    fn every_rule_of_a_key_shares_its_slot() {
        for key in [&b""[..], b"alice", b"}", b"{", b"a}b", b"{x}", b"=", b"{}"] {
            let keys = policy_keys(b"api:", key, 8);
            let first = slot(&keys[0]);
            assert!(keys.iter().all(|each| slot(each) == first), "{key:?}");
        }
        assert_eq!(
            policy_keys(b"api:", b"bob", 2),
            [b"api:{=bob}:0".to_vec(), b"api:{=bob}:1".to_vec()]
        );
        // The tag is "=" then the key up to its first "}".
        assert_eq!(slot(&policy_keys(b"p", b"a}b", 1)[0]), slot(b"=a"));
        assert_eq!(slot(&policy_keys(b"p", b"", 1)[0]), slot(b"="));
    }

    #[test]
    fn a_policy_prefix_holds_no_brace() {
        assert!(check_policy_prefix(b"api:").is_ok());
        for prefix in [&b"{"[..], b"}", b"a{b}", b"x{}"] {
            let prefix = prefix.to_vec();
            assert_eq!(
                check_policy_prefix(&prefix),
                Err(ConfigError::RedisPrefix { prefix })
            );
        }
    }
}
