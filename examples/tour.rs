//! A tour of librate on a virtual clock: `cargo run --release --example tour`.
//!
//! Every decision below is made by `acquire_at` or `reserve_at` at a time the tour chooses,
//! so the output is the same on every run and every machine. Times are in milliseconds.

use rate::{Config, Decision, Error, Limiter};

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;

/// The limit every algorithm is given in the side-by-side tables: 10 units per second.
const LIMIT: u64 = 10;
const PERIOD: u64 = SECOND;

/// The algorithms compared side by side, each at [`LIMIT`] per [`PERIOD`]: one line each.
fn algorithms() -> Vec<(&'static str, Config)> {
    vec![
        ("gcra", Config::gcra(LIMIT, PERIOD)),
        ("fixed window", Config::fixed_window(LIMIT, PERIOD)),
        ("sliding window", Config::sliding_window(LIMIT, PERIOD)),
        ("sliding log", Config::sliding_log(LIMIT, PERIOD)),
    ]
}

fn main() -> Result<(), Error> {
    seed_two_users()?;
    seed_one_per_second()?;
    reserve_queue()?;
    let algorithms = algorithms();
    driver(&algorithms)?;
    boundary_burst(&algorithms)?;
    Ok(())
}

/// The seed scenario: Bob and Alice each have their own limiter of capacity 1 that leaks
/// one unit per 2 s (GCRA L=1, P=2 s, B=1).
fn seed_two_users() -> Result<(), Error> {
    let config = Config::gcra(1, 2 * SECOND);
    let bob = Limiter::new(&config)?;
    let alice = Limiter::new(&config)?;
    let requests = [
        ("Bob", &bob, 0),
        ("Bob", &bob, 999),
        ("Alice", &alice, 999),
        ("Bob", &bob, 1000),
        ("Bob", &bob, 2001),
    ];
    print_acquires(
        "Two users, capacity 1, one leak per 2 s (GCRA L=1, P=2 s, B=1)",
        "Bob is limited on his own; Alice, with her own limiter, is not affected by him.",
        "user",
        &requests,
    )
}

/// One request per second with capacity 2 (GCRA L=1, P=1 s, B=2).
fn seed_one_per_second() -> Result<(), Error> {
    let limiter = Limiter::new(&Config::gcra(1, SECOND).with_burst(2))?;
    let requests = [
        ("A", &limiter, 0),
        ("B", &limiter, 0),
        ("C", &limiter, 0),
        ("D", &limiter, 1000),
    ];
    print_acquires(
        "One request per second, capacity 2 (GCRA L=1, P=1 s, B=2)",
        "A and B use the burst, C must wait a second, D comes a second later.",
        "request",
        &requests,
    )
}

/// Acquires one unit for each `(who, limiter, at_ms)` in turn and prints a row for each.
fn print_acquires(
    title: &str,
    note: &str,
    who: &str,
    requests: &[(&str, &Limiter, u64)],
) -> Result<(), Error> {
    let mut table = DecisionTable::new(who);
    for &(who, limiter, at_ms) in requests {
        let now_ns = at_ms * MS;
        table.push(who, now_ns, limiter.acquire_at(1, now_ns)?);
    }
    table.print(title, note);
    Ok(())
}

/// The leaky bucket as a queue: instead of denying, `reserve_at` admits a caller who is
/// willing to wait up to `max_wait` and says how long to wait before acting.
fn reserve_queue() -> Result<(), Error> {
    let shaper = Limiter::new(&Config::gcra(10, SECOND).with_burst(1))?;
    let mut table = DecisionTable::new("request");
    for request in ["#1", "#2", "#3", "#4", "#5"] {
        table.push(request, 0, shaper.reserve_at(1, 0, SECOND)?);
    }
    table.print(
        "Leaky bucket as a queue: 10/s, burst 1, max_wait 1 s (reserve_at)",
        "Five requests at t=0 are spaced 100 ms apart: each is told its wait.",
    );
    Ok(())
}

/// Requests offered at evenly spaced times for [`DRIVER_SECONDS`], at each offered rate,
/// against every algorithm at 10 per second.
fn driver(algorithms: &[(&str, Config)]) -> Result<(), Error> {
    const DRIVER_SECONDS: u64 = 10;
    let mut header = vec!["offered/s".to_string(), "offered".to_string()];
    for (name, _) in algorithms {
        header.push(format!("{name} admitted"));
        header.push(format!("{name} /s"));
    }
    let mut table = Table::new(header);
    for rate in [1, 2, 5, 10, 20, 50, 100] {
        let offered = rate * DRIVER_SECONDS;
        let times = (0..offered).map(|i| i * SECOND / rate);
        let mut row = vec![rate.to_string(), offered.to_string()];
        for (_, config) in algorithms {
            let admitted = admitted_times(config, times.clone())?.len() as u64;
            row.push(admitted.to_string());
            row.push(per_second(admitted, DRIVER_SECONDS));
        }
        table.push(row);
    }
    println!(
        "Driver: offered rates against {LIMIT} per second, evenly spaced over {DRIVER_SECONDS} s"
    );
    println!("GCRA's bucket starts full: above {LIMIT}/s it admits its burst of {LIMIT} at once, then {LIMIT}/s.");
    table.print();
    Ok(())
}

/// A flood straddling a window edge: after a quiet start, one request every millisecond
/// from 100 ms before the edge at 10 s until one period after it. Window algorithms reset
/// their counts at the edge; the last column is what each admits within any one period.
fn boundary_burst(algorithms: &[(&str, Config)]) -> Result<(), Error> {
    const EDGE: u64 = 10 * SECOND;
    let flood: Vec<u64> = (EDGE - 100 * MS..EDGE + PERIOD)
        .step_by(MS as usize)
        .collect();
    let mut table = Table::new(
        [
            "algorithm",
            "offered",
            "admitted before edge",
            "admitted after edge",
            "most in any 1 s",
        ]
        .map(String::from)
        .to_vec(),
    );
    for (name, config) in algorithms {
        let admitted = admitted_times(config, flood.iter().copied())?;
        let before = admitted.iter().filter(|&&t| t < EDGE).count();
        table.push(vec![
            name.to_string(),
            flood.len().to_string(),
            before.to_string(),
            (admitted.len() - before).to_string(),
            most_in_any_period(&admitted, PERIOD).to_string(),
        ]);
    }
    println!("Boundary burst: a request every 1 ms from 9.9 s to 11 s, limit {LIMIT} per second");
    table.print();
    Ok(())
}

/// Offers one unit at each of `times` (non-decreasing) to a fresh limiter built from
/// `config` and returns the times it admitted.
fn admitted_times(config: &Config, times: impl Iterator<Item = u64>) -> Result<Vec<u64>, Error> {
    let limiter = Limiter::new(config)?;
    let mut admitted = Vec::new();
    for now_ns in times {
        if limiter.acquire_at(1, now_ns)?.allowed {
            admitted.push(now_ns);
        }
    }
    Ok(admitted)
}

/// The most of the sorted `times` that fall within one period `(t − period, t]`.
fn most_in_any_period(times: &[u64], period: u64) -> usize {
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

/// `count` over `seconds`, with one decimal.
fn per_second(count: u64, seconds: u64) -> String {
    format!("{}.{}", count / seconds, count * 10 / seconds % 10)
}

/// A duration in milliseconds: whole when it is, else to the nanosecond; "never" at u64::MAX.
fn ms(ns: u64) -> String {
    match ns {
        u64::MAX => "never".to_string(),
        ns if ns % MS == 0 => (ns / MS).to_string(),
        ns => format!("{}.{:06}", ns / MS, ns % MS),
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

    fn push(&mut self, who: &str, now_ns: u64, decision: Decision) {
        self.0.push(vec![
            who.to_string(),
            ms(now_ns),
            if decision.allowed { "yes" } else { "no" }.to_string(),
            decision.limit.to_string(),
            decision.remaining.to_string(),
            ms(decision.retry_after_ns),
            ms(decision.reset_after_ns),
            ms(decision.wait_ns),
        ]);
    }

    fn print(&self, title: &str, note: &str) {
        println!("{title}");
        println!("{note}");
        self.0.print();
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

    fn print(&self) {
        let labelled = self.rows.iter().any(|row| row[0].parse::<f64>().is_err());
        let widths: Vec<usize> = (0..self.header.len())
            .map(|column| {
                let cells = std::iter::once(&self.header).chain(&self.rows);
                cells.map(|row| row[column].len()).max().unwrap_or(0)
            })
            .collect();
        let line = |row: &[String]| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(column, (cell, &width))| match column {
                    0 if labelled => format!("{cell:<width$}"),
                    _ => format!("{cell:>width$}"),
                })
                .collect();
            println!("  {}", cells.join("  "));
        };
        line(&self.header);
        let rule: Vec<String> = widths.iter().map(|&width| "-".repeat(width)).collect();
        println!("  {}", rule.join("  "));
        for row in &self.rows {
            line(row);
        }
        println!();
    }
}
