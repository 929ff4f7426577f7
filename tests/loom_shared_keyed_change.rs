//! loom model checks of a change of rule in a shared keyed table's file (docs/shared.md,
//! changing the rule; `src/keyed/file.rs`): the sweep that moves every key into the file's
//! next region racing acquires of another process, and a changer that stops for good at
//! each of its steps.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom cargo
//! test --release --test loom_shared_keyed_change`
//!
//! Each thread plays a process with its own table on the file's words
//! (`KeyedLimiter::attach_model`): its own regions, its own entry in the pins' registry.
//! The rules are allowances (a period that never ends), whose state is the units used, so
//! what is left follows from the admissions alone, whatever the interleaving. The table
//! has capacity 1: two slots, both swept by every change.

#![cfg(loom)]

use librate::{crashes, Config, Instant, KeyedLimiter};
use loom::thread;

/// More crash points than a change of a two-slot table passes (after recording it, after
/// freezing each slot, after publishing): the last run completes it.
const STEPS: u32 = 5;

fn allowance(units: u64) -> Config {
    Config::gcra(units, Config::FOREVER)
}

/// A table whose key `a` used 1 unit of an allowance of 2: 1 left.
fn table() -> KeyedLimiter {
    let here = KeyedLimiter::model_file(&allowance(2), 1).unwrap();
    assert!(here.acquire_at(b"a", 1, Instant::ZERO).unwrap().allowed);
    here
}

/// A change made by one process while another acquires the key's last unit: the acquire
/// is made under the old rule before the key's slot is frozen (0 left, carried over as 0
/// of 3) or under the new one once the change is published (1 left carried over, then
/// taken): none left of 3 either way, for every process.
#[test]
fn a_change_racing_an_acquire_in_another_process() {
    loom::model(|| {
        let here = table();
        let there = here.attach_model().unwrap();
        let acquirer = thread::spawn(move || {
            crashes::play(2, None, || {
                let allowed = there.acquire_at(b"a", 1, Instant::ZERO).unwrap().allowed;
                (allowed, there.acquire_at(b"a", 0, Instant::ZERO).unwrap())
            })
        });
        here.set_config_at(&allowance(3), Instant::ZERO).unwrap();
        let (allowed, seen) = acquirer.join().unwrap().unwrap();
        assert!(allowed);
        assert_eq!(seen.remaining, 0, "{seen:?}");
        let decision = here.acquire_at(b"a", 0, Instant::ZERO).unwrap();
        assert_eq!((decision.limit, decision.remaining), (3, 0));
    });
}

/// Three changes while another process acquires, the third reusing the region of the
/// first: allowances of 4, 4, 2 and 2 units, key `a` having used 3 (1 left, which no cap
/// takes). The acquire of 1 is admitted under any of them, and leaves none, however it
/// interleaves with the changes. An acquire that landed on the third change's region
/// while that change laid it out anew (finding no key there, so a new one with 4 units)
/// would be admitted and then overwritten by the key's state moved in, leaving 1: the
/// third change waits, through the pins, for any decision that read the first change's
/// rule as the one in force.
#[test]
fn a_change_that_reuses_a_region_waits_for_the_decisions_on_it() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    // The changes' many words (two regions laid out anew, four slots swept) make long
    // paths, not spins.
    model.max_branches = 20_000;
    model.check(|| {
        let here = KeyedLimiter::model_file(&allowance(4), 1).unwrap();
        assert!(here.acquire_at(b"a", 3, Instant::ZERO).unwrap().allowed);
        here.set_config_at(&allowance(4), Instant::ZERO).unwrap();
        let there = here.attach_model().unwrap();
        let acquirer = thread::spawn(move || {
            crashes::play(2, None, || {
                there.acquire_at(b"a", 1, Instant::ZERO).unwrap().allowed
            })
        });
        for units in [2, 2] {
            here.set_config_at(&allowance(units), Instant::ZERO)
                .unwrap();
        }
        assert_eq!(acquirer.join().unwrap(), Some(true));
        let decision = here.acquire_at(b"a", 0, Instant::ZERO).unwrap();
        assert_eq!((decision.limit, decision.remaining), (2, 0));
    });
}

/// A process that stops for good at each step of its change while another acquires the
/// key's last unit: the file stays usable, the key under one rule (the old one if the
/// change froze no slot, else the new one, the sweep finished by the process that needs
/// it), the admission counted once; and the next change takes the dead one's lock over.
#[test]
fn a_changer_that_stops_for_good_leaves_one_rule() {
    for stop_at in 0..STEPS {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(1);
        model.check(move || {
            let here = table();
            let there = here.attach_model().unwrap();
            let changer = thread::spawn(move || {
                crashes::play(2, Some(stop_at), || {
                    there.set_config_at(&allowance(3), Instant::ZERO)
                })
            });
            assert!(
                here.acquire_at(b"a", 1, Instant::ZERO).unwrap().allowed,
                "step {stop_at}"
            );
            let changed = changer.join().unwrap();
            let decision = here.acquire_at(b"a", 0, Instant::ZERO).unwrap();
            assert_eq!(decision.remaining, 0, "step {stop_at}: {decision:?}");
            if changed.is_some() {
                assert_eq!(decision.limit, 3, "step {stop_at}");
            }
            here.set_config_at(&allowance(4), Instant::ZERO).unwrap();
            let decision = here.acquire_at(b"a", 0, Instant::ZERO).unwrap();
            assert_eq!(
                (decision.limit, decision.remaining),
                (4, 0),
                "step {stop_at}"
            );
        });
    }
}
