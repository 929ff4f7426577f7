//! The library clock: through the TSC where the kernel keeps time with it, within a
//! microsecond of `CLOCK_MONOTONIC`, never backwards on a thread, one timeline across
//! processes; and the plain clock when `LIBRATE_CLOCK=monotonic` asks for it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use librate::{clock_source, now_ns, ClockSource};

/// How far a reading may be from `CLOCK_MONOTONIC` at the same instant, as documented.
const BOUND_NS: u64 = 1_000;
/// How far behind it a reading may be while another thread, descheduled, takes a new
/// anchor, as documented.
const MAX_ERROR_NS: u64 = 4_000;

fn monotonic() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call.
    assert_eq!(
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) },
        0
    );
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether the kernel keeps `CLOCK_MONOTONIC` with an invariant TSC, as /sys and
/// /proc/cpuinfo say (the library asks the CPU itself).
fn host_keeps_time_with_the_tsc() -> bool {
    let source =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    source.trim() == "tsc"
        && cpuinfo.lines().any(|line| {
            line.starts_with("flags") && line.split_whitespace().any(|f| f == "nonstop_tsc")
        })
}

/// This test binary run again with one test, `name`, and the environment `env`.
fn child(name: &str, env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--ignored",
            "--exact",
            name,
            "--nocapture",
            "--test-threads=1",
        ])
        .env_remove("LIBRATE_CLOCK")
        .envs(env.iter().copied());
    command
}

/// Runs `command` to its end, its output made this test's (shown when the test fails, or
/// under `--nocapture`): on the terminal, the child's "test result" line would read as one
/// of cargo's own (scripts/test.sh counts those).
fn run(mut command: Command) {
    let output = command.output().unwrap();
    print!("{}", String::from_utf8_lossy(&output.stdout));
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{command:?}: {}", output.status);
}

#[test]
fn the_tsc_serves_where_the_kernel_keeps_time_with_it() {
    if std::env::var_os("LIBRATE_CLOCK").is_some() {
        // The plain clock was asked for: `the_plain_clock_when_asked_for` covers it.
        assert_eq!(clock_source(), ClockSource::Monotonic);
        return;
    }
    let expected = if host_keeps_time_with_the_tsc() && cfg!(target_arch = "x86_64") {
        ClockSource::Tsc
    } else {
        ClockSource::Monotonic
    };
    println!("clock source: {:?}", clock_source());
    assert_eq!(clock_source(), expected);
}

/// Every reading lies within the bound of `CLOCK_MONOTONIC` read just before and just
/// after it, over ten seconds of reads in bursts and pauses (pauses let anchors expire),
/// in a process of its own with one thread: the documented exception (a reading taken
/// while another thread, descheduled, is taking a new anchor, up to `MAX_ERROR_NS`
/// behind) needs a second thread, which `each_threads_readings_never_decrease` brings to
/// this process.
#[test]
fn within_a_microsecond_of_clock_monotonic_for_ten_seconds() {
    run(child("agree_for_ten_seconds", &[]));
}

/// Run by `within_a_microsecond_of_clock_monotonic_for_ten_seconds`, alone in its process.
#[test]
#[ignore = "run by within_a_microsecond_of_clock_monotonic_for_ten_seconds in a process of its own"]
fn agree_for_ten_seconds() {
    let start = Instant::now();
    let (mut reads, mut worst_ahead, mut worst_behind) = (0u64, 0u64, 0u64);
    let mut round = 0u32;
    while start.elapsed() < Duration::from_secs(10) {
        for _ in 0..10_000 {
            let before = monotonic();
            let now = now_ns();
            let after = monotonic();
            worst_ahead = worst_ahead.max(now.saturating_sub(after));
            worst_behind = worst_behind.max(before.saturating_sub(now));
            reads += 1;
        }
        round += 1;
        // Pauses from 0 to 3 ms: some within an anchor's window, some past it.
        std::thread::sleep(Duration::from_micros(u64::from(round % 7) * 500));
    }
    println!(
        "{:?}: {reads} reads, at most {worst_ahead} ns ahead of and {worst_behind} ns behind CLOCK_MONOTONIC",
        clock_source()
    );
    assert!(worst_ahead <= BOUND_NS, "{worst_ahead} ns ahead");
    assert!(worst_behind <= BOUND_NS, "{worst_behind} ns behind");
}

/// Within the documented exception's bound with other threads reading too.
#[test]
fn within_the_bound_beside_other_readers() {
    let readers: Vec<_> = (0..3)
        .map(|_| {
            std::thread::spawn(|| {
                let deadline = now_ns() + 1_000_000_000;
                while now_ns() < deadline {}
            })
        })
        .collect();
    let deadline = now_ns() + 1_000_000_000;
    while now_ns() < deadline {
        let before = monotonic();
        let now = now_ns();
        let after = monotonic();
        assert!(now <= after + BOUND_NS, "{} ns ahead", now - after);
        assert!(before <= now + MAX_ERROR_NS, "{} ns behind", before - now);
    }
    readers
        .into_iter()
        .for_each(|reader| reader.join().unwrap());
}

#[test]
fn each_threads_readings_never_decrease() {
    let threads: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                let mut last = now_ns();
                let deadline = last + 2_000_000_000;
                let mut reads = 0u64;
                while last < deadline {
                    let now = now_ns();
                    assert!(now >= last, "went back from {last} to {now}");
                    last = now;
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let reads: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    // Two seconds cross thousands of anchors (one every 0.5 ms).
    assert!(reads > 10_000, "{reads}");
}

/// Another process (its own calibration) answers each of this one's readings with its
/// own: every answer lies between the readings around it, within twice the bound.
#[test]
fn two_processes_keep_one_timeline() {
    let mut other = child("answer_with_readings", &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_other = other.stdin.take().unwrap();
    let mut from_other = BufReader::new(other.stdout.take().unwrap());
    let (mut worst_ahead, mut worst_behind) = (0u64, 0u64);
    let mut line = String::new();
    for _ in 0..2_000 {
        let before = now_ns();
        writeln!(to_other, "now?").unwrap();
        to_other.flush().unwrap();
        let theirs = loop {
            line.clear();
            assert!(
                from_other.read_line(&mut line).unwrap() > 0,
                "the other process ended"
            );
            // The test harness's own "test … ... " may begin the first line.
            if let Some((_, reading)) = line.trim().rsplit_once("reading ") {
                break reading.parse::<u64>().unwrap();
            }
        };
        let after = now_ns();
        worst_ahead = worst_ahead.max(theirs.saturating_sub(after));
        worst_behind = worst_behind.max(before.saturating_sub(theirs));
    }
    drop(to_other);
    assert!(other.wait().unwrap().success());
    println!("the other process: at most {worst_ahead} ns ahead, {worst_behind} ns behind");
    assert!(worst_ahead <= 2 * BOUND_NS && worst_behind <= 2 * BOUND_NS);
}

/// The other process of `two_processes_keep_one_timeline`: a reading per line read.
#[test]
#[ignore = "run by two_processes_keep_one_timeline in a process of its own"]
fn answer_with_readings() {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        line.unwrap();
        writeln!(stdout, "reading {}", now_ns()).unwrap();
        stdout.flush().unwrap();
    }
}

#[test]
fn the_plain_clock_when_asked_for() {
    run(child(
        "plain_clock_child",
        &[("LIBRATE_CLOCK", "monotonic")],
    ));
}

/// Run by `the_plain_clock_when_asked_for` with `LIBRATE_CLOCK=monotonic`.
#[test]
#[ignore = "run by the_plain_clock_when_asked_for with LIBRATE_CLOCK=monotonic"]
fn plain_clock_child() {
    assert_eq!(std::env::var("LIBRATE_CLOCK").as_deref(), Ok("monotonic"));
    assert_eq!(clock_source(), ClockSource::Monotonic);
    for _ in 0..100_000 {
        let before = monotonic();
        let now = now_ns();
        assert!(before <= now && now <= monotonic());
    }
}
