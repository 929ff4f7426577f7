//! A script call's reply turned into decisions: what every client, sync or async, reads
//! back from `keys.lua` and `policy.lua`.

use super::RedisError;
use crate::decision::Decision;
use crate::policy::MAX_RULES;

/// The decisions of a script call for `keys` keys: one key's reply is its decision, several
/// keys' the array of theirs, each a decision or that key's error; an error for the whole
/// call (OOM, READONLY: the script wrote nothing) is every key's.
pub(super) fn group_decisions(
    reply: redis::Value,
    keys: usize,
) -> Vec<Result<Decision, RedisError>> {
    match reply {
        _ if keys == 1 => vec![reply_decision(reply)],
        redis::Value::Array(replies) if replies.len() == keys => {
            replies.into_iter().map(reply_decision).collect()
        }
        redis::Value::ServerError(error) => (0..keys)
            .map(|_| Err(RedisError::Redis(error.clone().into())))
            .collect(),
        other => {
            let reply = format!("{other:?}");
            (0..keys)
                .map(|_| Err(RedisError::Reply(reply.clone())))
                .collect()
        }
    }
}

/// One key's reply: a decision, or the error Redis answered.
fn reply_decision(reply: redis::Value) -> Result<Decision, RedisError> {
    match reply {
        redis::Value::Array(fields) => decision_of(&fields),
        redis::Value::ServerError(error) => Err(RedisError::Redis(error.into())),
        other => Err(RedisError::Reply(format!("{other:?}"))),
    }
}

/// The decision a script returned: `{allowed, limit, remaining, retry_after_ns,
/// reset_after_ns, wait_ns}`, integers or decimal strings.
fn decision_of(reply: &[redis::Value]) -> Result<Decision, RedisError> {
    let field = |index: usize| -> Result<u64, RedisError> {
        let value = reply
            .get(index)
            .ok_or_else(|| RedisError::Reply(format!("{reply:?}")))?;
        redis::from_redis_value::<u64>(value).map_err(|_| RedisError::Reply(format!("{reply:?}")))
    };
    if reply.len() != 6 {
        return Err(RedisError::Reply(format!("{reply:?}")));
    }
    Ok(Decision {
        allowed: field(0)? == 1,
        limit: field(1)?,
        remaining: field(2)?,
        retry_after_ns: field(3)?,
        reset_after_ns: field(4)?,
        wait_ns: field(5)?,
    })
}

/// The rules' decisions a policy's script returned, in rule order, for a policy of `rules`
/// rules; its error reply (a key holding something else) is the request's error.
pub(super) fn rule_decisions(
    reply: redis::Value,
    rules: usize,
) -> Result<[Decision; MAX_RULES], RedisError> {
    let mut decisions = [Decision::default(); MAX_RULES];
    match reply {
        redis::Value::Array(replies) if replies.len() == rules && rules <= MAX_RULES => {
            for (decision, reply) in decisions.iter_mut().zip(replies) {
                *decision = reply_decision(reply)?;
            }
            Ok(decisions)
        }
        redis::Value::ServerError(error) => Err(RedisError::Redis(error.into())),
        other => Err(RedisError::Reply(format!("{other:?}"))),
    }
}
