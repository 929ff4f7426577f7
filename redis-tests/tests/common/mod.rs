//! Helpers of the Redis tier's tests: the root package's (`tests/common`, the same module
//! its tests use) and the Redis ones, a real `redis-server`, the differential replay, and
//! the lease simulation with the check of its promise.

#![allow(dead_code, unreachable_pub)] // each test crate uses a different subset

#[path = "../../../tests/common/mod.rs"]
mod root;
pub use root::*;

pub mod lease_demand;
pub mod lease_sim;
pub mod promise;
pub mod redis_replay;
pub mod redis_server;
