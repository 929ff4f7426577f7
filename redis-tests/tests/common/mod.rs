//! Helpers of the Redis tier's tests: the root package's (`tests/common`, the same module
//! its tests use) and the Redis ones, a real `redis-server` and the differential replay.

#![allow(dead_code, unreachable_pub)] // each test crate uses a different subset

#[path = "../../../tests/common/mod.rs"]
mod root;
pub use root::*;

pub mod redis_replay;
pub mod redis_server;
