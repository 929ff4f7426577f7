//! Leases (docs/leases.md): a global rule, kept in Redis, divided into shares that holders
//! decide from in process, so that a limit across hosts costs an atomic operation per
//! decision and a script call per renewal, and never admits more than the rule alone.
//!
//! `rule.rs` is the rule and the timing of its leases, `share.rs` a share and the local
//! GCRA deciding from it (in the holder's words: `gcra_share.rs`), `grant.rs` the lease
//! script's arguments and answers, `holder.rs` a holder without I/O and its decisions,
//! `renew.rs` its renewals, `keyed.rs` the leases of a keyed rule's hot keys and
//! `direct.rs` a request decided in Redis. The scripts are `src/redis/lua/lease_gcra.lua`
//! and `lease_fixed_window.lua` after `lease_common.lua`, one for every language;
//! `redis.rs` sends them over the `redis` crate.

mod direct;
mod gcra_share;
mod grant;
mod holder;
mod host;
mod keyed;
#[cfg(feature = "redis")]
mod keyed_redis;
#[cfg(feature = "redis")]
mod redis;
mod renew;
#[cfg(feature = "redis")]
mod renewer;
mod rule;
mod share;
mod stats;
mod window_share;
mod words;

#[cfg(test)]
mod tests;

pub use direct::decision_of;
pub use grant::{Grant, GrantStatus, Renewal, ReplyError};
pub use holder::{Fallback, HolderState, LeaseHolder};
pub use keyed::{KeyRenewal, KeyedLeaseHolder};
#[cfg(feature = "redis")]
pub use keyed_redis::{acquire_in_redis, renew_keys, KeyedLeasedLimiter};
#[cfg(feature = "redis")]
pub use redis::{release, renew, LeasedLimiter};
pub use rule::LeaseRule;
pub use share::Share;
pub use stats::LeaseStats;

/// A lease script's source: `lease_common.lua`'s functions, their names declared local
/// first (a script defines no global), then the algorithm's entry, from `src/redis/lua/`.
macro_rules! script {
    ($name:literal) => {
        concat!(
            "local lease_now, lease_arguments_refused, lease_open, fair_level\n",
            include_str!("../redis/lua/lease_common.lua"),
            include_str!(concat!("../redis/lua/", $name, ".lua"))
        )
    };
}

/// The lease script for GCRA rules: its one key is the rule's hash, its arguments a
/// [`Renewal`]'s.
pub const GCRA_SCRIPT: &str = script!("lease_gcra");

/// The lease script for fixed-window rules, called as [`GCRA_SCRIPT`] is.
pub const FIXED_WINDOW_SCRIPT: &str = script!("lease_fixed_window");

/// The scripts with a NUL, for C.
const GCRA_SCRIPT_WITH_NUL: &str = concat!(script!("lease_gcra"), "\0");
const FIXED_WINDOW_SCRIPT_WITH_NUL: &str = concat!(script!("lease_fixed_window"), "\0");
