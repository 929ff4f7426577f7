//! loom model checks of a change of rule in a shared limiter's file (docs/shared.md,
//! changing the rule; `src/shared/rules.rs`, `src/shared/pins.rs`).
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom cargo
//! test --release --test loom_shared_change`
//!
//! Each thread plays a process with its own limiter on the file's words
//! (`Limiter::attach_model`): its own generations, its own entry in the pins' registry.
//! The rules are allowances (a period that never ends), whose state is the units used, so
//! what is left follows from the admissions alone, whatever the interleaving.

#![cfg(loom)]

use librate::{crashes, Config, Instant, Limiter};
use loom::thread;

/// More crash points than a change passes: the last runs complete it.
const STEPS: u32 = 4;

fn allowance(units: u64) -> Config {
    Config::gcra(units, Config::FOREVER)
}

/// A change made by one process while another acquires: the acquire is made under the
/// old rule before the change (2 → 1 left, carried over as 1 of 3) or under the new one
/// after it (2 carried over, then 1 taken): 1 left of 3 either way, for every process.
#[test]
fn a_change_racing_an_acquire_in_another_process() {
    loom::model(|| {
        let here = Limiter::model_file(&allowance(2)).unwrap();
        let there = here.attach_model().unwrap();
        let acquirer = thread::spawn(move || {
            crashes::play(2, None, || {
                let allowed = there.acquire_at(1, Instant::ZERO).unwrap().allowed;
                (allowed, there.acquire_at(0, Instant::ZERO).unwrap())
            })
        });
        here.set_config_at(&allowance(3), Instant::ZERO).unwrap();
        let (allowed, seen) = acquirer.join().unwrap().unwrap();
        assert!(allowed);
        assert!(seen.remaining == 1, "{seen:?}");
        let decision = here.acquire_at(0, Instant::ZERO).unwrap();
        assert_eq!((decision.limit, decision.remaining), (3, 1));
    });
}

/// Three changes while another process acquires, the third reusing the words of the
/// first: allowances of 4, 4, 1 and 1 unit. An acquire of 2 under either rule of 4 is
/// admitted, and the change to 1 caps what is left (2) at 1; under a rule of 1 it is
/// refused as more than the limit. So 1 is left either way, and an admission under a
/// rule of 4 that landed on the third change's words (which hold 0 used, as the first's
/// did) would leave none: the third change waits, through the pins, for any decision that
/// read the first change's rule as the one in force.
#[test]
fn a_change_that_reuses_words_waits_for_the_decisions_on_them() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let here = Limiter::model_file(&allowance(4)).unwrap();
        here.set_config_at(&allowance(4), Instant::ZERO).unwrap();
        let there = here.attach_model().unwrap();
        let acquirer = thread::spawn(move || {
            crashes::play(2, None, || there.acquire_at(2, Instant::ZERO).is_ok())
        });
        for units in [1, 1] {
            here.set_config_at(&allowance(units), Instant::ZERO)
                .unwrap();
        }
        acquirer.join().unwrap();
        let decision = here.acquire_at(0, Instant::ZERO).unwrap();
        assert_eq!((decision.limit, decision.remaining), (1, 1));
    });
}

/// A process that stops for good at each step of its change while another acquires: the
/// file stays usable, under one rule (the old one if the change froze nothing, else the
/// new one, finished by the process that needs it), the admission counted once; and the
/// next change takes the dead one's lock over.
#[test]
fn a_changer_that_stops_for_good_leaves_one_rule() {
    for stop_at in 0..STEPS {
        loom::model(move || {
            let here = Limiter::model_file(&allowance(2)).unwrap();
            let there = here.attach_model().unwrap();
            let changer = thread::spawn(move || {
                crashes::play(2, Some(stop_at), || {
                    there.set_config_at(&allowance(3), Instant::ZERO)
                })
            });
            assert!(
                here.acquire_at(1, Instant::ZERO).unwrap().allowed,
                "step {stop_at}"
            );
            let changed = changer.join().unwrap();
            let decision = here.acquire_at(0, Instant::ZERO).unwrap();
            assert_eq!(decision.remaining, 1, "step {stop_at}: {decision:?}");
            if changed.is_some() {
                assert_eq!(decision.limit, 3, "step {stop_at}");
            }
            here.set_config_at(&allowance(4), Instant::ZERO).unwrap();
            let decision = here.acquire_at(0, Instant::ZERO).unwrap();
            assert_eq!(
                (decision.limit, decision.remaining),
                (4, 1),
                "step {stop_at}"
            );
        });
    }
}
