//! The async sleep of a wait: tokio's timer when the `tokio` feature is on and a tokio
//! runtime drives the task, else the crate's own timer thread (`timer.rs`), which any
//! executor can be woken by.

use super::timer::Sleep;

/// Sleeps the task `ns` nanoseconds.
///
/// # Errors
/// The operating system's error if the timer thread could not be started.
pub(super) async fn sleep(ns: u64) -> std::io::Result<()> {
    // A runtime built without its time driver makes tokio's sleep panic: the `tokio`
    // feature's documentation asks for one with it (docs/rust.md, Waiting).
    #[cfg(feature = "tokio")]
    if tokio::runtime::Handle::try_current().is_ok() {
        tokio::time::sleep(std::time::Duration::from_nanos(ns)).await;
        return Ok(());
    }
    Sleep::new(ns).await
}
