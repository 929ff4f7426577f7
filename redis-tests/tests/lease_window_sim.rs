//! Fixed-window leases on virtual time against a real `redis-server` (docs/leases.md):
//! holders with skewed and shifting demand renew through the script, Redis stops answering
//! for longer than a lease, a holder is killed and another joins, and Redis loses every
//! key mid-run; from the log of every admission, no window ever admitted more than L.

mod common;

use common::redis_server::server;
use librate::lease::{renew, Fallback, LeaseHolder};
use librate::{Config, Instant, LeaseRule};
use std::time::Duration;

const L: u64 = 1000;
const MS: u64 = 1_000_000;
const SECOND: u64 = 1000 * MS;

/// The windows (of 1 s) in which `log`, (time, units) admissions, admitted more than L.
fn windows_over(log: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut per_window = std::collections::BTreeMap::new();
    for &(at, units) in log {
        *per_window.entry(at / SECOND).or_insert(0) += units;
    }
    per_window
        .into_iter()
        .filter(|&(_, units)| units > L)
        .collect()
}

#[test]
fn the_check_finds_one_unit_too_many() {
    let mut log: Vec<(u64, u64)> = (0..L).map(|i| (3 * SECOND + i * MS / 2, 1)).collect();
    assert!(windows_over(&log).is_empty());
    log.push((4 * SECOND - 1, 1));
    assert_eq!(windows_over(&log), [(3, L + 1)]);
    log.push((4 * SECOND, 1));
    assert_eq!(windows_over(&log), [(3, L + 1)]);
}

#[test]
fn no_window_admits_more_than_its_limit() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let rule = LeaseRule::new(
        &Config::fixed_window(L, Duration::from_secs(1)),
        Duration::from_millis(400),
    )
    .and_then(|rule| rule.renewing_every(Duration::from_millis(100)))
    .unwrap();
    let key = b"lease:{window-sim}";
    let holders: Vec<LeaseHolder> = (0..6)
        .map(|i| LeaseHolder::named(&rule, Fallback::Deny, &format!("w{i}")).unwrap())
        .collect();
    // Units a millisecond each holder is asked for, in thousandths: about twice the limit
    // in all, skewed 8:4:1:1 besides holder 2, which is bursty; from 10 s the hot holder
    // is the last one.
    let skewed = [1000, 500, 250, 125, 125, 0];
    let shifted = [125, 125, 250, 500, 0, 1000];
    let mut owed = [0u64; 6];
    let mut log = Vec::new();
    let mut asked = 0;
    let end = 20 * SECOND;
    let mut at = 0;
    while at < end {
        let down = (8 * SECOND..9 * SECOND).contains(&at);
        if at == 15 * SECOND + 500 * MS {
            let _: () = redis::cmd("FLUSHALL").query(&mut redis).unwrap();
        }
        for (i, holder) in holders.iter().enumerate() {
            // Holder 4 is killed at 12 s (no renewal, no decision); holder 5 joins at 10 s.
            let dead = (i == 4 && at >= 12 * SECOND) || (i == 5 && at < 10 * SECOND);
            if dead {
                continue;
            }
            let phase = i as u64 * 17 * MS;
            if at >= phase && (at - phase) % (100 * MS) == 0 {
                if down {
                    // Asked, never answered.
                    holder.renewal_at(Instant::from_nanos(at));
                } else {
                    renew(&mut redis, key, holder, Some(Instant::from_nanos(at))).unwrap();
                }
            }
            let rate = match i {
                // Bursty: three units a millisecond for 350 ms of every 700, so that its
                // count of a window is often left part unused at the window's end.
                2 if at % (700 * MS) < 350 * MS => 3000,
                2 => 0,
                _ if at < 10 * SECOND => skewed[i],
                _ => shifted[i],
            };
            owed[i] += rate;
            while owed[i] >= 1000 {
                owed[i] -= 1000;
                asked += 1;
                if holder.try_acquire_at(1, Instant::from_nanos(at)).unwrap() {
                    log.push((at, 1));
                }
            }
        }
        at += MS;
    }
    assert!(asked > 35 * L, "{asked}");
    assert_eq!(windows_over(&log), []);
    // Utilization: with twice the limit asked for, every steady window (after the first,
    // quiet one; before the outage and the shift; after the shift until the loss) admits
    // at least 90% of L. The renewals see the same virtual times every run, so these
    // counts are the same every run.
    let mut per_window = [0u64; 20];
    for &(at, units) in &log {
        per_window[(at / SECOND) as usize] += units;
    }
    for window in (2..8).chain(11..16) {
        assert!(
            per_window[window] >= 9 * L / 10,
            "window {window}: {per_window:?}"
        );
    }
    // The outage outlived window 8's leases: nothing then, the fallback denying.
    assert_eq!(per_window[8], 0, "{per_window:?}");
}
