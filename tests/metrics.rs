//! The counts through the `metrics` facade (docs/metrics.md, exposing the counts): a
//! recorder of this test's own keeps each counter's value by its name and labels.
#![cfg(feature = "metrics")]

use librate::metrics::{Reporter, REQUESTS};
use librate::{Config, Instant, KeyedLimiter, Limiter, Policy};
use metrics::{
    Counter, CounterFn, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);
const T0: Instant = Instant::ZERO;

/// Counters by `name{label=value,...}`, labels in the order given.
#[derive(Default)]
struct Counters(Mutex<BTreeMap<String, Arc<Value>>>);

#[derive(Default)]
struct Value(AtomicU64);

impl CounterFn for Value {
    fn increment(&self, value: u64) {
        self.0.fetch_add(value, Relaxed);
    }
    fn absolute(&self, value: u64) {
        self.0.store(value, Relaxed);
    }
}

impl Recorder for Counters {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let labels: Vec<String> = key
            .labels()
            .map(|label| format!("{}={:?}", label.key(), label.value()))
            .collect();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        let value = self.0.lock().unwrap().entry(name).or_default().clone();
        Counter::from_arc(value)
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

impl Counters {
    fn values(&self) -> Vec<(String, u64)> {
        let values = self.0.lock().unwrap();
        values
            .iter()
            .map(|(name, value)| (name.clone(), value.0.load(Relaxed)))
            .collect()
    }
}

fn line(limiter: &str, result: &str, rule: &str, value: u64) -> (String, u64) {
    let name = format!("{REQUESTS}{{limiter={limiter:?},result={result:?},rule={rule:?}}}");
    (name, value)
}

#[test]
fn a_limiter_and_a_named_policy_are_reported_with_their_rules() {
    let recorder = Counters::default();
    let reporter = Reporter::new();
    // 2 a minute: the third request is denied.
    let login = Arc::new(Limiter::new(&Config::fixed_window(2, 60 * SECOND)).unwrap());
    reporter.register("login", &login);
    // 1 a second and 2 a minute, named.
    let rules = [
        Config::gcra(1, SECOND),
        Config::fixed_window(2, 60 * SECOND),
    ];
    let api = Arc::new(Policy::new(&rules).unwrap());
    reporter.register_rules("api", &["second", "minute"], &api);
    for _ in 0..3 {
        login.try_acquire_at(1, T0).unwrap();
    }
    // At 0 s: admitted, then denied by the per-second rule; at 1 s admitted (2 this
    // minute); at 2 s denied by the per-minute rule.
    for seconds in [0, 0, 1, 2] {
        api.try_acquire_at(1, T0 + seconds * SECOND).unwrap();
    }
    metrics::with_local_recorder(&recorder, || reporter.report());
    let mut expected = vec![
        line("api", "admitted", "", 2),
        line("api", "denied", "minute", 1),
        line("api", "denied", "second", 1),
        line("api", "shadow_denied", "minute", 0),
        line("api", "shadow_denied", "second", 0),
        line("api", "table_full", "", 0),
        line("login", "admitted", "", 2),
        line("login", "denied", "", 1),
        line("login", "table_full", "", 0),
    ];
    expected.sort();
    assert_eq!(recorder.values(), expected);
}

#[test]
fn a_report_sets_the_counts_now_and_forgets_dropped_handles() {
    let recorder = Counters::default();
    let reporter = Reporter::new();
    let users = Arc::new(KeyedLimiter::new(&Config::fixed_window(1, 60 * SECOND), 100).unwrap());
    reporter.register("users", &users);
    users.try_acquire_at(b"ann", 1, T0).unwrap();
    metrics::with_local_recorder(&recorder, || reporter.report());
    users.try_acquire_at(b"ann", 1, T0).unwrap();
    users.try_acquire_at(b"bob", 1, T0).unwrap();
    metrics::with_local_recorder(&recorder, || reporter.report());
    let admitted = line("users", "admitted", "", 2);
    let denied = line("users", "denied", "", 1);
    assert!(
        recorder.values().contains(&admitted),
        "{:?}",
        recorder.values()
    );
    assert!(
        recorder.values().contains(&denied),
        "{:?}",
        recorder.values()
    );
    drop(users);
    let after = Counters::default();
    metrics::with_local_recorder(&after, || reporter.report());
    assert_eq!(after.values(), []);
}
