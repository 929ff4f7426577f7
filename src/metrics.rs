//! The counts (docs/metrics.md) published through the [`metrics`](https://docs.rs/metrics)
//! facade, for whichever exporter the program installs (Prometheus, StatsD, OpenTelemetry):
//! with the `metrics` feature.
//!
//! One counter, `ratelimit.requests`, named and labelled in the OpenTelemetry style, with
//! the labels
//! - `limiter`: the name the handle was registered under;
//! - `result`: `admitted`, `denied`, `table_full` or `shadow_denied`;
//! - `rule`: for a policy's `denied` and `shadow_denied`, the rule's name (or its index,
//!   from 0, if the rules were not named); empty otherwise.
//!
//! The counts are read when [`Reporter::report`] runs (before an exporter renders, or on a
//! timer) and set as the counters' absolute values: deciding never calls the facade.
//!
//! ```
//! use librate::metrics::Reporter;
//! use librate::{Config, Limiter};
//! use std::sync::Arc;
//! use std::time::Duration;
//! let login = Arc::new(Limiter::new(&Config::gcra(5, Duration::from_secs(60))).unwrap());
//! let reporter = Reporter::new();
//! reporter.register("login", &login); // turns its counting on
//! login.try_acquire(1).unwrap();
//! reporter.report(); // ratelimit.requests{limiter="login",result="admitted",rule=""} = 1
//! ```

use crate::counters::Counts;
use crate::keyed::KeyedLimiter;
use crate::lease::LeaseHolder;
use crate::limiter::Limiter;
use crate::policy::{KeyedPolicy, Policy};
use std::sync::{Arc, Mutex, Weak};

/// The counter's name.
pub const REQUESTS: &str = "ratelimit.requests";

/// A handle whose requests can be counted: a limiter, a keyed table, a policy, a keyed
/// policy, a lease holder, or (with the `redis` feature) a Redis limiter or policy, or a
/// leased limiter.
pub trait Counted: Send + Sync {
    /// Turns counting on (see [`Limiter::enable_counts`]).
    fn enable_counts(&self);
    /// The counts so far; `None` while counting is off.
    fn counts(&self) -> Option<Counts>;
}

macro_rules! counted {
    ($($handle:ty),*) => {$(
        impl Counted for $handle {
            fn enable_counts(&self) {
                <$handle>::enable_counts(self);
            }
            fn counts(&self) -> Option<Counts> {
                <$handle>::counts(self)
            }
        }
    )*};
}
counted!(Limiter, Policy, LeaseHolder);
#[cfg(feature = "redis")]
counted!(
    crate::redis::RedisLimiter,
    crate::redis::RedisPolicy,
    crate::lease::LeasedLimiter,
    crate::lease::KeyedLeasedLimiter
);

impl<S: std::hash::BuildHasher + Send + Sync> Counted for KeyedLimiter<S> {
    fn enable_counts(&self) {
        KeyedLimiter::enable_counts(self);
    }
    fn counts(&self) -> Option<Counts> {
        KeyedLimiter::counts(self)
    }
}

impl<S: std::hash::BuildHasher + Send + Sync> Counted for KeyedPolicy<S> {
    fn enable_counts(&self) {
        KeyedPolicy::enable_counts(self);
    }
    fn counts(&self) -> Option<Counts> {
        KeyedPolicy::counts(self)
    }
}

/// The handles whose counts [`report`](Self::report) publishes. It holds them weakly: a
/// handle dropped is no longer reported.
#[derive(Debug, Default)]
pub struct Reporter {
    registered: Mutex<Vec<Registered>>,
}

struct Registered {
    name: String,
    rules: Vec<String>,
    handle: Weak<dyn Counted>,
}

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registered")
            .field("name", &self.name)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl Reporter {
    /// A reporter of no handle yet. It describes the counter to the facade's recorder
    /// installed now, if any.
    pub fn new() -> Self {
        metrics::describe_counter!(
            REQUESTS,
            metrics::Unit::Count,
            "Requests decided by a rate limiter, by result and by the rule that denied"
        );
        Self::default()
    }

    /// Reports `handle`'s counts under `name`, its rules by index; turns its counting on.
    pub fn register<T: Counted + 'static>(&self, name: &str, handle: &Arc<T>) {
        self.register_rules(name, &[], handle);
    }

    /// As [`register`](Self::register), a policy's rules named `rules` in their order (a
    /// rule past the names is named by its index).
    pub fn register_rules<T: Counted + 'static>(
        &self,
        name: &str,
        rules: &[&str],
        handle: &Arc<T>,
    ) {
        handle.enable_counts();
        let handle: Arc<dyn Counted> = handle.clone();
        let registered = Registered {
            name: name.to_owned(),
            rules: rules.iter().map(|rule| (*rule).to_owned()).collect(),
            handle: Arc::downgrade(&handle),
        };
        self.lock().push(registered);
    }

    /// Sets every registered handle's counters to its counts now, through the recorder
    /// installed (or the thread's local one); forgets the handles since dropped.
    pub fn report(&self) {
        self.lock().retain(|registered| {
            let Some(handle) = registered.handle.upgrade() else {
                return false;
            };
            if let Some(counts) = handle.counts() {
                registered.report(&counts);
            }
            true
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Registered>> {
        // A panic while reporting left the list whole: each change is one push or retain.
        self.registered
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Registered {
    fn report(&self, counts: &Counts) {
        let set = |result: &'static str, rule: String, value: u64| {
            let labels = [
                ("limiter", self.name.clone()),
                ("result", result.to_owned()),
                ("rule", rule),
            ];
            metrics::counter!(REQUESTS, &labels).absolute(value);
        };
        set("admitted", String::new(), counts.admitted);
        set("table_full", String::new(), counts.table_full);
        if counts.rules().len() == 1 && self.rules.is_empty() {
            set("denied", String::new(), counts.denied);
            return;
        }
        for (index, rule) in counts.rules().iter().enumerate() {
            let name = self
                .rules
                .get(index)
                .cloned()
                .unwrap_or_else(|| index.to_string());
            set("denied", name.clone(), rule.denied);
            set("shadow_denied", name, rule.shadow_denied);
        }
    }
}
