//! Waiting for a turn (docs/rust.md, Waiting): `cargo run --release --example wait`.
//! scripts/check-docs.py checks that each line of the page's snippet is in this file.

use librate::{Config, Limiter};
use std::time::Duration;

fn main() -> Result<(), librate::Error> {
    // A shaper: one call every 100 ms, no bursts. Each caller sleeps out its turn.
    let shaper = Limiter::new(&Config::gcra(1, Duration::from_millis(100)))?;
    for call in 0..3 {
        let d = shaper.until_ready(1, Duration::from_secs(1))?;
        println!("call {call}: waited {} ms", d.wait().as_millis());
    }

    // Two a day: a third waits for tomorrow, so a wait of a second gives up at once.
    let daily = Limiter::new(&Config::sliding_log(2, Duration::from_secs(86_400)))?;
    daily.until_ready(2, Duration::ZERO)?;
    let d = daily.until_ready(1, Duration::from_secs(1))?;
    assert!(!d.allowed); // nothing was taken
    println!("daily: retry in {} h", d.retry_after().as_secs() / 3600);
    Ok(())
}
