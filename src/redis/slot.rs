//! The Redis Cluster hash slot of a key: CRC16 (XMODEM) of its hash tag (the bytes between
//! the first `{` and the first `}` after it, when there are any) or of the whole key,
//! modulo 16384, as every Cluster node computes it. A batch groups its keys by slot, since
//! one script call may only name keys of one slot on a Cluster.

/// The number of hash slots of a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// The hash slot of the Redis key `key`.
///
/// The keys of one request always share a slot. A single limiter keeps `key` at
/// `prefix{key}` (`RedisLimiter::redis_key`, with the `redis` cargo feature), one Redis
/// key a request. A policy keeps rule `i` of `key` at `prefix{=key}:i`
/// (`RedisPolicy::redis_keys`): every rule's key starts with `prefix{=key}`, where the
/// first `{` opens a tag that is never empty (an empty key's tag is `=`), and the prefix
/// may hold no brace, so Redis hashes the same bytes for every rule.
///
/// ```
/// use librate::redis::slot;
/// // The examples of the Redis Cluster specification.
/// assert_eq!(slot(b"123456789"), 12739);
/// assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
/// assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
/// // A policy's rules of the empty key: the tag "=" for each, where "{}" would have
/// // hashed each whole key.
/// assert_eq!(slot(b"api:{=}:0"), slot(b"api:{=}:1"));
/// ```
pub fn slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) % SLOTS
}

/// The bytes of `key` its slot is computed from.
fn hash_tag(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&byte| byte == b'{') else {
        return key;
    };
    match key[open + 1..].iter().position(|&byte| byte == b'}') {
        // An empty tag (`{}`) hashes the whole key.
        Some(0) | None => key,
        Some(length) => &key[open + 1..open + 1 + length],
    }
}

/// CRC-16/XMODEM (polynomial 0x1021, initial value 0), bit by bit: a batch hashes a few
/// short keys, where a table would cost more cache than it saves.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}
