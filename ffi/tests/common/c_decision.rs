//! The Rust decision a C call wrote, to compare with a model's (shared by the tests and
//! the fuzzers, which include this file by path).

use librate::Decision;
use rate::rate_decision;

/// The decision in `out`, as the Rust API reports it.
pub fn decision_of(out: &rate_decision) -> Decision {
    Decision {
        allowed: out.allowed == 1,
        limit: out.limit,
        remaining: out.remaining,
        retry_after_ns: out.retry_after_ns,
        reset_after_ns: out.reset_after_ns,
        wait_ns: out.wait_ns,
    }
}
