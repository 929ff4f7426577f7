//! A shared keyed table's and keyed policy's rules changed in their file (docs/shared.md,
//! changing the rule): made once, by any process, and decided on by every process
//! attached from its next decision, each key carried over as in process; openers that
//! replace the file's rules; and changes cut short by SIGKILL at each of their steps. Real
//! files and real processes (`fork`).

mod common;
use common::{assert_incompatible, at};

use common::processes::{in_processes, Scratch};
use librate::{describe_file, Config, Instant, KeyedLimiter, KeyedPolicy, KeyedRule};
use std::time::Duration;

const SECOND: u64 = 1_000_000_000;
const HOUR: u64 = 3600 * SECOND;

/// Forks a child that runs `child` and exits 0, and returns whether SIGKILL ended it.
fn killed_in_child(child: impl FnOnce()) -> bool {
    // SAFETY: the child runs `child` (file and atomic operations) and leaves with `_exit`.
    let pid = match unsafe { libc::fork() } {
        0 => {
            let status = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)) {
                Ok(()) => 0,
                Err(_) => 1,
            };
            // SAFETY: ends the child without running the parent's exit handlers.
            unsafe { libc::_exit(status) }
        }
        pid => pid,
    };
    assert!(pid > 0, "fork failed");
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFSIGNALED(status) || libc::WEXITSTATUS(status) == 0,
        "the child failed"
    );
    libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL
}

/// A change made in one process is every process's rule at its next decision, each key
/// carried over as in process: GCRA keeps a key's tokens, capped at the new burst, and a
/// new key starts with the new burst.
#[test]
fn a_change_in_one_process_is_seen_by_every_process() {
    let scratch = Scratch::new("keyed-change-seen");
    let path = scratch.path("gcra");
    let old = Config::per_second(10);
    let new = Config::per_second(5);
    let here = KeyedLimiter::open(&path, &old, 100).unwrap();
    assert!(here.acquire_at(b"ann", 4, Instant::ZERO).unwrap().allowed); // 6 tokens left
    assert!(here.acquire_at(b"bob", 9, Instant::ZERO).unwrap().allowed); // 1 token left
    let statuses = in_processes(1, |_| {
        let there = KeyedLimiter::open(&path, &old, 100).unwrap();
        // 10 a second → 5 a second at 0: min(6, 5) = 5 tokens.
        there.set_config_at(&new, Instant::ZERO).unwrap();
        u8::from(
            there
                .acquire_at(b"ann", 0, Instant::ZERO)
                .unwrap()
                .remaining
                != 5,
        )
    });
    assert_eq!(statuses, [0]);
    let ann = here.acquire_at(b"ann", 0, Instant::ZERO).unwrap();
    assert_eq!((ann.limit, ann.remaining), (5, 5));
    assert_eq!(
        here.acquire_at(b"bob", 0, Instant::ZERO).unwrap().remaining,
        1
    );
    assert_eq!(here.try_acquire(b"cid", 1), Ok(true));
    assert_eq!(
        here.acquire_at(b"dan", 0, Instant::ZERO).unwrap().remaining,
        5
    );
    assert_eq!(here.config(), &new);
    // The file holds the new rule: the old one is refused, the new one opens.
    assert_incompatible(KeyedLimiter::open(&path, &old, 100).unwrap_err(), &path);
    let again = KeyedLimiter::open(&path, &new, 100).unwrap();
    assert!(again.acquire_at(b"ann", 5, Instant::ZERO).unwrap().allowed);
    assert!(!here.acquire_at(b"ann", 1, Instant::ZERO).unwrap().allowed);
    assert!(describe_file(&path).unwrap().ends_with(
        ": a librate keyed table of capacity 100 holding GCRA, limit 5, period_ns 1000000000, \
         burst 5 (its rule changed 1 time since it was made)"
    ));
}

/// Each key's window counters keep what they count: a fixed window of 10 a second that
/// counted 7 in [0, 1 s) becomes one of 8 per 2 s at 0.5 s holding 7 in [0, 2 s): 1 left
/// at 1.5 s. A key that counted nothing starts anew with 8.
#[test]
fn a_window_change_in_a_file_carries_each_count() {
    let scratch = Scratch::new("keyed-change-window");
    let path = scratch.path("fixed");
    let first =
        KeyedLimiter::open(&path, &Config::fixed_window(10, Duration::from_secs(1)), 10).unwrap();
    assert!(first.acquire_at(b"ann", 7, at(SECOND / 2)).unwrap().allowed);
    assert!(first.acquire_at(b"bob", 2, at(SECOND / 2)).unwrap().allowed);
    let second =
        KeyedLimiter::open(&path, &Config::fixed_window(10, Duration::from_secs(1)), 10).unwrap();
    second
        .set_config_at(
            &Config::fixed_window(8, Duration::from_secs(2)),
            at(SECOND / 2),
        )
        .unwrap();
    let later = at(SECOND + SECOND / 2);
    assert_eq!(first.acquire_at(b"ann", 0, later).unwrap().remaining, 1);
    assert_eq!(first.acquire_at(b"bob", 0, later).unwrap().remaining, 6);
    assert_eq!(second.acquire_at(b"cid", 0, later).unwrap().remaining, 8);
    assert!(!second.acquire_at(b"ann", 2, later).unwrap().allowed);
}

/// An opener that asks replaces the file's rule as a change would (at the clock's now, so
/// the decisions here are made now too, under a rule of an hour, in which the clock's
/// advance during the test refills nothing); one that does not is refused, and the file
/// is left as it was.
#[test]
fn an_opener_replaces_the_files_rule() {
    let scratch = Scratch::new("keyed-change-replace");
    let path = scratch.path("gcra");
    let old = KeyedLimiter::open(&path, &Config::per_hour(10), 10).unwrap();
    assert!(old.acquire(b"ann", 4).unwrap().allowed);
    let before = std::fs::read(&path).unwrap();
    assert_incompatible(
        KeyedLimiter::open(&path, &Config::per_hour(20), 10).unwrap_err(),
        &path,
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // Another algorithm cannot carry the state over, nor another capacity be replaced.
    assert!(KeyedLimiter::open_replacing(
        &path,
        &Config::fixed_window(10, Duration::from_secs(3600)),
        10
    )
    .is_err());
    assert_incompatible(
        KeyedLimiter::open_replacing(&path, &Config::per_hour(20), 11).unwrap_err(),
        &path,
    );
    let new = KeyedLimiter::open_replacing(&path, &Config::per_hour(20), 10).unwrap();
    // 6 tokens kept under a burst of 20.
    assert_eq!(new.acquire(b"ann", 0).unwrap().remaining, 6);
    assert_eq!(old.config(), &Config::per_hour(20));
    assert_eq!(old.acquire(b"ann", 0).unwrap().limit, 20);
}

/// How many units each acquirer takes of each key in [`race_changes`].
const TAKEN_PER_KEY: u64 = 2_000;
/// Keys of [`race_changes`]: each acquirer takes one unit of one key a round, in turn.
const RACED_KEYS: usize = 6;

/// Four processes race: one changes the file's rule 600 times between `low` and `high` at
/// instant 0, three take one unit of one of six keys at instant 0 each round, 2,000 of
/// each key each (their open first replaces the file's rule by `low`, unless all open
/// before the changer starts: `opened_first`). Returns, per key, the units admitted and
/// the units a fresh handle then reads left, and that handle's rule.
fn race_changes(low: &Config, high: &Config, opened_first: bool) -> (Vec<(u64, u64)>, Config) {
    let scratch = Scratch::new(&format!("keyed-change-race-{opened_first}"));
    let path = scratch.path("allowance");
    let start = KeyedLimiter::open(&path, low, 8).unwrap();
    let opened = scratch.path("opened");
    std::fs::write(&opened, "").unwrap();
    let statuses = in_processes(4, |index| {
        let Ok(table) = KeyedLimiter::open_replacing(&path, low, 8) else {
            return 1;
        };
        if opened_first {
            // One byte per process opened; each waits for all four.
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(&opened)
                .unwrap();
            std::io::Write::write_all(&mut file, b"+").unwrap();
            while std::fs::read(&opened).unwrap().len() < 4 {
                std::thread::yield_now();
            }
        }
        let mut admitted = [0u64; RACED_KEYS];
        for round in 0..TAKEN_PER_KEY as usize * RACED_KEYS {
            if index == 0 {
                let rule = if (round / 20) % 2 == 0 { high } else { low };
                if round % 20 == 0 && table.set_config_at(rule, Instant::ZERO).is_err() {
                    return 2;
                }
            } else {
                let key = (round + index) % RACED_KEYS;
                match table.acquire_at(format!("key-{key}").as_bytes(), 1, Instant::ZERO) {
                    Ok(decision) => admitted[key] += u64::from(decision.allowed),
                    Err(_) => return 3,
                }
            }
        }
        let counts: Vec<String> = admitted.iter().map(u64::to_string).collect();
        std::fs::write(scratch.path(&format!("admitted-{index}")), counts.join(",")).unwrap();
        0
    });
    assert_eq!(statuses, [0; 4]);
    let mut admitted = [0u64; RACED_KEYS];
    for index in 0..4 {
        let counts = std::fs::read_to_string(scratch.path(&format!("admitted-{index}"))).unwrap();
        for (key, count) in counts.split(',').enumerate() {
            admitted[key] += count.parse::<u64>().unwrap();
        }
    }
    let counts = (0..RACED_KEYS)
        .map(|key| {
            let left = start
                .acquire_at(format!("key-{key}").as_bytes(), 0, Instant::ZERO)
                .unwrap();
            (admitted[key], left.remaining)
        })
        .collect();
    (counts, *start.config())
}

/// Every admission counts once across many changes racing acquires in several processes,
/// which reuse each region of the file many times over. GCRA allowances (a period that
/// never ends) of 100,000 units, one twice as fast as the other: a change keeps each
/// key's tokens, and both rules' burst is 100,000, so the cap at the new burst never takes
/// any (docs/live-changes.md). All at instant 0, so nothing refills: each key's 6,000 units
/// admitted (3 acquirers × 2,000) and the units left add up to 100,000 exactly.
#[test]
fn admissions_racing_many_changes_count_exactly_once() {
    let low = Config::gcra(100_000, Config::FOREVER);
    let high = Config::gcra(100_000, Config::FOREVER / 2);
    let (counts, _) = race_changes(&low, &high, true);
    for (key, (admitted, left)) in counts.into_iter().enumerate() {
        assert_eq!((admitted, left), (3 * TAKEN_PER_KEY, 94_000), "key {key}");
    }
}

/// As above, with openers that replace the file's rule racing the changes too: fixed
/// windows that never end, of 100,000 and 120,000 units. A change keeps what each key's
/// window counts (capped at the new limit, which 6,000 never reaches), and a window that
/// never ends is the same window at any instant, so each key's units admitted and left
/// add up to the limit of the rule in force at the end, exactly.
#[test]
fn admissions_racing_changes_and_replacing_openers_count_exactly_once() {
    let low = Config::fixed_window(100_000, Config::FOREVER);
    let high = Config::fixed_window(120_000, Config::FOREVER);
    let (counts, rule) = race_changes(&low, &high, false);
    assert!(rule == low || rule == high, "{rule:?}");
    for (key, (admitted, left)) in counts.into_iter().enumerate() {
        assert_eq!(
            (admitted, left),
            (3 * TAKEN_PER_KEY, rule.limit - 6_000),
            "key {key}"
        );
    }
}

/// Why the allowances above do not alternate bursts: GCRA's tokens are capped at the new
/// burst (docs/live-changes.md). A key that took 2,000 of a fresh burst of 120,000 keeps
/// 118,000 tokens, which a change to a burst of 100,000 caps at 100,000: the key is then
/// as fresh as a new one, its 2,000 units forgiven.
#[test]
fn a_lower_burst_caps_the_tokens_a_key_kept() {
    let scratch = Scratch::new("keyed-change-cap");
    let path = scratch.path("allowance");
    let high = Config::gcra(120_000, Config::FOREVER);
    let table = KeyedLimiter::open(&path, &high, 8).unwrap();
    assert!(
        table
            .acquire_at(b"key", 2_000, Instant::ZERO)
            .unwrap()
            .allowed
    );
    assert_eq!(
        table
            .acquire_at(b"key", 0, Instant::ZERO)
            .unwrap()
            .remaining,
        118_000
    );
    table
        .set_config_at(&Config::gcra(100_000, Config::FOREVER), Instant::ZERO)
        .unwrap();
    assert_eq!(
        table
            .acquire_at(b"key", 0, Instant::ZERO)
            .unwrap()
            .remaining,
        100_000
    );
}

/// A change killed (SIGKILL) at each of its steps leaves a file that opens and decides
/// every key under one rule: the old one if the change had frozen no slot yet (ann used 4
/// of 10: 6 left), else the new one with every key carried over (min(6, 5) = 5 left),
/// the sweep finished by the first process that needs it; and the next change takes the
/// dead change's lock over.
#[test]
fn a_change_killed_at_each_step_leaves_one_rule() {
    let old = Config::per_second(10);
    let new = Config::per_second(5);
    // Crash points of a change of a table of capacity 2 (4 slots): after recording it,
    // after freezing each slot, after publishing the new rule. Then one past the last:
    // the change is whole.
    for step in 1..=7u64 {
        let scratch = Scratch::new(&format!("keyed-change-kill-{step}"));
        let path = scratch.path("gcra");
        let table = KeyedLimiter::open(&path, &old, 2).unwrap();
        assert!(table.acquire_at(b"ann", 4, Instant::ZERO).unwrap().allowed);
        assert!(table.acquire_at(b"bob", 10, Instant::ZERO).unwrap().allowed);
        let killed = killed_in_child(|| {
            let table = KeyedLimiter::open(&path, &old, 2).unwrap();
            librate::crashes::kill_at(step);
            table.set_config_at(&new, Instant::ZERO).unwrap();
        });
        assert_eq!(killed, step <= 6, "step {step}");
        // An opener settles the dead change first: one rule for every opener, the other
        // one refused.
        let (held, other) = if step == 1 {
            (&old, &new)
        } else {
            (&new, &old)
        };
        assert_incompatible(KeyedLimiter::open(&path, other, 2).unwrap_err(), &path);
        let ann = table.acquire_at(b"ann", 0, Instant::ZERO).unwrap();
        let bob = table.acquire_at(b"bob", 0, Instant::ZERO).unwrap();
        let expected = if step == 1 { (10, 6, 0) } else { (5, 5, 0) };
        assert_eq!(
            (ann.limit, ann.remaining, bob.remaining),
            expected,
            "step {step}"
        );
        let reopened = KeyedLimiter::open(&path, held, 2).unwrap();
        assert_eq!(
            reopened
                .acquire_at(b"ann", 0, Instant::ZERO)
                .unwrap()
                .remaining,
            expected.1
        );
        // The next change takes the lock over and carries the state on: 20 a second keeps
        // the 6 tokens left; 5 of 5 is a full bucket, a fresh state, which starts anew
        // with 20.
        reopened
            .set_config_at(&Config::per_second(20), Instant::ZERO)
            .unwrap();
        let ann = table.acquire_at(b"ann", 0, Instant::ZERO).unwrap();
        let tokens = if step == 1 { 6 } else { 20 };
        assert_eq!((ann.limit, ann.remaining), (20, tokens), "step {step}");
        assert!(
            !table.acquire_at(b"bob", 1, Instant::ZERO).unwrap().allowed,
            "step {step}"
        );
    }
}

/// A keyed policy's rules change in its file for every process: the per-key rule's table
/// carries each key over, the global rule's limiter its count; an opener that asks
/// replaces the file's rules, and one that does not is refused.
#[test]
fn a_policy_changes_in_its_file() {
    let scratch = Scratch::new("keyed-change-policy");
    let path = scratch.path("policy");
    // Rules of an hour, decided at the clock's now (as an opener's change is), in which
    // the clock's advance during the test refills nothing and ends no window.
    let old = [
        KeyedRule::per_key(Config::per_hour(10)),
        KeyedRule::global(Config::fixed_window(100, Duration::from_secs(3600))),
    ];
    let new = [
        KeyedRule::per_key(Config::per_hour(5)),
        KeyedRule::global(Config::fixed_window(1000, Duration::from_secs(3600))),
    ];
    let here = KeyedPolicy::open(&path, &old, 10).unwrap();
    assert!(here.acquire(b"ann", 4).unwrap().decision.allowed);
    let statuses = in_processes(1, |_| {
        let Ok(there) = KeyedPolicy::open(&path, &old, 10) else {
            return 1;
        };
        u8::from(there.set_rules(&new).is_err()) * 2
    });
    assert_eq!(statuses, [0]);
    let now = here.acquire(b"ann", 0).unwrap();
    // ann: min(6, 5) = 5 tokens; the window keeps its 4 of now 1,000.
    assert_eq!(
        (now.rules()[0].remaining, now.rules()[1].remaining),
        (5, 996)
    );
    assert_incompatible(KeyedPolicy::open(&path, &old, 10).unwrap_err(), &path);
    assert!(describe_file(&path).unwrap().ends_with(&format!(
        ": a librate keyed policy of capacity 10 holding 2 rules: GCRA, limit 5, period_ns \
         {HOUR}, burst 5 (its rule changed 1 time since it was made) (per key); fixed window, \
         limit 1000, period_ns {HOUR} (its rule changed 1 time since it was made) (global)"
    )));
    let newer = [
        KeyedRule::per_key(Config::per_hour(20)),
        KeyedRule::global(Config::fixed_window(10, Duration::from_secs(3600))),
    ];
    let replaced = KeyedPolicy::open_replacing(&path, &newer, 10).unwrap();
    let now = replaced.acquire(b"ann", 0).unwrap();
    // ann's 5 of 5 is a full bucket, a fresh state, which starts anew with a burst of
    // 20; the window's 4 of 10 leave 6.
    assert_eq!(
        (now.rules()[0].remaining, now.rules()[1].remaining),
        (20, 6)
    );
    assert_eq!(here.acquire(b"ann", 0).unwrap().rules()[0].limit, 20);
    // Another scope in a rule's place is refused even when replacing.
    let swapped = [newer[1], newer[0]];
    assert_incompatible(
        KeyedPolicy::open_replacing(&path, &swapped, 10).unwrap_err(),
        &path,
    );
}

/// A keyed table file's size (docs/shared.md, where to put the file): the 16-word header,
/// the rule's 32-word block and 512 lines of pins (33,152 bytes), then three copies of the
/// table, each a control block and claim registry of 528 words and 2 slots of 2 words
/// per key of capacity (GCRA), rounded up to 16 words: for 100,000 keys, 3 × 400,528
/// words, 9,645,824 bytes in all. The two copies a change uses are holes until one does.
#[test]
fn a_keyed_table_file_holds_its_rule_and_three_tables() {
    use std::os::unix::fs::MetadataExt;
    let scratch = Scratch::new("keyed-change-size");
    let path = scratch.path("gcra");
    let table = KeyedLimiter::open(&path, &Config::per_second(10), 100_000).unwrap();
    let metadata = std::fs::metadata(&path).unwrap();
    assert_eq!(metadata.len(), 9_645_824);
    // Blocks of 512 bytes: at most the header, rule block and first copy, written.
    let copy = 400_528 * 8;
    assert!(
        metadata.blocks() * 512 <= 33_152 + copy + 8192,
        "{metadata:?}"
    );
    table.set_config(&Config::per_second(5)).unwrap();
    assert!(std::fs::metadata(&path).unwrap().blocks() * 512 >= 2 * copy);
}
