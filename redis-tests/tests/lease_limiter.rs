//! `LeasedLimiter` on real time against a real `redis-server` (docs/leases.md, Failures):
//! a new rule is quiet for a lease, a lone holder then holds the whole rule, a holder that
//! closes hands its share back, a stopped Redis leaves a holder on its lease until the
//! lease ends and then on its fallback (saying so), and a Redis that lost the rule is
//! quiet again before it grants; behind the tower layer, it is one limit for every
//! request.

mod common;

use common::redis_server::RedisServer;
use librate::lease::{Fallback, HolderState, LeasedLimiter, Share};
use librate::{Config, LeaseRule};
use std::time::{Duration, Instant};

/// Waits up to 10 s for `done`; fails saying `what` otherwise.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "waited 10 s for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn holders_hand_over_fall_back_and_come_back() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let url = server.url();
    let client = || redis::Client::open(url.as_str()).unwrap();
    // 1,000 a second, leased 2 s at a time, renewed every 100 ms.
    let rule = LeaseRule::new(&Config::per_second(1000), Duration::from_secs(2))
        .and_then(|rule| rule.renewing_every(Duration::from_millis(100)))
        .unwrap();
    let whole = Share {
        rate: 1_000_000,
        burst: 1000,
    };

    let first = LeasedLimiter::open(client(), "lease:{api}", &rule, Fallback::Deny).unwrap();
    // Redis has not seen the rule: quiet, so no share, for a lease.
    wait_until("the quiet answer", || {
        first.holder().state() == HolderState::Unshared
    });
    assert!(!first.try_acquire(1).unwrap());
    wait_until("a lease", || first.holder().state() == HolderState::Leased);
    assert_eq!(first.holder().granted(), whole);

    // A second holder finds the whole rule held: nothing, denied (not in fallback).
    let second = LeasedLimiter::open(client(), "lease:{api}", &rule, Fallback::Deny).unwrap();
    wait_until("the second's answer", || {
        second.holder().last_grant().is_some()
    });
    assert_eq!(second.holder().granted(), Share::default());
    assert_eq!(second.holder().state(), HolderState::Unshared);
    assert!(!second.try_acquire(1).unwrap());
    assert!(!second.in_fallback());

    // The first hands its share back: the second, alone, gets the whole rule.
    first.close().unwrap();
    wait_until("the whole rule", || second.holder().granted() == whole);
    assert_eq!(second.holder().state(), HolderState::Leased);

    // Redis stops: the lease, renewed within the last 100 ms, holds for about 2 s more;
    // then the fallback, which says so.
    server.stop();
    assert_eq!(second.holder().state(), HolderState::Leased);
    wait_until("the fallback", || second.in_fallback());
    assert!(!second.try_acquire(1).unwrap());

    // A holder opened while Redis is down decides by its local rule: 1 an hour, bursts
    // of 3.
    let local = Config::per_hour(1).with_burst(3);
    let alone =
        LeasedLimiter::open(client(), "lease:{api}", &rule, Fallback::Local(local)).unwrap();
    assert!(alone.in_fallback());
    let admitted: Vec<bool> = (0..4).map(|_| alone.try_acquire(1).unwrap()).collect();
    assert_eq!(admitted, [true, true, true, false]);

    // Redis comes back empty: the rule is new to it, so quiet for a lease, then granted.
    server.restart();
    wait_until("the quiet answer again", || {
        second.holder().state() == HolderState::Unshared
    });
    wait_until("a lease again", || {
        second.holder().state() == HolderState::Leased
    });
}

#[test]
fn a_leased_limiter_is_one_limit_for_the_tower_layer() {
    use librate::tower::RequestLimit;
    let Some(server) = RedisServer::start() else {
        return;
    };
    let client = redis::Client::open(server.url().as_str()).unwrap();
    let config = Config::per_second(1000);
    let rule = LeaseRule::new(&config, Duration::from_secs(2)).unwrap();
    let leased = LeasedLimiter::open(client, "lease:{layer}", &rule, Fallback::Deny).unwrap();
    // The global rule, for every request, by no key.
    assert_eq!(RequestLimit::rules(&leased), [config]);
    // A rule new to Redis is quiet for a lease: no share, so the request is denied, by
    // whatever key, as the holder denies it.
    wait_until("the quiet answer", || {
        leased.holder().state() == HolderState::Unshared
    });
    let now = librate::Instant::now();
    for key in [&b""[..], b"192.0.2.1"] {
        let decision = RequestLimit::acquire_at(&leased, key, None, now).unwrap();
        assert!(!decision.allowed);
    }
    assert!(!leased.try_acquire(1).unwrap());
}
