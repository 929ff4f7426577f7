//! Exports that exist only with the `testing` feature, to prove the boundary holds. Not
//! in the header: cbindgen.toml excludes them.

use super::boundary;

/// Panics inside the boundary; must return RATE_E_INTERNAL instead of unwinding into C.
#[no_mangle]
pub extern "C" fn rate_testing_panic() -> i32 {
    boundary(|| panic!("rate_testing_panic: a deliberate panic"))
}
