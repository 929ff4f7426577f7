//! Changing a limiter's rule at run time: a new generation of its words, the state carried
//! over (`generations.rs`).

use super::Limiter;
use crate::config::Config;
use crate::decider::Decider;
use crate::error::{ChangeError, ConfigError};
use crate::time::Instant;

impl Limiter {
    /// Replaces the rule this limiter enforces, now, keeping what was consumed under the
    /// old one (a customer changes plan, an operator tightens a limit during an incident).
    /// See [`set_config_at`](Self::set_config_at).
    ///
    /// # Errors
    /// As [`set_config_at`](Self::set_config_at).
    pub fn set_config(&self, config: &Config) -> Result<(), ChangeError> {
        self.set_config_at(config, Instant::now())
    }

    /// Replaces the rule this limiter enforces at `at`, carrying the state over:
    /// - **GCRA keeps the tokens** (as x/time/rate's `SetLimit`): the units a request could
    ///   take at `at` stay (fractions included, and reserves queued past the burst as
    ///   negative tokens), then refill at the new rate, capped at the new burst.
    /// - **The fixed window and the sliding window counter keep what is counted**, in
    ///   units: the count of the window holding `at` (and, for the sliding window
    ///   counter, of the window before it) moves to the new period's window holding
    ///   `at` (and the one before it), each capped at the new limit. Windows are cut
    ///   from 0 at the new period, `[k·P', (k+1)·P')`, as for any limiter of it.
    /// - **A period of [`Config::FOREVER`]** keeps its algorithm's rule: a bucket becomes
    ///   an allowance of its whole tokens left, and back; a window counter an allowance
    ///   with what it counts used (the sliding window's weighted estimate), and back, the
    ///   units used then counted in the current window.
    ///
    /// Each decision racing a change is made wholly under the old rule, on the old state
    /// (and carried over with it), or wholly under the new one: the change takes effect at
    /// one instant, and acquires stay lock-free (one meeting a change in flight waits for
    /// it to publish, a few steps). The old rule's words are freed once no thread can still
    /// be deciding on them.
    ///
    /// A limiter opened from a file ([`open`](Self::open)) changes the rule in the file,
    /// once, for every process attached: each decides under the new rule from its next
    /// decision (docs/shared.md, changing the rule).
    ///
    /// ```
    /// use librate::{Config, Instant, Limiter};
    /// use std::time::Duration;
    /// const SECOND: Duration = Duration::from_secs(1);
    /// // 10 a second; 6 taken, 4 tokens left.
    /// let limiter = Limiter::new(&Config::gcra(10, SECOND)).unwrap();
    /// assert!(limiter.acquire_at(6, Instant::ZERO).unwrap().allowed);
    /// // An incident: 1 a second, bursts of 2. The 4 tokens are capped at 2.
    /// limiter.set_config_at(&Config::gcra(1, SECOND).with_burst(2), Instant::ZERO).unwrap();
    /// assert_eq!(limiter.acquire_at(0, Instant::ZERO).unwrap().remaining, 2);
    /// assert!(limiter.acquire_at(2, Instant::ZERO).unwrap().allowed);
    /// assert_eq!(limiter.acquire_at(1, Instant::ZERO).unwrap().retry_after(), SECOND);
    /// ```
    ///
    /// # Errors
    /// [`ChangeError::Config`] as [`new`](Self::new), or with [`ConfigError::LiveChange`]
    /// for a change of algorithm, or of a sliding log's rule (its entries are not carried);
    /// in a file, [`ChangeError::Shared`]: [`SharedError::Busy`] if another process's
    /// change, or a decision of a stopped process, holds it up for seconds, and
    /// [`SharedError::Incompatible`] if the file's words hold no rule. Either way nothing
    /// changes.
    ///
    /// [`SharedError::Busy`]: crate::SharedError::Busy
    /// [`SharedError::Incompatible`]: crate::SharedError::Incompatible
    pub fn set_config_at(&self, config: &Config, at: Instant) -> Result<(), ChangeError> {
        let decider = Decider::new(config)?;
        self.generations.replace(decider, config, at.as_nanos())
    }

    /// Whether [`set_config_at`](Self::set_config_at) would take a rule of `decider`: the
    /// check a policy makes of every rule before it changes any. What it checks
    /// (the algorithm, and whether the limiter lives in a file) no change alters.
    ///
    /// # Errors
    /// As [`set_config_at`](Self::set_config_at), but for an invalid configuration.
    pub(crate) fn check_change(&self, decider: &Decider) -> Result<(), ConfigError> {
        let first = self.generations.first();
        (first.decider).check_change(decider)
    }
}
