//! The layer names the rule that denied (the `on_denied` callback, an optional field) and
//! runs a limit, a leased one too, in shadow. Values from docs/decision.md, docs/tower.md
//! and docs/leases.md, by hand.

mod common;

use common::{field, respond};
use http::request::Parts;
use http::{HeaderName, Request};
use librate::lease::{Fallback, Grant, LeaseHolder};
use librate::tower::{Builder, Denied, RateLimitLayer, RequestLimit};
use librate::{Config, Instant, KeyedLimiter, LeaseRule, Limiter, Policy};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MINUTE: Duration = Duration::from_secs(60);

/// What a response says: status, the rule field, RateLimit, Retry-After, and whether the
/// service served it.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    rule: Option<String>,
    ratelimit: Option<String>,
    retry_after: Option<String>,
    served: bool,
}

fn ask<L: RequestLimit>(layer: &RateLimitLayer<L>, path: &str) -> Answer {
    let request = Request::get(path).body(()).unwrap();
    let response = respond(layer, request);
    Answer {
        status: response.status().as_u16(),
        rule: field(&response, "ratelimit-rule"),
        ratelimit: field(&response, "ratelimit"),
        retry_after: field(&response, "retry-after"),
        served: field(&response, "x-served").is_some(),
    }
}

fn some(text: &str) -> Option<String> {
    Some(text.to_owned())
}

/// What `on_denied` was told: the rule, its name, shadow, and the request's path.
type Reports = Arc<Mutex<Vec<(usize, String, bool, String)>>>;

fn recorder() -> (
    Reports,
    impl Fn(&Denied<'_>, &Parts) + Send + Sync + 'static,
) {
    let reports = Reports::default();
    let sink = Arc::clone(&reports);
    let record = move |denied: &Denied<'_>, parts: &Parts| {
        let report = (
            denied.rule,
            denied.name.to_owned(),
            denied.shadow,
            parts.uri.path().to_owned(),
        );
        sink.lock().unwrap().push(report);
    };
    (reports, record)
}

/// The layer `builder` makes at time 0, with the `ratelimit-rule` field and a recorder of
/// its reports.
fn reporting<L: RequestLimit>(builder: Builder<L>) -> (RateLimitLayer<L>, Reports) {
    let (reports, record) = recorder();
    let layer = builder
        .rule_header(HeaderName::from_static("ratelimit-rule"))
        .on_denied(record)
        .clock(|| Instant::ZERO)
        .build()
        .unwrap();
    (layer, reports)
}

/// 2 a minute, in a fixed window, for every request.
fn two_a_minute() -> Limiter {
    Limiter::new(&Config::fixed_window(2, MINUTE)).unwrap()
}

#[test]
fn the_third_request_names_its_rule() {
    let (layer, reports) = reporting(RateLimitLayer::builder(two_a_minute()).names(["api"]));
    let first = ask(&layer, "/0");
    assert_eq!((first.status, first.rule), (200, None));
    assert_eq!(first.ratelimit, some("\"api\";r=1;t=60"));
    ask(&layer, "/1");
    let third = Answer {
        status: 429,
        rule: some("\"api\""),
        ratelimit: some("\"api\";r=0;t=60"),
        retry_after: some("60"),
        served: false,
    };
    assert_eq!(ask(&layer, "/2"), third);
    let reports = reports.lock().unwrap();
    assert_eq!(*reports, [(0, "api".to_owned(), false, "/2".to_owned())]);
}

#[test]
fn no_rule_field_unless_asked() {
    let layer = RateLimitLayer::builder(two_a_minute())
        .clock(|| Instant::ZERO)
        .build()
        .unwrap();
    ask(&layer, "/");
    ask(&layer, "/");
    let third = ask(&layer, "/");
    assert_eq!((third.status, third.rule), (429, None));
}

#[test]
fn shadow_serves_reports_and_names() {
    let limiter = Arc::new(two_a_minute());
    let (layer, reports) = reporting(RateLimitLayer::builder(Arc::clone(&limiter)).shadow(true));
    // A limit in shadow is not in force: no field tells the client of it.
    let served = Answer {
        status: 200,
        rule: None,
        ratelimit: None,
        retry_after: None,
        served: true,
    };
    assert_eq!(ask(&layer, "/0"), served);
    ask(&layer, "/1");
    let third = Answer {
        rule: some("\"default\""),
        ..served
    };
    assert_eq!(ask(&layer, "/2"), third);
    let reports = reports.lock().unwrap();
    assert_eq!(*reports, [(0, "default".to_owned(), true, "/2".to_owned())]);
    // It decided each request: two taken in the window, none left at 0, two at 60 s.
    assert!(
        !Limiter::acquire_at(&limiter, 1, Instant::ZERO)
            .unwrap()
            .allowed
    );
    let next_window = Instant::from_nanos(60_000_000_000);
    assert!(
        Limiter::acquire_at(&limiter, 2, next_window)
            .unwrap()
            .allowed
    );
}

#[test]
fn shadow_serves_what_the_limit_cannot_decide() {
    let table = Arc::new(KeyedLimiter::new(&Config::fixed_window(2, MINUTE), 1).unwrap());
    let other = KeyedLimiter::acquire_at(&table, b"other", 1, Instant::ZERO).unwrap();
    assert!(other.allowed);
    let layer = RateLimitLayer::builder(Arc::clone(&table))
        .key(librate::tower::Key::from_fn(|_| Some(b"x".to_vec())))
        .shadow(true)
        .clock(|| Instant::ZERO)
        .build()
        .unwrap();
    // A full table: 503 when enforced, served in shadow.
    let answer = ask(&layer, "/");
    assert_eq!((answer.status, answer.served), (200, true));
}

/// Holders of 1,000 a second leased 2 s at a time: one with no answer yet, deciding by
/// `Fallback::Deny`; one leased half the rate at 0, its share empty at 0 (docs/leases.md).
fn denying_holders() -> [LeaseHolder; 2] {
    let rule = LeaseRule::new(&Config::per_second(1000), Duration::from_secs(2)).unwrap();
    let unanswered = LeaseHolder::new(&rule, Fallback::Deny).unwrap();
    let leased = LeaseHolder::new(&rule, Fallback::Deny).unwrap();
    let renewal = leased.renewal_at(Instant::ZERO);
    let fields = [500_000, 500, 2_000_000, 1, 500_000, 500, 2, 0];
    let grant = Grant::from_fields(b"granted", fields).unwrap();
    leased.apply_at(&renewal, &grant, Instant::ZERO).unwrap();
    [unanswered, leased]
}

#[test]
fn a_leased_limit_in_shadow_serves_what_it_would_deny() {
    for holder in denying_holders() {
        let (layer, reports) = reporting(RateLimitLayer::builder(holder).shadow(true));
        let answer = ask(&layer, "/");
        assert_eq!((answer.status, answer.served), (200, true));
        assert_eq!(answer.rule, some("\"default\""));
        let reports = reports.lock().unwrap();
        assert_eq!(*reports, [(0, "default".to_owned(), true, "/".to_owned())]);
    }
    for holder in denying_holders() {
        let (layer, reports) = reporting(RateLimitLayer::builder(holder));
        let answer = ask(&layer, "/");
        assert_eq!((answer.status, answer.served), (429, false));
        assert_eq!(answer.rule, some("\"default\""));
        // The global rule, 1,000 a second, is the one advertised.
        assert!(answer.ratelimit.unwrap().starts_with("\"default\";r=0;t="));
        let reports = reports.lock().unwrap();
        assert_eq!(*reports, [(0, "default".to_owned(), false, "/".to_owned())]);
    }
}

#[test]
fn a_policy_names_the_first_rule_that_denied() {
    // 2 a second and 2 a minute: the third request at 0 is denied by both. The field and
    // the report name the first; RateLimit reports the longest wait, the minute's.
    let rules = [
        Config::gcra(2, Duration::from_secs(1)),
        Config::fixed_window(2, MINUTE),
    ];
    let policy = Policy::new(&rules).unwrap();
    let (layer, reports) = reporting(RateLimitLayer::builder(policy).names(["second", "minute"]));
    ask(&layer, "/");
    ask(&layer, "/");
    let third = ask(&layer, "/");
    assert_eq!(third.status, 429);
    assert_eq!(third.rule, some("\"second\""));
    assert_eq!(third.ratelimit, some("\"minute\";r=0;t=60"));
    let reports = reports.lock().unwrap();
    assert_eq!(*reports, [(0, "second".to_owned(), false, "/".to_owned())]);
}

#[test]
fn a_policy_s_shadow_rule_is_reported_named_and_never_binds() {
    // 10 a second in force, 2 a minute in shadow (docs/policies.md, shadow rules): every
    // request passes; RateLimit reports the enforced rule alone (T = 100 ms: k requests
    // at 0 leave 10 - k, full again in k × 100 ms, 1 s rounded up), though the shadow
    // rule has less left; the third, which the shadow rule would deny, is reported and
    // named.
    let rules = [
        Config::gcra(10, Duration::from_secs(1)),
        Config::fixed_window(2, MINUTE),
    ];
    let policy = Policy::new(&rules).unwrap();
    policy.set_shadow(0b10).unwrap();
    let (layer, reports) = reporting(RateLimitLayer::builder(policy).names(["second", "minute"]));
    let served = |rule: Option<&str>, ratelimit: &str| Answer {
        status: 200,
        rule: rule.map(str::to_owned),
        ratelimit: some(ratelimit),
        retry_after: None,
        served: true,
    };
    assert_eq!(ask(&layer, "/0"), served(None, "\"second\";r=9;t=1"));
    assert_eq!(ask(&layer, "/1"), served(None, "\"second\";r=8;t=1"));
    assert_eq!(
        ask(&layer, "/2"),
        served(Some("\"minute\""), "\"second\";r=7;t=1")
    );
    let reports = reports.lock().unwrap();
    assert_eq!(*reports, [(1, "minute".to_owned(), true, "/2".to_owned())]);
}

#[test]
fn a_policy_of_shadow_rules_alone_reports_no_fields() {
    // Nothing is enforced: every request passes, without RateLimit (no rule binds); the
    // second, which the shadow rule would deny, is named.
    let policy = Policy::new(&[Config::fixed_window(1, MINUTE)]).unwrap();
    policy.set_shadow(0b1).unwrap();
    let (layer, _) = reporting(RateLimitLayer::builder(policy));
    let first = ask(&layer, "/");
    assert_eq!(
        (first.status, first.ratelimit, first.rule),
        (200, None, None)
    );
    let second = ask(&layer, "/");
    let rule = some("\"rule0\"");
    assert_eq!(
        (second.status, second.ratelimit, second.rule),
        (200, None, rule)
    );
}
