//! A shared limiter's rule changed in its file (docs/shared.md, changing the rule): made
//! once, by any process, and decided on by every process attached from its next decision,
//! with the carry-over of a change in process; an opener that replaces the file's rule;
//! the description a refused opener is given; and changes cut short by SIGKILL at each of
//! their steps. Real files and real processes (`fork`).

mod common;
use common::{assert_incompatible, at};

use common::processes::{in_processes, Scratch};
use librate::{
    describe_file, AcquireError, Config, ConfigError, Instant, Limiter, OpenError, SharedError,
};
use std::time::Duration;

const SECOND: u64 = 1_000_000_000;

/// Waits for a child and returns whether SIGKILL ended it.
fn killed(pid: libc::pid_t) -> bool {
    let mut status = 0;
    // SAFETY: waits for a child this test forked.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL
}

/// Forks a child that runs `child` and exits 0.
fn fork(child: impl FnOnce()) -> libc::pid_t {
    // SAFETY: the child runs `child` (file and atomic operations) and leaves with `_exit`.
    match unsafe { libc::fork() } {
        0 => {
            let status = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)) {
                Ok(()) => 0,
                Err(_) => 1,
            };
            // SAFETY: ends the child without running the parent's exit handlers.
            unsafe { libc::_exit(status) }
        }
        pid => {
            assert!(pid > 0, "fork failed");
            pid
        }
    }
}

/// A change made in one process is every process's rule at its next decision, with the
/// state carried over as in process: GCRA keeps the tokens, capped at the new burst.
#[test]
fn a_change_in_one_process_is_seen_by_every_process() {
    let scratch = Scratch::new("change-seen");
    let path = scratch.path("gcra");
    let here = Limiter::open(&path, &Config::per_second(10)).unwrap();
    assert!(here.acquire_at(4, Instant::ZERO).unwrap().allowed); // 6 tokens left
    let statuses = in_processes(1, |_| {
        let there = Limiter::open(&path, &Config::per_second(10)).unwrap();
        // 10 a second → 5 a second at 0: min(6, 5) = 5 tokens.
        there
            .set_config_at(&Config::per_second(5), Instant::ZERO)
            .unwrap();
        u8::from(there.acquire_at(0, Instant::ZERO).unwrap().remaining != 5)
    });
    assert_eq!(statuses, [0]);
    let decision = here.acquire_at(0, Instant::ZERO).unwrap();
    assert_eq!((decision.limit, decision.remaining), (5, 5));
    assert_eq!(here.config(), &Config::per_second(5));
    // The file holds the new rule: the old one is refused, the new one opens.
    assert_incompatible(
        Limiter::open(&path, &Config::per_second(10)).unwrap_err(),
        &path,
    );
    let again = Limiter::open(&path, &Config::per_second(5)).unwrap();
    assert!(again.acquire_at(5, Instant::ZERO).unwrap().allowed);
    assert!(!here.acquire_at(1, Instant::ZERO).unwrap().allowed);
}

/// The window counters keep what they count: a fixed window of 10 a second that counted
/// 7 in [0, 1 s) becomes one of 8 per 2 s at 1.5 s holding 7 in [0, 2 s): 1 left.
#[test]
fn a_window_change_in_a_file_carries_the_count() {
    let scratch = Scratch::new("change-window");
    let path = scratch.path("fixed");
    let first = Limiter::open(&path, &Config::fixed_window(10, Duration::from_secs(1))).unwrap();
    assert!(first.acquire_at(7, at(SECOND / 2)).unwrap().allowed);
    let second = Limiter::open(&path, &Config::fixed_window(10, Duration::from_secs(1))).unwrap();
    second
        .set_config_at(
            &Config::fixed_window(8, Duration::from_secs(2)),
            at(SECOND / 2),
        )
        .unwrap();
    assert_eq!(first.acquire_at(0, at(SECOND / 2)).unwrap().remaining, 1);
    assert!(first.acquire_at(1, at(SECOND)).unwrap().allowed);
    assert!(!second.acquire_at(1, at(SECOND)).unwrap().allowed);
    // The next window of the new rule, [2 s, 4 s), is full again.
    assert_eq!(second.acquire_at(0, at(2 * SECOND)).unwrap().remaining, 8);
}

/// An opener may replace the file's rule: a rolling restart with a new limit. The
/// processes still running on the old rule follow at their next decision.
#[test]
fn an_opener_replaces_the_files_rule() {
    let scratch = Scratch::new("change-replace");
    let path = scratch.path("gcra");
    let old = Limiter::open(&path, &Config::per_second(10)).unwrap();
    assert!(old.acquire_at(3, Instant::ZERO).unwrap().allowed); // 7 tokens left
    let statuses = in_processes(1, |_| {
        // A restarted worker, with a new limit: it must not fail to boot.
        let new = Limiter::open_replacing(&path, &Config::per_second(20)).unwrap();
        u8::from(new.config() != &Config::per_second(20))
    });
    assert_eq!(statuses, [0]);
    // open_replacing changes at the real clock's now, long after 0: the 7 tokens at 0 are
    // a full bucket of 10 by then, and a full bucket carries over as 10 of 20.
    let now = librate::now_ns();
    let decision = old.acquire_at(0, at(now)).unwrap();
    assert_eq!(decision.limit, 20);
    assert!((10..=20).contains(&decision.remaining), "{decision:?}");
    // The same rule again changes nothing.
    let same = Limiter::open_replacing(&path, &Config::per_second(20).with_burst(20)).unwrap();
    assert_eq!(
        same.acquire_at(0, at(now)).unwrap().remaining,
        decision.remaining
    );
    // A rule the state cannot be carried to is refused, and nothing changes.
    assert!(matches!(
        Limiter::open_replacing(&path, &Config::sliding_window(20, Duration::from_secs(1))),
        Err(OpenError::Config(ConfigError::LiveChange))
    ));
    assert_eq!(old.config(), &Config::per_second(20));
}

/// A refused opener can say what the file holds: its path, and its rule in force.
#[test]
fn a_refused_opener_is_told_the_path_and_the_rule() {
    let scratch = Scratch::new("change-describe");
    let path = scratch.path("limits");
    let limiter =
        Limiter::open(&path, &Config::fixed_window(100, Duration::from_secs(60))).unwrap();
    let refused = Limiter::open(&path, &Config::fixed_window(200, Duration::from_secs(60)));
    assert_incompatible(refused.unwrap_err(), &path);
    let shown = path.display();
    assert_eq!(
        describe_file(&path).unwrap(),
        format!(
            "{shown}: a librate limiter holding fixed window, limit 100, period_ns 60000000000"
        )
    );
    limiter
        .set_config_at(
            &Config::fixed_window(200, Duration::from_secs(60)),
            Instant::ZERO,
        )
        .unwrap();
    assert_eq!(
        describe_file(&path).unwrap(),
        format!(
            "{shown}: a librate limiter holding fixed window, limit 200, period_ns \
             60000000000 (its rule changed 1 time since it was made)"
        )
    );
    let other = scratch.path("other");
    std::fs::write(&other, b"not a table").unwrap();
    assert_eq!(
        describe_file(&other).unwrap(),
        format!("{}: not a librate table (11 bytes)", other.display())
    );
    let missing = scratch.path("missing");
    let error = describe_file(&missing).unwrap_err();
    assert_eq!(
        (error.path(), error.kind(), error.raw_os_error()),
        (&*missing, std::io::ErrorKind::NotFound, Some(libc::ENOENT))
    );
    assert_eq!(
        error.to_string(),
        format!(
            "shared file {}: No such file or directory (os error 2)",
            missing.display()
        )
    );
}

/// Every admission counts once across many changes racing acquires in several
/// processes: allowances (a period that never ends) of 100,000 and 120,000 units,
/// alternated, keep the tokens left (at most 100,000, so the cap never takes any), so
/// however the decisions and changes interleave, the units admitted and the units left
/// add up to 100,000 exactly. The changes reuse each side of the file many times over.
#[test]
fn admissions_racing_many_changes_count_exactly_once() {
    const UNITS: u64 = 100_000;
    let scratch = Scratch::new("change-race");
    let path = scratch.path("allowance");
    let low = Config::gcra(UNITS, Config::FOREVER);
    let high = Config::gcra(UNITS + 20_000, Config::FOREVER);
    let start = Limiter::open(&path, &low).unwrap();
    let statuses = in_processes(4, |index| {
        let Ok(limiter) = Limiter::open_replacing(&path, &low) else {
            return 1;
        };
        let mut admitted = 0u64;
        for round in 0..30_000 {
            if index == 0 {
                let rule = if round % 2 == 0 { &high } else { &low };
                if round % 10 == 0 && limiter.set_config_at(rule, Instant::ZERO).is_err() {
                    return 2;
                }
            } else {
                match limiter.acquire_at(1, Instant::ZERO) {
                    Ok(decision) => admitted += u64::from(decision.allowed),
                    Err(_) => return 3,
                }
            }
        }
        std::fs::write(
            scratch.path(&format!("admitted-{index}")),
            admitted.to_string(),
        )
        .unwrap();
        0
    });
    assert_eq!(statuses, [0; 4]);
    let admitted: u64 = (0..4)
        .map(|index| {
            let count = std::fs::read_to_string(scratch.path(&format!("admitted-{index}")));
            count.unwrap().parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(admitted, 90_000);
    let left = start.acquire_at(0, Instant::ZERO).unwrap().remaining;
    assert_eq!(admitted + left, UNITS, "{admitted} admitted, {left} left");
    // And they are the file's rule in force: a change to an allowance of 5 caps them.
    start
        .set_config_at(&Config::gcra(5, Config::FOREVER), Instant::ZERO)
        .unwrap();
    let decision = Limiter::open(&path, &Config::gcra(5, Config::FOREVER))
        .unwrap()
        .acquire_at(0, Instant::ZERO)
        .unwrap();
    assert_eq!((decision.limit, decision.remaining), (5, 5));
}

/// A change killed (SIGKILL) at each of its steps leaves a file that opens and decides
/// under one rule: the old one if the change had not frozen the old state (4 of 10 used:
/// 6 left), else the new one with the state carried over (min(6, 5) = 5 left); and the
/// next change takes the dead change's lock over.
#[test]
fn a_change_killed_at_each_step_leaves_one_rule() {
    let old = Config::per_second(10);
    let new = Config::per_second(5);
    // Crash points of a change: after recording it, after freezing the old state, after
    // publishing the new rule. Then one past the last: the change is whole.
    for step in 1..=4u64 {
        let scratch = Scratch::new(&format!("change-kill-{step}"));
        let path = scratch.path("gcra");
        let limiter = Limiter::open(&path, &old).unwrap();
        assert!(limiter.acquire_at(4, Instant::ZERO).unwrap().allowed);
        let pid = fork(|| {
            let limiter = Limiter::open(&path, &old).unwrap();
            librate::crashes::kill_at(step);
            limiter.set_config_at(&new, Instant::ZERO).unwrap();
        });
        assert_eq!(killed(pid), step <= 3, "step {step}");
        let decision = limiter.acquire_at(0, Instant::ZERO).unwrap();
        let expected = if step == 1 { (10, 6) } else { (5, 5) };
        assert_eq!(
            (decision.limit, decision.remaining),
            expected,
            "step {step}"
        );
        // One rule for every opener: the other one is refused.
        let (held, other) = if step == 1 {
            (&old, &new)
        } else {
            (&new, &old)
        };
        assert_incompatible(Limiter::open(&path, other).unwrap_err(), &path);
        let reopened = Limiter::open(&path, held).unwrap();
        assert_eq!(
            reopened.acquire_at(0, Instant::ZERO).unwrap().remaining,
            expected.1
        );
        // The next change takes the lock over and carries the state on: 20 a second
        // keeps the tokens left.
        reopened
            .set_config_at(&Config::per_second(20), Instant::ZERO)
            .unwrap();
        let decision = limiter.acquire_at(0, Instant::ZERO).unwrap();
        assert_eq!(
            (decision.limit, decision.remaining),
            (20, expected.1),
            "step {step}"
        );
    }
}

/// A limiter file's size (docs/shared.md, where to put the file): the 16-word header, the
/// rule's 32-word block, 512 lines of pins, and three sides of at least 4 words each,
/// rounded up to a line: 4,160 words. A sliding log's first side is its ring, 3 + 2 L
/// words: for L = 10, 4,175 words, rounded up to 4,176.
#[test]
fn a_limiter_file_holds_its_rule_and_three_states() {
    let scratch = Scratch::new("change-size");
    let size = |config: &Config, name: &str| {
        let path = scratch.path(name);
        drop(Limiter::open(&path, config).unwrap());
        std::fs::metadata(&path).unwrap().len()
    };
    assert_eq!(size(&Config::per_second(10), "gcra"), 33_280);
    assert_eq!(
        size(
            &Config::sliding_window(10, Duration::from_secs(1)),
            "window"
        ),
        33_280
    );
    assert_eq!(
        size(&Config::sliding_log(10, Duration::from_secs(1)), "log"),
        33_408
    );
}

/// A changer stopped (SIGSTOP) after freezing the old state holds the decisions that meet
/// it: each waits about a second, then fails with EBUSY, changing nothing. Once the changer
/// runs again (SIGCONT) it publishes, and the decisions are made under the new rule.
#[test]
fn a_stopped_changer_makes_decisions_fail_busy_until_it_runs() {
    let scratch = Scratch::new("change-stop");
    let path = scratch.path("gcra");
    let limiter = Limiter::open(&path, &Config::per_second(10)).unwrap();
    assert!(limiter.acquire_at(4, Instant::ZERO).unwrap().allowed);
    let pid = fork(|| {
        let limiter = Limiter::open(&path, &Config::per_second(10)).unwrap();
        librate::crashes::stop_at(2);
        limiter
            .set_config_at(&Config::per_second(5), Instant::ZERO)
            .unwrap();
    });
    // Wait until the child has stopped at its second crash point (after the freeze).
    loop {
        let mut status = 0;
        // SAFETY: polls a child this test forked, reporting it stopped.
        let seen = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
        assert_eq!(seen, pid);
        if libc::WIFSTOPPED(status) {
            break;
        }
    }
    assert_eq!(
        limiter.acquire_at(1, Instant::ZERO),
        Err(AcquireError::Shared(SharedError::Busy))
    );
    // SAFETY: resumes the child this test stopped.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert!(!killed(pid));
    let decision = limiter.acquire_at(0, Instant::ZERO).unwrap();
    assert_eq!((decision.limit, decision.remaining), (5, 5));
}

/// A changed file from another boot of the host (its boot word, header word 9, differs)
/// is reset when opened, as any: every state fresh, but the rule in force kept (the
/// rule lives in the file), and the first state still frozen for good, so no process
/// decides under the rule the file was made with.
#[test]
fn a_changed_file_from_another_boot_keeps_its_rule_and_starts_fresh() {
    let scratch = Scratch::new("change-boot");
    let path = scratch.path("gcra");
    let old = Config::per_hour(10);
    let new = Config::per_hour(4);
    let limiter = Limiter::open(&path, &old).unwrap();
    assert!(limiter.acquire_at(7, at(SECOND)).unwrap().allowed); // 3 tokens left
    limiter.set_config_at(&new, at(SECOND)).unwrap(); // min(3, 4) = 3
    assert_eq!(limiter.acquire_at(0, at(SECOND)).unwrap().remaining, 3);
    drop(limiter);
    common::processes::rewrite_word(&path, 9, 0x0123_4567_89ab_cdef);
    assert_incompatible(Limiter::open(&path, &old).unwrap_err(), &path);
    let reopened = Limiter::open(&path, &new).unwrap();
    let decision = reopened.acquire_at(0, at(SECOND)).unwrap();
    assert_eq!((decision.limit, decision.remaining), (4, 4));
    // And the next change carries the fresh state over: 4 tokens, capped at 2.
    reopened
        .set_config_at(&Config::per_hour(2), at(SECOND))
        .unwrap();
    assert_eq!(reopened.acquire_at(0, at(SECOND)).unwrap().remaining, 2);
}

/// The threads of one process that first decide on a changed file together share the
/// process's one entry of pins: none counts a pin there before the entry is ready, so
/// none is lost, and later changes, which wait for the pins to drain, never wait on a
/// count left over (they would fail with EBUSY after seconds).
#[test]
fn threads_taking_their_process_entry_together_lose_no_pin() {
    let scratch = Scratch::new("change-entry");
    for round in 0..20 {
        let path = scratch.path(&format!("gcra-{round}"));
        let limiter = Limiter::open(&path, &Config::per_second(1_000)).unwrap();
        limiter
            .set_config_at(&Config::per_second(900), Instant::ZERO)
            .unwrap();
        let barrier = std::sync::Barrier::new(4);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    let handle = Limiter::open(&path, &Config::per_second(900)).unwrap();
                    barrier.wait();
                    assert!(handle.acquire_at(1, Instant::ZERO).unwrap().allowed);
                });
            }
        });
        // The second change reuses nothing; the third reuses the first's side and waits
        // for the pins: every thread's came and went. Larger bursts keep the 896 tokens.
        for limit in [1_000, 1_100] {
            limiter
                .set_config_at(&Config::per_second(limit), Instant::ZERO)
                .unwrap();
        }
        assert_eq!(
            limiter.acquire_at(0, Instant::ZERO).unwrap().remaining,
            900 - 4
        );
    }
}
