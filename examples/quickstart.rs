//! The README's Rust snippet, as a program: `cargo run --release --example quickstart`.
//! scripts/check-docs.py checks that each line of the snippet is in this file.

fn main() -> Result<(), librate::Error> {
    use librate::{Config, KeyedLimiter, Limiter};

    let api = Limiter::new(&Config::gcra(100, 1_000_000_000))?; // 100 per second
    let ok = api.try_acquire(1)?; // false: answer 429

    let per_ip = KeyedLimiter::new(&Config::sliding_window(10, 60_000_000_000), 100_000)?;
    let d = per_ip.acquire(b"203.0.113.7", 1)?; // 10 a minute for each IP
    if !d.allowed {
        println!("retry in {} ms", d.retry_after_ns / 1_000_000);
    }
    println!(
        "api: {ok}; 203.0.113.7: admitted {}, {} left",
        d.allowed, d.remaining
    );
    Ok(())
}
