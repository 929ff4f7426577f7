//! Helpers shared by the C ABI's integration tests: the library's own (`tests/common`), and
//! the Rust decision a C call wrote.

#![allow(dead_code, unreachable_pub)] // each test crate uses a different subset

#[path = "../../../tests/common/mod.rs"]
mod library;

pub mod c_decision;
#[allow(unused_imports)] // exact_paths needs only `c_decision`
pub use library::*;
