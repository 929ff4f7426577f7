//! A limiter's rule and its state words as one **generation**, which a change of rule
//! (`Limiter::set_config`) replaces whole, lock-free for every decision.
//!
//! # Replacing a generation
//! The current generation sits behind an atomic pointer (null for the generation the
//! limiter was built with, which it holds in place). A change:
//! 1. swaps the current generation's first state word to [`REPLACED`] (a marker no state
//!    ever holds), from the value `v` it last held: the change's instant. Every decision
//!    commits by a compare-and-swap of that word from the value it decided on (the state
//!    layer's promise, `state/cell.rs`), so every decision either committed before this
//!    swap (it is in `v`) or fails against the marker and commits nothing;
//! 2. converts the state `v` heads into fresh words of the new rule (the carry-over rules,
//!    `algorithm/carry.rs`), which no other thread can see yet;
//! 3. publishes the new generation by a `Release` store of the pointer.
//!
//! A decision runs first on the first generation, which the limiter holds in place, with
//! the words' [`Replaceable`] tenancy: the state layer shows it every first-word value it
//! decides on, and it refuses the marker, so no decision is ever made on it. A limiter
//! whose rule never changed so decides as one that cannot change would, but for that one
//! comparison. A decision refused there goes out of line: it loads the pointer (`Acquire`:
//! it then sees the new words as the change wrote them) and decides with that
//! generation's rule on that generation's words, and if those were replaced too (a later
//! change), loads it again, waiting in the short step between 1 and 3 for the change to
//! publish: acquires are lock-free but while a change is in flight. So each decision is
//! made wholly under one rule, on one state, and the new state is the conversion of the
//! old at one instant: no admission is lost or counted twice. The marker never leaves the
//! replaced words, so a compare-and-swap that expects an older value can never succeed
//! there (no ABA).
//!
//! Changes are serialized (`versions.rs`), so a change always finds the words it replaces
//! unmarked: a second change waits for the first, then replaces its generation.
//!
//! # In a file
//! A limiter whose rule can change in its file (`shared/rules.rs`) holds the file's side A
//! as its first generation, decided on as above, and the generation of the rule in force
//! behind the pointer: a decision refused on side A (a change in the file froze it, for
//! good) decides pinned in the file too, on the rule whose serial the file says is in
//! force, and **adopts** a newer one (publishes a generation of it here) before it
//! decides. A change is made in the file, by whichever process, and this process adopts
//! it at its next decision.
//!
//! # Memory
//! Generations are versions (`versions.rs`): a decision out of line reads the generation
//! in force pinned, and a replaced generation is freed once no pinned thread can still be
//! deciding on it, so a limiter holds at most a few generations however many changes it
//! sees. The first generation's path pins nothing.

use crate::config::Config;
use crate::decider::Decider;
use crate::error::{ChangeError, SharedError};
use crate::replaced::{Replaceable, Replaced, REPLACED};
use crate::shared::{Mapping, OneState};
use crate::sync::{AtomicU64, Backoff, Ordering};
use crate::time::TimeSource;
use crate::versions::{Kept, Pin, Version, Versions};
use std::ptr::NonNull;
use std::sync::Arc;

mod file;
pub(crate) use self::file::InFile;

/// A request's check against a rule, before it runs: an acquire's
/// ([`Decider::check`]) or a reserve's ([`Decider::check_reserve`]), its error the
/// request's.
pub(crate) trait Check<E>: Fn(&Decider) -> Result<(), E> + Copy {}

impl<E, F: Fn(&Decider) -> Result<(), E> + Copy> Check<E> for F {}

/// Words of padding on each side of the state, so no other allocation shares its cache
/// lines: 128 bytes, the unit x86-64's adjacent-line prefetcher pulls in pairs (the same
/// figure as crossbeam-utils' `CachePadded`). loom models each word, so it gets none.
const PAD_WORDS: usize = if cfg!(loom) { 0 } else { 16 };

/// What a decision shows every first-word value of a generation's words: a change may
/// replace them (every generation's words, this process's own or a file's).
pub(crate) const MAY_BE_REPLACED: Replaceable = Replaceable { replaceable: true };

/// A rule and the state words it decides on.
#[derive(Debug)]
pub(crate) struct Generation {
    pub(crate) decider: Decider,
    pub(crate) config: Config,
    /// The state words, in `_memory`: `state_len` of them (the decider's `state_words()`,
    /// kept here so the hot path does not dispatch for it).
    state: NonNull<AtomicU64>,
    state_len: usize,
    /// Owns the state words: kept, never read.
    _memory: Memory,
    /// 0 for the limiter's first generation, one more for each change
    /// (`Change::serial` in `versions.rs`): what a refund keeps to know it again.
    pub(crate) serial: u64,
}

// SAFETY: `state` points into `_memory`, which the generation owns and which never moves
// (a heap block or a mapping); the words are only ever accessed atomically.
unsafe impl Send for Generation {}
// SAFETY: as above.
unsafe impl Sync for Generation {}

/// Where a generation's state words live.
#[derive(Debug)]
pub(crate) enum Memory {
    /// This process's heap, padded on both sides.
    Private { _words: Box<[AtomicU64]> },
    /// A file every process that opens it maps.
    Shared { _mapping: Arc<Mapping> },
}

impl Generation {
    /// A generation of `decider` over fresh (all zero) words on this process's heap.
    pub(crate) fn private(decider: Decider, config: &Config) -> Self {
        let words: Box<[AtomicU64]> = (0..decider.state_words() + 2 * PAD_WORDS)
            .map(|_| AtomicU64::new(0))
            .collect();
        let state = NonNull::from(&words[PAD_WORDS]);
        let memory = Memory::Private { _words: words };
        Self::new(decider, config, state, memory)
    }

    /// A generation of `decider` over the words at `state` in `memory` (this process's
    /// own, or a file's: `generations/file.rs`), which a change may replace.
    pub(crate) fn new(
        decider: Decider,
        config: &Config,
        state: NonNull<AtomicU64>,
        memory: Memory,
    ) -> Self {
        let state_len = decider.state_words();
        // Every rule keeps a word at least: `first_word` counts on it.
        assert!(state_len >= 1, "a rule without state words");
        Self {
            state_len,
            decider,
            config: *config,
            state,
            _memory: memory,
            serial: 0,
        }
    }

    /// Whether a change replaced these words. Relaxed: the marker is final, so a load
    /// after a decision that read it sees it too (coherence), and it publishes nothing.
    #[inline]
    fn is_replaced(&self) -> bool {
        self.first_word().load(Ordering::Relaxed) == REPLACED
    }

    #[inline(always)]
    pub(crate) fn state(&self) -> &[AtomicU64] {
        // SAFETY: `state` points to `state_len` words inside `_memory`, which lives as long
        // as `self` and never moves.
        unsafe { std::slice::from_raw_parts(self.state.as_ptr(), self.state_len) }
    }

    /// The first of [`state`](Self::state)'s words, without a length to check.
    #[inline(always)]
    pub(crate) fn first_word(&self) -> &AtomicU64 {
        // SAFETY: `state` points to `state_len` words, at least one (`new`), inside
        // `_memory`, which lives as long as `self` and never moves.
        unsafe { self.state.as_ref() }
    }
}

/// One operation of a limiter on a generation's rule and words, as
/// [`Generations::decide`] runs it: a trait rather than a closure, so that `run`, marked
/// `#[inline(always)]`, is inlined into the decision as the state layer's own code is (a
/// closure is a function the optimiser may leave out of line, a call on every decision).
pub(crate) trait Operation: Copy {
    /// What the operation returns.
    type Output;

    /// Runs the operation on `generation`'s words, shown to `tenancy`: `Err` if they were
    /// replaced, with nothing decided or written.
    fn run(
        self,
        generation: &Version<Generation>,
        tenancy: &Replaceable,
    ) -> Result<Self::Output, Replaced>;
}

/// A limiter's generations: the first, in place, and the one in force.
#[derive(Debug)]
pub(crate) struct Generations {
    versions: Versions<Generation>,
    /// The configurations [`config`](Self::config) lent out after a change.
    configs: Kept<Config>,
    /// The file whose rule this limiter follows, if its rule can change there.
    file: Option<InFile>,
}

impl Generations {
    pub(crate) fn new(first: Generation) -> Self {
        Self {
            versions: Versions::new(first),
            configs: Kept::new(),
            file: None,
        }
    }

    /// The configuration in force, lent for as long as the limiter lives: the first
    /// generation's, or after a change, a kept copy of the one in force (in a file, the
    /// file's).
    pub(crate) fn config(&self) -> &Config {
        // A hostile file's error leaves the rule last adopted, which its decisions report.
        let _ = self.follow();
        self.configs
            .lend(&self.versions, |generation| &generation.config)
    }

    /// The generation the limiter was built with: what a change cannot alter (its
    /// algorithm, and whether its words are this process's) is read there.
    #[inline]
    pub(crate) fn first(&self) -> &Generation {
        self.versions.first()
    }

    /// Runs `read` on the generation in force: the first, or another pinned (in a file,
    /// pinned there too, on the file's rule in force).
    pub(crate) fn with_current<R>(&self, read: impl FnOnce(&Version<Generation>) -> R) -> R {
        if let Some(file) = &self.file {
            return self.with_current_in_file(file, read);
        }
        match self.versions.first_in_force() {
            Some(first) => read(first),
            None => read(self.versions.pin().current()),
        }
    }

    /// Runs `operation` on the generation in force for a request that `check` checks
    /// against a rule (an acquire's [`Decider::check`] or a reserve's), and returns its
    /// result, or the error of that check (in a file, or what the file gives).
    ///
    /// It runs first on the first generation, in place, as a limiter whose rule never
    /// changed decides: no pointer to follow, nothing pinned, and the words' tenancy a
    /// comparison of each first-word value with [`REPLACED`] that a state never fails.
    /// `operation` passes the tenancy on to the state layer, which shows it every value it
    /// decides on, so it never decides on the marker: `Err(Replaced)` means it decided
    /// nothing. Then, or if the rule refuses the request, it runs again, pinned, where
    /// [`next`](Self::next) says.
    #[inline(always)]
    pub(crate) fn decide<O: Operation, E: From<SharedError>>(
        &self,
        check: impl Check<E>,
        operation: O,
    ) -> Result<O::Output, E> {
        let first = self.versions.first();
        if check(&first.decider).is_ok() {
            if let Ok(result) = operation.run(first, &MAY_BE_REPLACED) {
                return Ok(result);
            }
        }
        // A result that fits the two registers a call returns comes back from an
        // out-of-line call, which keeps the retries' code off the path; a larger one
        // would be written to memory on every decision, to meet the call's, so the
        // retries run here.
        if std::mem::size_of::<Result<O::Output, E>>() <= 2 * std::mem::size_of::<u64>() {
            self.decide_again(check, operation)
        } else {
            self.run_again(check, operation)
        }
    }

    /// [`decide`](Self::decide)'s first try of a try-acquire of `n` units when it needs no
    /// call ([`Decider::try_acquire_inline`]): the first generation's rule admits the
    /// request and its words hold no marker. `None`, having decided nothing, otherwise.
    #[inline(always)]
    pub(crate) fn try_acquire_inline(&self, time: impl TimeSource, n: u64) -> Option<bool> {
        let first = self.versions.first();
        let decided =
            (first.decider).try_acquire_inline(first.first_word(), &MAY_BE_REPLACED, time, n)?;
        decided.ok()
    }

    /// [`run_again`](Self::run_again), out of line.
    #[cold]
    #[inline(never)]
    fn decide_again<O: Operation, E: From<SharedError>>(
        &self,
        check: impl Check<E>,
        operation: O,
    ) -> Result<O::Output, E> {
        self.run_again(check, operation)
    }

    /// Runs `operation` after the first generation's rule refused the request or its
    /// words held the marker, pinned, where [`next`](Self::next) says, until it decides.
    #[inline(always)]
    fn run_again<O: Operation, E: From<SharedError>>(
        &self,
        check: impl Check<E>,
        operation: O,
    ) -> Result<O::Output, E> {
        if let Some(file) = &self.file {
            return self.run_in_file(file, check, operation);
        }
        let pin = self.versions.pin();
        let mut tried = self.versions.first();
        let mut backoff = Backoff::default();
        loop {
            let generation = Self::next(&pin, tried, check, &mut backoff)?;
            if let Ok(result) = operation.run(generation, &MAY_BE_REPLACED) {
                return Ok(result);
            }
            tried = generation;
        }
    }

    /// Where [`decide`](Self::decide) runs a request again after `tried`'s rule refused
    /// it or its words held the marker, checked by that generation's rule. A generation
    /// in force (never replaced) that refused it gives its error; else the generation in
    /// force runs it, waited for while a change is in flight. Out of line, so neither the pointer nor the waiting is
    /// on the path of a limiter whose rule never changed.
    #[cold]
    #[inline(never)]
    fn next<'a, E>(
        pin: &'a Pin<'_, Generation>,
        mut tried: &'a Version<Generation>,
        check: impl Check<E>,
        backoff: &mut Backoff,
    ) -> Result<&'a Version<Generation>, E> {
        loop {
            let generation = if tried.is_replaced() {
                let current = pin.current();
                if std::ptr::eq(current, tried) {
                    // A change publishes the next generation a few steps after it marks
                    // the words; spin, then yield, in case its thread was descheduled
                    // between them. The latest value, by a read-modify-write: a load may
                    // return an older one for a while.
                    backoff.snooze();
                    pin.latest()
                } else {
                    current
                }
            } else {
                check(&tried.decider)?;
                tried
            };
            if check(&generation.decider).is_ok() {
                return Ok(generation);
            }
            tried = generation;
        }
    }

    /// Replaces the generation in force by one of `decider` whose state is the old one's
    /// carried over at `now` (module docs). The new words are allocated before the old
    /// are frozen, so decisions wait only while the state is converted. A limiter that
    /// follows its file's rule changes it in the file (`shared/rules.rs`), then adopts it.
    ///
    /// # Errors
    /// [`ConfigError::LiveChange`](crate::ConfigError::LiveChange) if the state cannot be
    /// carried over to `decider` ([`Decider::check_change`]); in a file, as `Rules::change`.
    pub(crate) fn replace(
        &self,
        decider: Decider,
        config: &Config,
        now: u64,
    ) -> Result<(), ChangeError> {
        if let Some(file) = &self.file {
            let serial = file.rules().change(config, &decider, now, &OneState)?;
            return Ok(self.adopt(file, serial).map(drop)?);
        }
        let mut new = Generation::private(decider, config);
        let mut change = self.versions.change();
        new.serial = change.serial();
        let (old, _) = change.current();
        (old.decider).check_change(&new.decider)?;
        let first = freeze(&old.state()[0]).expect("changes are serialized: none froze it");
        old.decider
            .carry_over(old.state(), first, now, &new.decider, new.state());
        // Publishes the new words (a Release store); the old generation is retired, and
        // freed once no thread can still be deciding on it, when `change` drops.
        change.publish(new);
        Ok(())
    }
}

/// Swaps `first` to [`REPLACED`] and returns the value it held, or `None` if it already
/// held the marker.
fn freeze(first: &AtomicU64) -> Option<u64> {
    // Acquire, the load and the swap: pairs with the Release swap that installed the
    // value, so the other words it publishes (window records) are read as new as it.
    let mut held = first.load(Ordering::Acquire);
    loop {
        if held == REPLACED {
            return None;
        }
        match first.compare_exchange_weak(held, REPLACED, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => return Some(held),
            Err(actual) => held = actual,
        }
    }
}
