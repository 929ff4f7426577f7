//! A tour of librate on a virtual clock: `cargo run --release --example tour`.
//!
//! Every decision below is made by an `acquire_at` or `reserve_at` at a time the tour
//! chooses, so the output is the same on every run and every machine. Before each table
//! the tour prints the lines of this file that produced it (between `// show:` and
//! `// end` markers). Times are in milliseconds. The output fits 100 columns.

use librate::{Config, Decision, Error, Instant, KeyedLimiter, Limiter};
use std::fmt::Write as _;
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

/// The limit every algorithm is given in the side-by-side tables: 10 units per second.
const LIMIT: u64 = 10;
const PERIOD: Duration = SECOND;

/// This file, to show the code behind each table.
const SOURCE: &str = include_str!("tour.rs");

fn main() -> Result<(), Error> {
    let mut out = String::new();
    tour(&mut out)?;
    print!("{out}");
    Ok(())
}

/// Writes the whole tour to `out`.
fn tour(out: &mut String) -> Result<(), Error> {
    per_user(out)?;
    one_per_second(out)?;
    reserve_queue(out)?;
    let algorithms = algorithms();
    offered_rates(out, &algorithms)?;
    boundary_burst(out, &algorithms)?;
    Ok(())
}

/// The algorithms compared side by side, each at [`LIMIT`] per [`PERIOD`].
fn algorithms() -> Vec<(&'static str, Config)> {
    // show: algorithms
    vec![
        ("gcra", Config::gcra(LIMIT, PERIOD)), // burst 10: a full bucket at the start
        ("fixed window", Config::fixed_window(LIMIT, PERIOD)),
        ("sliding window", Config::sliding_window(LIMIT, PERIOD)),
        ("sliding log", Config::sliding_log(LIMIT, PERIOD)),
    ]
    // end
}

/// One limit per user in one table: Bob and Alice are keys of a `KeyedLimiter`, each
/// with a bucket of 1 that refills every 2 s (GCRA L=1, P=2 s).
fn per_user(out: &mut String) -> Result<(), Error> {
    title(
        out,
        "1. One limit per user: a KeyedLimiter, 1 request per 2 s for each key",
        "per_user",
    );
    let mut table = DecisionTable::new("user");
    // show: per_user
    let users = KeyedLimiter::new(&Config::gcra(1, 2 * SECOND), 10_000)?; // 10,000 keys
    let requests = [
        ("Bob", 0),
        ("Bob", 999),
        ("Alice", 999),
        ("Bob", 1000),
        ("Bob", 2001),
    ];
    for (user, at_ms) in requests {
        let at = Instant::ZERO + Duration::from_millis(at_ms);
        table.push(user, at, users.acquire_at(user.as_bytes(), 1, at)?);
    }
    // end
    table.write(out);
    notes(
        out,
        &[
            "Bob is limited on his own; Alice, another key, is not affected by him.",
            "retry_after is exact: Bob at 999 ms may come back 1001 ms later, at 2000 ms.",
        ],
    );
    Ok(())
}

/// One request per second with a burst of 2 (GCRA L=1, P=1 s, B=2).
fn one_per_second(out: &mut String) -> Result<(), Error> {
    title(
        out,
        "2. One request per second, bursts of 2",
        "one_per_second",
    );
    let mut table = DecisionTable::new("request");
    // show: one_per_second
    let limiter = Limiter::new(&Config::gcra(1, SECOND).with_burst(2))?;
    for (request, at_ms) in [("A", 0), ("B", 0), ("C", 0), ("D", 1000)] {
        let at = Instant::ZERO + Duration::from_millis(at_ms);
        table.push(request, at, limiter.acquire_at(1, at)?);
    }
    // end
    table.write(out);
    notes(
        out,
        &["A and B use the burst; C is denied for 1 s; D, a second later, gets the refill."],
    );
    Ok(())
}

/// The leaky bucket as a queue: instead of denying, `reserve_at` admits a caller who is
/// willing to wait up to `max_wait` and says how long to wait before acting.
fn reserve_queue(out: &mut String) -> Result<(), Error> {
    title(
        out,
        "3. A queue instead of denials: reserve_at, 10/s, burst 1, waiting up to 1 s",
        "reserve_queue",
    );
    let mut table = DecisionTable::new("request");
    // show: reserve_queue
    let shaper = Limiter::new(&Config::gcra(10, SECOND).with_burst(1))?;
    for request in ["#1", "#2", "#3", "#4", "#5"] {
        let decision = shaper.reserve_at(1, Instant::ZERO, SECOND)?; // all at t = 0, max_wait 1 s
        table.push(request, Instant::ZERO, decision); // act after decision.wait()
    }
    // end
    table.write(out);
    notes(
        out,
        &["Five requests at t = 0 are spaced 100 ms apart: each is told its wait."],
    );
    Ok(())
}

/// Requests offered at evenly spaced times for 10 s, at each offered rate, against every
/// algorithm at 10 per second.
fn offered_rates(out: &mut String, algorithms: &[(&str, Config)]) -> Result<(), Error> {
    const SECONDS: u32 = 10;
    title(
        out,
        "4. Offered rates against 10 per second, evenly spaced over 10 s: units admitted",
        "algorithms",
    );
    show(out, "offered_rates");
    let mut header = vec!["offered/s".to_string(), "offered".to_string()];
    header.extend(algorithms.iter().map(|(name, _)| name.to_string()));
    let mut table = Table::new(header);
    for rate in [1u32, 2, 5, 10, 20, 50, 100] {
        let offered = rate * SECONDS;
        let mut row = vec![rate.to_string(), offered.to_string()];
        for (_, config) in algorithms {
            // show: offered_rates
            let times = (0..rate * SECONDS).map(|i| Instant::ZERO + SECOND * i / rate); // evenly spaced
            let admitted = admitted_times(config, times)?.len();
            // end
            row.push(admitted.to_string());
        }
        table.push(row);
    }
    table.write(out);
    notes(
        out,
        &[
            "gcra admits 109, not 110, above 10/s: its bucket starts full (10) and refills \
             one unit per 100 ms, and the last request, at 9.95 s, comes before the 100th \
             refill at 10 s (10 + 99).",
            "sliding window admits 91 at 10/s and above: at the first instant of each window \
             the previous window's 10 still count in full, so each later window loses one \
             (10 + 9 x 9).",
        ],
    );
    Ok(())
}

/// A flood straddling a window edge: after a quiet start, one request every millisecond
/// from 100 ms before the edge at 10 s until one period after it.
fn boundary_burst(out: &mut String, algorithms: &[(&str, Config)]) -> Result<(), Error> {
    title(
        out,
        "5. A flood across a window edge: a request every 1 ms from 9.9 s to 11 s, 10 per s",
        "boundary_burst",
    );
    let mut table = Table::new(
        [
            "algorithm",
            "offered",
            "before 10 s",
            "after 10 s",
            "most in any 1 s",
        ]
        .map(String::from)
        .to_vec(),
    );
    for (name, config) in algorithms {
        // show: boundary_burst
        let edge = Instant::ZERO + 10 * SECOND;
        let flood = (0..1_100).map(|i| edge - 100 * MS + i * MS); // 1,100 requests, 1 ms apart
        let admitted = admitted_times(config, flood.clone())?;
        let before = admitted.iter().filter(|&&t| t < edge).count();
        let most = most_in_any_period(&admitted, PERIOD); // in any (t - 1 s, t]
                                                          // end
        table.push(vec![
            name.to_string(),
            flood.count().to_string(),
            before.to_string(),
            (admitted.len() - before).to_string(),
            most.to_string(),
        ]);
    }
    table.write(out);
    notes(
        out,
        &[
            "fixed window: 20 in one second, the edge burst: 10 just before the edge, 10 \
             just after, since each window counts from 0.",
            "gcra: 19, its full bucket of 10 and then 10/s: it promises the rate plus one \
             burst, not 10 in every second.",
            "sliding window: 18, as its estimate assumes the previous window's 10 were \
             spread evenly, while they all came in its last 100 ms.",
            "sliding log: 10, exact: never more than 10 in any second.",
        ],
    );
    Ok(())
}

/// Offers one unit at each of `times` (non-decreasing) to a fresh limiter built from
/// `config` and returns the times it admitted.
fn admitted_times(
    config: &Config,
    times: impl Iterator<Item = Instant>,
) -> Result<Vec<Instant>, Error> {
    let limiter = Limiter::new(config)?;
    let mut admitted = Vec::new();
    for at in times {
        if limiter.acquire_at(1, at)?.allowed {
            admitted.push(at);
        }
    }
    Ok(admitted)
}

/// The most of the sorted `times` that fall within one period `(t - period, t]`.
fn most_in_any_period(times: &[Instant], period: Duration) -> usize {
    let mut first = 0;
    let mut most = 0;
    for (last, &t) in times.iter().enumerate() {
        while times[first] + period <= t {
            first += 1;
        }
        most = most.max(last + 1 - first);
    }
    most
}

/// A section's title (after a blank line, but for the first), then the code behind its
/// table.
fn title(out: &mut String, text: &str, code: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "{text}\n{}", "=".repeat(text.len()));
    show(out, code);
}

/// Writes the lines of this file between `// show: name` and the next `// end`.
fn show(out: &mut String, name: &str) {
    let marker = format!("// show: {name}");
    let mut lines = SOURCE
        .lines()
        .skip_while(|line| line.trim() != marker)
        .skip(1);
    let first = lines.clone().next().unwrap_or_default();
    let indent = first.len() - first.trim_start().len();
    out.push_str("  code:\n");
    for line in lines.by_ref().take_while(|line| line.trim() != "// end") {
        let _ = writeln!(out, "    {}", line.get(indent..).unwrap_or(line.trim()));
    }
    out.push('\n');
}

/// The sentences under a table, each wrapped to 100 columns.
fn notes(out: &mut String, texts: &[&str]) {
    for text in texts {
        note(out, text);
    }
}

/// A sentence under a table, wrapped to 100 columns.
fn note(out: &mut String, text: &str) {
    let mut line = String::from("  ");
    for word in text.split_whitespace() {
        if line.trim().is_empty() {
            line.push_str(word);
        } else if line.len() + 1 + word.len() > 100 {
            let _ = writeln!(out, "{line}");
            line = format!("    {word}");
        } else {
            line.push(' ');
            line.push_str(word);
        }
    }
    let _ = writeln!(out, "{line}");
}

/// A duration in milliseconds: whole when it is, else to the nanosecond; "never" at
/// [`Decision::NEVER`].
fn ms(duration: Duration) -> String {
    let ns = duration.as_nanos() % 1_000_000;
    match duration {
        Decision::NEVER => "never".to_string(),
        _ if ns == 0 => duration.as_millis().to_string(),
        _ => format!("{}.{ns:06}", duration.as_millis()),
    }
}

/// One row per decision, with every field of [`Decision`].
struct DecisionTable(Table);

impl DecisionTable {
    fn new(who: &str) -> Self {
        let header = [
            who,
            "t (ms)",
            "allowed",
            "limit",
            "remaining",
            "retry_after (ms)",
            "reset_after (ms)",
            "wait (ms)",
        ];
        Self(Table::new(header.map(String::from).to_vec()))
    }

    fn push(&mut self, who: &str, at: Instant, decision: Decision) {
        self.0.push(vec![
            who.to_string(),
            ms(at - Instant::ZERO),
            if decision.allowed { "yes" } else { "no" }.to_string(),
            decision.limit.to_string(),
            decision.remaining.to_string(),
            ms(decision.retry_after()),
            ms(decision.reset_after()),
            ms(decision.wait()),
        ]);
    }

    fn write(&self, out: &mut String) {
        self.0.write(out);
    }
}

/// A plain-text table: numbers right-aligned, a first column of labels left-aligned.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(header: Vec<String>) -> Self {
        Self {
            header,
            rows: Vec::new(),
        }
    }

    fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    fn write(&self, out: &mut String) {
        let labelled = self.rows.iter().any(|row| row[0].parse::<f64>().is_err());
        let widths: Vec<usize> = (0..self.header.len())
            .map(|column| {
                let cells = std::iter::once(&self.header).chain(&self.rows);
                cells.map(|row| row[column].len()).max().unwrap_or(0)
            })
            .collect();
        let mut line = |row: &[String]| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(column, (cell, &width))| match column {
                    0 if labelled => format!("{cell:<width$}"),
                    _ => format!("{cell:>width$}"),
                })
                .collect();
            let _ = writeln!(out, "  {}", cells.join("  "));
        };
        line(&self.header);
        let rule: Vec<String> = widths.iter().map(|&width| "-".repeat(width)).collect();
        line(&rule);
        for row in &self.rows {
            line(row);
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output() -> String {
        let mut out = String::new();
        tour(&mut out).unwrap();
        out
    }

    #[test]
    fn fits_100_columns() {
        for line in output().lines() {
            assert!(
                line.chars().count() <= 100,
                "{} columns: {line}",
                line.len()
            );
        }
    }

    #[test]
    fn every_table_shows_its_code() {
        let out = output();
        assert_eq!(out.matches("  code:\n").count(), 6, "{out}");
        assert!(out
            .contains("    let users = KeyedLimiter::new(&Config::gcra(1, 2 * SECOND), 10_000)?;"));
    }

    /// The numbers the notes explain, derived from the rules rather than read off the run.
    #[test]
    fn the_explained_numbers() {
        let algorithms = algorithms();
        let count = |config: &Config, rate: u32| {
            admitted_times(
                config,
                (0..rate * 10).map(|i| Instant::ZERO + SECOND * i / rate),
            )
            .unwrap()
            .len()
        };
        // GCRA above 10/s over [0, 9.95 s]: the bucket of 10, plus a refill every 100 ms
        // up to 9.95 s (99 of them).
        assert_eq!(count(&algorithms[0].1, 20), 10 + 99);
        // The sliding window loses each later window's first request: 10 + 9 * 9.
        assert_eq!(count(&algorithms[2].1, 10), 10 + 9 * 9);
        // The exact algorithms admit the offered 100 at exactly 10/s.
        assert_eq!(count(&algorithms[1].1, 10), 100);
        assert_eq!(count(&algorithms[3].1, 10), 100);
        let edge = Instant::ZERO + 10 * SECOND;
        let flood = || (0..1_100).map(move |i| edge - 100 * MS + i * MS);
        let most =
            |config: &Config| most_in_any_period(&admitted_times(config, flood()).unwrap(), PERIOD);
        // Fixed window: 10 before the edge, 10 after. GCRA: 10, then one per 100 ms from
        // the edge on, of which 9 fall within a second of the 10th (9.9 s excluded).
        // Sliding log: exact.
        assert_eq!(most(&algorithms[1].1), 20);
        assert_eq!(most(&algorithms[0].1), 9 + 10);
        assert_eq!(most(&algorithms[3].1), 10);
    }
}
