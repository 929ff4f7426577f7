//! Division by a divisor fixed when a limiter is configured, done as a multiply and shifts.
//!
//! A 64-bit `div` takes many times a multiply's latency on x86-64 (Agner Fog's instruction
//! tables list it per part) and was the largest single cost of a full decision
//! (`remaining` is a quotient by the emission interval).
//! This is the round-up method of Granlund and Montgomery ("Division by invariant integers
//! using multiplication", 1994) in the form libdivide uses for `u64`: exact for every
//! dividend, checked against `/` in the tests below.
//!
//! ```text
//! d = 2^k:             x / d = x >> k
//! otherwise, k = ⌊log₂ d⌋, m = ⌊2^(64+k) / d⌋ + 1 (doubled, +1 if the remainder says
//! so, when m alone is not precise enough), q = ⌊x·m / 2^64⌋:
//!                      x / d = q >> k               (m precise enough)
//!                      x / d = ((x − q)/2 + q) >> k (the 65-bit multiplier case)
//! ```

/// A non-zero `u64` divisor, prepared for [`divide`](Self::divide).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Divisor {
    /// The low 64 bits of the multiplier; 0 for a power of two (a shift alone).
    magic: u64,
    /// k = ⌊log₂ d⌋.
    shift: u32,
    /// Whether the multiplier has a 65th bit, folded in by the add-and-halve step.
    add: bool,
}

impl Divisor {
    /// Prepares division by `divisor`, which must not be 0.
    pub(crate) fn new(divisor: u64) -> Self {
        debug_assert!(divisor > 0, "callers validate the divisor");
        let shift = 63 - divisor.max(1).leading_zeros();
        if divisor.is_power_of_two() {
            return Self {
                magic: 0,
                shift,
                add: false,
            };
        }
        // d > 2^k, so 2^(64+k) / d < 2^64 and fits.
        let numerator = 1u128 << (64 + shift);
        let quotient = (numerator / u128::from(divisor)) as u64;
        let remainder = (numerator % u128::from(divisor)) as u64;
        if divisor - remainder < 1 << shift {
            // m = ⌊2^(64+k) / d⌋ + 1 is within the error bound: a 64-bit multiplier.
            Self {
                magic: quotient + 1,
                shift,
                add: false,
            }
        } else {
            // Use 2^(65+k) / d, a 65-bit multiplier whose top bit the add step supplies.
            let twice_remainder = remainder.wrapping_add(remainder);
            let carry = twice_remainder >= divisor || twice_remainder < remainder;
            Self {
                magic: quotient
                    .wrapping_add(quotient)
                    .wrapping_add(u64::from(carry))
                    .wrapping_add(1),
                shift,
                add: true,
            }
        }
    }

    /// The divisor as two words (the multiplier; the shift, with the add step in bit 32),
    /// for a rule kept in atomic words (`Gcra::to_words`).
    pub(crate) fn to_words(self) -> [u64; 2] {
        [
            self.magic,
            u64::from(self.shift) | u64::from(self.add) << 32,
        ]
    }

    /// The divisor [`to_words`](Self::to_words) gave `words` for.
    pub(crate) fn from_words([magic, shift]: [u64; 2]) -> Self {
        Self {
            magic,
            // The shift is below 64: the low byte holds it whole.
            shift: (shift & 0xFF) as u32,
            add: shift >> 32 != 0,
        }
    }

    /// `dividend / d`, exactly.
    #[inline(always)]
    pub(crate) fn divide(&self, dividend: u64) -> u64 {
        if self.magic == 0 {
            return dividend >> self.shift;
        }
        let high = ((u128::from(dividend) * u128::from(self.magic)) >> 64) as u64;
        if self.add {
            // (x − q)/2 + q = (x + q)/2 without overflowing.
            (((dividend - high) >> 1) + high) >> self.shift
        } else {
            high >> self.shift
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn check(divisor: u64, dividend: u64) {
        assert_eq!(
            Divisor::new(divisor).divide(dividend),
            dividend / divisor,
            "{dividend} / {divisor}"
        );
    }

    #[test]
    fn small_divisors_and_dividends_exhaustively() {
        for divisor in 1..=300 {
            for dividend in 0..=2000 {
                check(divisor, dividend);
            }
        }
    }

    #[test]
    fn dividends_near_every_multiple_and_the_extremes() {
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = move || {
            // xorshift64*: any spread of bit patterns will do.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_F491_4F6C_DD1D)
        };
        let mut divisors: Vec<u64> = vec![1, 2, 3, 7, 10, 1_000_000, 1_000_000_000, u64::MAX];
        for bits in 1..64 {
            let power = 1u64 << bits;
            divisors.extend([power - 1, power, power + 1]);
        }
        for _ in 0..2000 {
            let width = next() % 64;
            divisors.push((next() >> width).max(1));
        }
        for &divisor in &divisors {
            for dividend in [
                0,
                1,
                divisor - 1,
                divisor,
                u64::MAX,
                u64::MAX - 1,
                u64::MAX / 2,
            ] {
                check(divisor, dividend);
            }
            for _ in 0..200 {
                let width = next() % 64;
                let dividend = next() >> width;
                check(divisor, dividend);
                // Around a multiple of the divisor, where a quotient off by one shows.
                let multiple = (dividend / divisor).saturating_mul(divisor);
                check(divisor, multiple);
                check(divisor, multiple.saturating_sub(1));
            }
        }
    }
}
