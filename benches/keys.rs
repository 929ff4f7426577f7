//! The keys the keyed benches visit: `u64`s in one shuffled order, stepped through so that
//! each call's key differs from the last one's.

/// The keys `0..count` in a random order (a fixed-seed xorshift Fisher-Yates shuffle).
pub(crate) fn shuffled(count: u64) -> Vec<u64> {
    let mut keys: Vec<u64> = (0..count).collect();
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    for i in (1..keys.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        keys.swap(i, (state % (i as u64 + 1)) as usize);
    }
    keys
}

/// Steps through `keys` forever, one a call, in their order.
pub(crate) fn cycle(keys: &[u64]) -> impl FnMut() -> u64 + '_ {
    let mut next = 0;
    // A compare, not `%`: a division per call would cost as much as a decision.
    move || {
        next += 1;
        if next == keys.len() {
            next = 0;
        }
        keys[next]
    }
}
