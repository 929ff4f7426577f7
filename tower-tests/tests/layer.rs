//! The layer over the library's own limiters, on a clock the test moves: which requests
//! it admits, what it answers, and how it keys them. Values from docs/decision.md and
//! docs/tower.md, worked by hand.

mod common;

use common::{field, respond};
use http::{HeaderName, Request};
use librate::tower::{Decided, Key, LayerError, PeerIp, RateLimitLayer, RequestLimit};
use librate::{
    Config, Decision, Error, Instant, KeyedLimiter, KeyedPolicy, KeyedRule, Limiter, Policy,
};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const SECOND: u64 = 1_000_000_000;

/// A clock the test sets. Relaxed: the test's one thread sets and reads it, in order.
#[derive(Clone, Default)]
struct Clock(Arc<AtomicU64>);

impl Clock {
    fn set(&self, now_ns: u64) {
        self.0.store(now_ns, Ordering::Relaxed);
    }

    fn reader(&self) -> impl Fn() -> Instant + Send + Sync + 'static {
        let now = Arc::clone(&self.0);
        move || Instant::from_nanos(now.load(Ordering::Relaxed))
    }
}

/// What a response says: its status, RateLimit-Policy, RateLimit and Retry-After, and
/// whether the service served it.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    policy: Option<String>,
    ratelimit: Option<String>,
    retry_after: Option<String>,
    served: bool,
}

fn answer(status: u16, policy: &str, ratelimit: &str, retry_after: Option<&str>) -> Answer {
    Answer {
        status,
        policy: Some(policy.to_owned()),
        ratelimit: Some(ratelimit.to_owned()),
        retry_after: retry_after.map(str::to_owned),
        served: status == 200,
    }
}

/// The layer's answer to `request`.
fn ask<L: RequestLimit>(layer: &RateLimitLayer<L>, request: Request<()>) -> Answer {
    let response = respond(layer, request);
    Answer {
        status: response.status().as_u16(),
        policy: field(&response, "ratelimit-policy"),
        ratelimit: field(&response, "ratelimit"),
        retry_after: field(&response, "retry-after"),
        served: field(&response, "x-served").is_some(),
    }
}

/// A request from `peer` (none: no peer address), through these `X-Forwarded-For` lines.
fn from(peer: Option<&str>, forwarded: &[&str]) -> Request<()> {
    let mut request = Request::new(());
    if let Some(peer) = peer {
        request
            .extensions_mut()
            .insert(peer.parse::<SocketAddr>().unwrap());
    }
    for line in forwarded {
        request
            .headers_mut()
            .append("x-forwarded-for", line.parse().unwrap());
    }
    request
}

/// 2 a second per client: GCRA, one unit every 500 ms, a burst of 2.
fn two_a_second() -> KeyedLimiter {
    KeyedLimiter::new(&Config::gcra(2, Duration::from_nanos(SECOND)), 100).unwrap()
}

#[test]
fn a_keyed_limiter_per_ip() {
    let clock = Clock::default();
    let layer = RateLimitLayer::builder(two_a_second())
        .clock(clock.reader())
        .build()
        .unwrap();
    const POLICY: &str = "\"default\";q=2;w=1";
    let alice = || from(Some("192.0.2.1:1000"), &[]);
    // Each unit comes back 500 ms after the last: whole again in 0.5 s, then 1 s.
    assert_eq!(
        ask(&layer, alice()),
        answer(200, POLICY, "\"default\";r=1;t=1", None)
    );
    assert_eq!(
        ask(&layer, alice()),
        answer(200, POLICY, "\"default\";r=0;t=1", None)
    );
    // Denied for 500 ms, rounded up to 1 s; never served.
    assert_eq!(
        ask(&layer, alice()),
        answer(429, POLICY, "\"default\";r=0;t=1", Some("1"))
    );
    // Another address, another key; the same address from another port, the same.
    let bob = from(Some("198.51.100.7:1000"), &[]);
    assert_eq!(
        ask(&layer, bob),
        answer(200, POLICY, "\"default\";r=1;t=1", None)
    );
    let alice_elsewhere = from(Some("192.0.2.1:2000"), &[]);
    assert_eq!(ask(&layer, alice_elsewhere).status, 429);
    // At 500 ms one unit is back; taking it leaves the quota whole again at 1.5 s.
    clock.set(SECOND / 2);
    assert_eq!(
        ask(&layer, alice()),
        answer(200, POLICY, "\"default\";r=0;t=1", None)
    );
}

#[test]
fn a_keyed_policy_reports_the_binding_rule() {
    // 2 a second per client, and 3 a minute for everyone (a fixed window, 0 to 60 s).
    let rules = [
        KeyedRule::per_key(Config::gcra(2, Duration::from_nanos(SECOND))),
        KeyedRule::global(Config::fixed_window(3, Duration::from_nanos(60 * SECOND))),
    ];
    let clock = Clock::default();
    let layer = RateLimitLayer::builder(KeyedPolicy::new(&rules, 100).unwrap())
        .names(["second", "minute"])
        .clock(clock.reader())
        .build()
        .unwrap();
    const POLICY: &str = "\"second\";q=2;w=1, \"minute\";q=3;w=60";
    let alice = || from(Some("192.0.2.1:1000"), &[]);
    // The per-second rule has the least left (1, then 0; the minute rule 2, then 1).
    assert_eq!(
        ask(&layer, alice()),
        answer(200, POLICY, "\"second\";r=1;t=1", None)
    );
    assert_eq!(
        ask(&layer, alice()),
        answer(200, POLICY, "\"second\";r=0;t=1", None)
    );
    // Bob has his own per-second rule (1 left) but the third unit of the minute (0 left,
    // the window ends at 60 s).
    let bob = from(Some("198.51.100.7:1000"), &[]);
    assert_eq!(
        ask(&layer, bob),
        answer(200, POLICY, "\"minute\";r=0;t=60", None)
    );
    // At 1 s Alice's per-second rule admits, the minute's denies until 60 s.
    clock.set(SECOND);
    assert_eq!(
        ask(&layer, alice()),
        answer(429, POLICY, "\"minute\";r=0;t=59", Some("59"))
    );
}

#[test]
fn costs_leave_a_rule_out_of_the_report() {
    // A request costs the per-second rule nothing: only the minute's counts and reports.
    let rules = [
        Config::gcra(2, Duration::from_nanos(SECOND)),
        Config::fixed_window(3, Duration::from_nanos(60 * SECOND)),
    ];
    let layer = RateLimitLayer::builder(Policy::new(&rules).unwrap())
        .costs([0, 1])
        .clock(|| Instant::ZERO)
        .build()
        .unwrap();
    const POLICY: &str = "\"rule0\";q=2;w=1, \"rule1\";q=3;w=60";
    for remaining in [2, 1, 0] {
        let ratelimit = format!("\"rule1\";r={remaining};t=60");
        assert_eq!(
            ask(&layer, from(None, &[])),
            answer(200, POLICY, &ratelimit, None)
        );
    }
    assert_eq!(
        ask(&layer, from(None, &[])),
        answer(429, POLICY, "\"rule1\";r=0;t=60", Some("60"))
    );
}

#[test]
fn behind_trusted_proxies_the_client_they_name() {
    let layer = RateLimitLayer::builder(two_a_second())
        .key(PeerIp::new().trusting_proxies(2))
        .clock(|| Instant::ZERO)
        .build()
        .unwrap();
    // Two proxies: the client is the second entry from the right, whatever the client
    // wrote left of it, and whichever of the operator's proxies it came through.
    let via = |forged: &str, proxy: &str| {
        from(
            Some("10.0.0.2:443"),
            &[&format!("{forged}, 192.0.2.1"), proxy],
        )
    };
    assert_eq!(ask(&layer, via("203.0.113.1", "10.0.0.1")).status, 200);
    assert_eq!(ask(&layer, via("203.0.113.2", "10.0.0.3")).status, 200);
    assert_eq!(ask(&layer, via("203.0.113.3", "10.0.0.1")).status, 429);
    // Around the proxies (too few entries) or malformed: the peer's address is the key.
    assert_eq!(
        ask(&layer, from(Some("192.0.2.9:1"), &["192.0.2.1"])).status,
        200
    );
    assert_eq!(
        ask(&layer, from(Some("192.0.2.9:1"), &["x, y"])).status,
        200
    );
    assert_eq!(ask(&layer, from(Some("192.0.2.9:1"), &[])).status, 429);
}

#[test]
fn no_peer_address_shares_the_empty_key() {
    let layer = RateLimitLayer::builder(two_a_second())
        .clock(|| Instant::ZERO)
        .build()
        .unwrap();
    assert_eq!(ask(&layer, from(None, &[])).status, 200);
    assert_eq!(ask(&layer, from(None, &["192.0.2.1"])).status, 200);
    assert_eq!(ask(&layer, from(None, &[])).status, 429);
    assert_eq!(ask(&layer, from(Some("192.0.2.1:1"), &[])).status, 200);
}

#[test]
fn a_key_function_may_exempt_requests() {
    let key = Key::from_fn(|parts| (parts.uri.path() != "/health").then(|| b"all".to_vec()));
    let layer = RateLimitLayer::builder(two_a_second())
        .key(key)
        .clock(|| Instant::ZERO)
        .build()
        .unwrap();
    let get = |path| Request::get(path).body(()).unwrap();
    let untouched = Answer {
        status: 200,
        policy: None,
        ratelimit: None,
        retry_after: None,
        served: true,
    };
    for _ in 0..3 {
        assert_eq!(ask(&layer, get("/health")), untouched);
    }
    assert_eq!(ask(&layer, get("/a")).status, 200);
    assert_eq!(ask(&layer, get("/b")).status, 200);
    assert_eq!(ask(&layer, get("/a")).status, 429);
}

#[test]
fn a_header_key() {
    let key = Key::header(HeaderName::from_static("x-api-key"));
    let layer = RateLimitLayer::builder(two_a_second())
        .key(key)
        .clock(|| Instant::ZERO)
        .build()
        .unwrap();
    let with = |key: &[u8]| {
        let mut request = from(None, &[]);
        request
            .headers_mut()
            .insert("x-api-key", http::HeaderValue::from_bytes(key).unwrap());
        request
    };
    for status in [200, 200, 429] {
        assert_eq!(ask(&layer, with(b"k\xff1")).status, status);
    }
    assert_eq!(ask(&layer, with(b"k\xff2")).status, 200);
}

#[test]
fn a_limit_for_everyone_reads_no_key() {
    // A Limiter is one limit for every request: even a key that exempts all is not read.
    let limiter = Limiter::new(&Config::gcra(1, Duration::from_nanos(SECOND))).unwrap();
    let layer = RateLimitLayer::builder(limiter)
        .key(Key::from_fn(|_| None))
        .clock(|| Instant::ZERO)
        .build()
        .unwrap();
    assert_eq!(ask(&layer, from(Some("192.0.2.1:1"), &[])).status, 200);
    assert_eq!(ask(&layer, from(Some("198.51.100.7:1"), &[])).status, 429);
}

/// A limit that cannot decide: its table is full of live keys, or it answers as many
/// rules as `rules` for a limit of one.
struct Failing {
    table_full: bool,
    rules: usize,
}

/// Decisions of several rules, for a limit that advertised one.
struct Several(Vec<Decision>);

impl Decided for Several {
    fn decision(&self) -> &Decision {
        &self.0[0]
    }

    fn rules(&self) -> &[Decision] {
        &self.0
    }
}

impl RequestLimit for Failing {
    type Decided = Several;
    const KEYED: bool = true;
    const POLICY: bool = false;

    fn rules(&self) -> Vec<Config> {
        vec![Config::gcra(10, Duration::from_nanos(90 * SECOND))]
    }

    fn acquire_at(&self, _: &[u8], _: Option<&[u64]>, _: Instant) -> Result<Several, Error> {
        let admitted = Decision {
            allowed: true,
            ..Decision::default()
        };
        match self.table_full {
            true => Err(Error::TableFull),
            false => Ok(Several(vec![admitted; self.rules])),
        }
    }
}

#[test]
fn a_full_table_fails_closed_or_open() {
    let full = || Failing {
        table_full: true,
        rules: 1,
    };
    let closed = ask(&RateLimitLayer::new(full()), from(None, &[]));
    // Closed: 503 with one period of the rule, 90 s; no RateLimit fields, not served.
    let unavailable = Answer {
        status: 503,
        policy: None,
        ratelimit: None,
        retry_after: Some("90".to_owned()),
        served: false,
    };
    assert_eq!(closed, unavailable);
    let open = RateLimitLayer::builder(full())
        .fail_open(true)
        .build()
        .unwrap();
    let untouched = Answer {
        status: 200,
        policy: None,
        ratelimit: None,
        retry_after: None,
        served: true,
    };
    assert_eq!(ask(&open, from(None, &[])), untouched);
    // A limit that decides 2 rules where it advertised 1 has failed: 503, no Retry-After.
    let confused = RateLimitLayer::new(Failing {
        table_full: false,
        rules: 2,
    });
    let failed = Answer {
        retry_after: None,
        ..unavailable
    };
    assert_eq!(ask(&confused, from(None, &[])), failed);
}

#[test]
fn names_and_costs_must_fit_the_rules() {
    let policy = || {
        Policy::new(&[
            Config::gcra(2, Duration::from_nanos(SECOND)).with_burst(3),
            Config::fixed_window(5, Duration::from_nanos(SECOND)),
        ])
        .unwrap()
    };
    let refused = |builder: librate::tower::Builder<Policy>| builder.build().unwrap_err();
    assert_eq!(
        refused(RateLimitLayer::builder(policy()).names(["one"])),
        LayerError::Names { names: 1, rules: 2 }
    );
    assert_eq!(
        refused(RateLimitLayer::builder(policy()).names(["fine", "caf\u{e9}"])),
        LayerError::Name("caf\u{e9}".to_owned())
    );
    assert_eq!(
        refused(RateLimitLayer::builder(policy()).costs([1])),
        LayerError::Costs { costs: 1, rules: 2 }
    );
    // GCRA's capacity is its burst, 3; the window's its limit, 5.
    assert_eq!(
        refused(RateLimitLayer::builder(policy()).costs([4, 0])),
        LayerError::Cost {
            rule: 0,
            cost: 4,
            capacity: 3
        }
    );
    assert_eq!(
        refused(RateLimitLayer::builder(policy()).costs([0, 6])),
        LayerError::Cost {
            rule: 1,
            cost: 6,
            capacity: 5
        }
    );
    assert_eq!(
        refused(RateLimitLayer::builder(policy()).costs([0, 0])),
        LayerError::NoCost
    );
    assert!(RateLimitLayer::builder(policy())
        .costs([3, 5])
        .build()
        .is_ok());
    let one = RateLimitLayer::builder(two_a_second()).costs([1]).build();
    assert_eq!(one.unwrap_err(), LayerError::CostsOfOneRule);
}
