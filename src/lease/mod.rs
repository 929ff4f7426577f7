//! Leases (docs/leases.md): a global rule, kept in Redis, divided into shares that holders
//! decide from in process, so that a limit across hosts costs an atomic operation per
//! decision and a script call per renewal, and never admits more than the rule alone.
//!
//! `rule.rs` is the rule and the timing of its leases, `share.rs` a share and the local
//! GCRA deciding from it, `grant.rs` the lease script's arguments and answers, and
//! `holder.rs` a holder without I/O. The script is `src/redis/lua/lease_gcra.lua`, one for
//! every language; the Rust client that sends it is `librate::redis`'s.

mod grant;
mod holder;
#[cfg(feature = "redis")]
mod redis;
mod rule;
mod share;

pub use grant::{Grant, GrantStatus, Renewal, ReplyError};
pub use holder::{Fallback, HolderState, LeaseHolder};
#[cfg(feature = "redis")]
pub use redis::{release, renew, LeasedLimiter};
pub use rule::LeaseRule;
pub use share::Share;

macro_rules! gcra_script {
    () => {
        include_str!("../redis/lua/lease_gcra.lua")
    };
}

/// The lease script for GCRA rules: its one key is the rule's hash, its arguments a
/// [`Renewal`]'s.
pub const GCRA_SCRIPT: &str = gcra_script!();

/// [`GCRA_SCRIPT`] with a NUL, for C.
#[doc(hidden)]
pub const GCRA_SCRIPT_WITH_NUL: &str = concat!(gcra_script!(), "\0");
