//! The README's Rust snippet, as a program: `cargo run --release --example quickstart`.
//! scripts/check-docs.py checks that each line of the snippet is in this file.

fn main() -> Result<(), librate::Error> {
    use librate::{Config, KeyedLimiter, Limiter};
    use std::time::Duration;

    let api = Limiter::new(&Config::per_second(100))?;
    let ok = api.try_acquire(1)?; // false: answer 429

    let minute = Duration::from_secs(60);
    let per_ip = KeyedLimiter::new(&Config::sliding_window(10, minute), 100_000)?;
    let d = per_ip.acquire(b"203.0.113.7", 1)?; // 10 a minute for each IP
    if !d.allowed {
        println!("retry in {} ms", d.retry_after().as_millis());
    }
    println!(
        "api: {ok}; 203.0.113.7: admitted {}, {} left",
        d.allowed, d.remaining
    );
    Ok(())
}
