//! The lease scripts (src/redis/lua/lease_gcra.lua and lease_fixed_window.lua,
//! docs/leases.md) on a real `redis-server`, each loaded alone: every reply of a run of
//! grants, renewals, hand-backs and ends worked out by hand from the rule (GCRA: 1,000 a
//! second, T = 1 ms, B = 1,000; the window: 100 a second; leases of 2 s) and the demands
//! given; and the errors for another rule, another type and garbage.

mod common;

use common::redis_server::server;
use librate::lease::{FIXED_WINDOW_SCRIPT, GCRA_SCRIPT};
use redis::Value;

const KEY: &str = "lease:{global}";
const S: i64 = 1_000_000;

/// One call: `op` at `now_us` for `holder` with `demand`, under T = 1 ms, B = `burst`,
/// leases of 2 s.
fn call(
    redis: &mut redis::Connection,
    op: &str,
    now_us: u64,
    holder: &str,
    demand: u64,
    burst: u64,
) -> redis::RedisResult<Value> {
    redis::Script::new(GCRA_SCRIPT)
        .key(KEY)
        .arg(op)
        .arg(now_us)
        .arg(1_000_000)
        .arg(burst)
        .arg(2_000_000)
        .arg(holder)
        .arg(demand)
        .invoke(redis)
}

/// A renewal's reply as (status, [rate, burst, lease_us, epoch, held_rate, held_burst,
/// holders, window]).
fn renew(
    redis: &mut redis::Connection,
    now_us: u64,
    holder: &str,
    demand: u64,
) -> (String, [i64; 8]) {
    fields_of(call(redis, "renew", now_us, holder, demand, 1000).unwrap())
}

fn fields_of(reply: Value) -> (String, [i64; 8]) {
    let Value::Array(fields) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(fields.len(), 9, "{fields:?}");
    let status: String = redis::from_redis_value(&fields[0]).unwrap();
    let mut numbers = [0; 8];
    for (number, field) in numbers.iter_mut().zip(&fields[1..]) {
        *number = redis::from_redis_value(field).unwrap();
    }
    (status, numbers)
}

fn granted(numbers: [i64; 8]) -> (String, [i64; 8]) {
    ("granted".to_owned(), numbers)
}

/// One call of the window script: `op` at `now_us` for `holder` with `demand` (or the
/// units left unused, for a release), under L = 100 a period of 1 s, leases of 2 s.
fn window_call(
    redis: &mut redis::Connection,
    op: &str,
    now_us: u64,
    holder: &str,
    demand: u64,
) -> Value {
    redis::Script::new(FIXED_WINDOW_SCRIPT)
        .key("lease:{window}")
        .arg(op)
        .arg(now_us)
        .arg(100)
        .arg(1_000_000)
        .arg(2_000_000)
        .arg(holder)
        .arg(demand)
        .invoke(redis)
        .unwrap()
}

#[test]
fn grants_follow_demand_and_never_hand_out_what_a_lease_may_hold() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    // A rule Redis has not seen: quiet for one lease, from its epoch, 0.
    assert_eq!(
        renew(&mut redis, 0, "h1", S as u64),
        ("quiet".to_owned(), [0, 0, 2_000_000, 0, 0, 0, 1, 0])
    );
    // Alone, a demand of 60% meets it and takes the rest too: the whole rule.
    assert_eq!(
        renew(&mut redis, 2_000_000, "h1", 600_000),
        granted([S, 1000, 2_000_000, 0, S, 1000, 1, 0])
    );
    // h2 asks for 60% too: its fair share is half, but h1 holds everything: none.
    assert_eq!(
        renew(&mut redis, 2_500_000, "h2", 600_000),
        granted([0, 0, 2_000_000, 0, S, 1000, 2, 0])
    );
    // h1 renews to half (a burst of 500), but may still decide from its whole-rule
    // lease until 4 s: that stays held.
    assert_eq!(
        renew(&mut redis, 3_000_000, "h1", 600_000),
        granted([S / 2, 500, 2_000_000, 0, S, 1000, 2, 0])
    );
    assert_eq!(
        renew(&mut redis, 3_500_000, "h2", 600_000),
        granted([0, 0, 2_000_000, 0, S, 1000, 2, 0])
    );
    // At 4 s h1's first lease has ended: h2 gets the other half.
    assert_eq!(
        renew(&mut redis, 4_000_000, "h2", 600_000),
        granted([S / 2, 500, 2_000_000, 0, S, 1000, 2, 0])
    );
    // h1 hands its share back: h2, alone, gets the whole rule at its next renewal.
    assert_eq!(
        call(&mut redis, "release", 4_100_000, "h1", 0, 1000).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        renew(&mut redis, 4_500_000, "h2", 600_000),
        granted([S, 1000, 2_000_000, 0, S, 1000, 1, 0])
    );
    // h3 arrives, h2 stops renewing: h3 gets nothing until h2's lease ends at 6.5 s.
    assert_eq!(
        renew(&mut redis, 6_499_999, "h3", S as u64),
        granted([0, 0, 2_000_000, 0, S, 1000, 2, 0])
    );
    assert_eq!(
        renew(&mut redis, 6_500_000, "h3", S as u64),
        granted([S, 1000, 2_000_000, 0, S, 1000, 1, 0])
    );
}

#[test]
fn a_share_that_shrank_frees_the_rest_when_its_larger_lease_ends() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    renew(&mut redis, 0, "h1", S as u64);
    // h1 takes the whole rule at 2 s (its lease to 4 s); h2 gets nothing while it runs,
    // however often h1 renews with half.
    assert_eq!(
        renew(&mut redis, 2_000_000, "h1", 500_000).1[..2],
        [S, 1000]
    );
    for now in [2_000_000, 2_500_000, 3_000_000, 3_500_000] {
        assert_eq!(
            renew(&mut redis, now, "h2", 500_000).1[..2],
            [0, 0],
            "at {now}"
        );
        assert_eq!(
            renew(&mut redis, now + 1, "h1", 500_000).1[..2],
            [S / 2, 500],
            "at {now}"
        );
    }
    // From 4 s h1 may decide from half alone: h2 gets the other half, and keeps it.
    for now in [4_000_000, 4_500_000, 5_000_000] {
        assert_eq!(
            renew(&mut redis, now, "h2", 500_000),
            granted([S / 2, 500, 2_000_000, 0, S, 1000, 2, 0]),
            "at {now}"
        );
        assert_eq!(
            renew(&mut redis, now + 1, "h1", 500_000).1[..2],
            [S / 2, 500],
            "at {now}"
        );
    }
}

#[test]
fn demands_asked_during_quiet_are_divided_at_its_end() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    // Two holders ask through the quiet lease, the second answer counting both.
    assert_eq!(renew(&mut redis, 0, "h1", S as u64).1[6], 1);
    assert_eq!(renew(&mut redis, 0, "h2", S as u64).1[6], 2);
    renew(&mut redis, 1_500_000, "h1", S as u64);
    renew(&mut redis, 1_500_000, "h2", S as u64);
    // At its end the first to ask gets its half, not the whole rule, and so does the other.
    assert_eq!(
        renew(&mut redis, 2_000_000, "h1", S as u64),
        granted([S / 2, 500, 2_000_000, 0, S / 2, 500, 2, 0])
    );
    assert_eq!(
        renew(&mut redis, 2_000_000, "h2", S as u64),
        granted([S / 2, 500, 2_000_000, 0, S, 1000, 2, 0])
    );
}

#[test]
fn demands_below_the_rule_are_met_and_the_rest_split_evenly() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    renew(&mut redis, 0, "a", 0);
    // a alone takes everything; b and c, asking while it holds it, get nothing.
    assert_eq!(renew(&mut redis, 2_000_000, "a", 100_000).1[..2], [S, 1000]);
    assert_eq!(renew(&mut redis, 2_500_000, "b", 200_000).1[..2], [0, 0]);
    assert_eq!(renew(&mut redis, 2_500_000, "c", 300_000).1[..2], [0, 0]);
    // a renews with 10%: 10% + (100% − 60%) / 3 = 23.33…%, floored, and a burst of 233;
    // its lease of the whole rule still runs to 4 s.
    assert_eq!(
        renew(&mut redis, 3_000_000, "a", 100_000).1[..2],
        [233_333, 233]
    );
    // From 4 s: b gets 20% + 13.33…%, c 30% + 13.33…% (its burst 433 of the 434 left).
    assert_eq!(
        renew(&mut redis, 4_000_000, "b", 200_000).1[..2],
        [333_333, 333]
    );
    assert_eq!(
        renew(&mut redis, 4_000_000, "c", 300_000).1[..2],
        [433_333, 433]
    );
    // b asks for 50%: its target is 50% + 3.33…%, but a and c hold all but 333,334
    // millionths and 334 units.
    assert_eq!(
        renew(&mut redis, 4_500_000, "b", 500_000).1[..2],
        [333_334, 334]
    );
    // c asks for 90%: demands of 10%, 50% and 90% are past the rule; max-min meets a's
    // 10% and levels b and c at 45%, but a and b hold all but 433,333 millionths, and
    // all but 433 units.
    assert_eq!(
        renew(&mut redis, 4_500_000, "c", 900_000).1[..2],
        [433_333, 433]
    );
}

#[test]
fn many_holders_are_divided_from_the_sums_the_script_keeps() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    renew(&mut redis, 0, "h0", S as u64);
    // From 2 s, twenty holders ask for the whole rule: the first takes all of it, the
    // others nothing, and the reply counts every holder that asked within a lease (past
    // sixteen, the script keeps their sums instead of reading every record).
    assert_eq!(
        renew(&mut redis, 2_000_000, "h1", S as u64).1[..2],
        [S, 1000]
    );
    for i in 2..=20 {
        let (status, fields) = renew(&mut redis, 2_000_000, &format!("h{i}"), S as u64);
        assert_eq!(status, "granted");
        assert_eq!(fields[..2], [0, 0]);
        assert_eq!(fields[4..7], [S, 1000, i]);
    }
    // h1 hands its share back; the next call divides the rule among the 19 left, each
    // demand past the level 1e6 / 19 = 52,631.57…: 52,631 millionths and a burst of 52.
    assert_eq!(
        call(&mut redis, "release", 2_100_000, "h1", 0, 1000).unwrap(),
        Value::Int(1)
    );
    let (_, fields) = renew(&mut redis, 2_200_000, "h2", S as u64);
    assert_eq!(fields[..2], [52_631, 52]);
    assert_eq!(fields[4..7], [52_631, 52, 19]);
    // The next holder, from the kept sums and level: the same share, and the sums grow
    // by it.
    let (_, fields) = renew(&mut redis, 2_200_000, "h3", S as u64);
    assert_eq!(fields[..2], [52_631, 52]);
    assert_eq!(fields[4..7], [105_262, 104, 19]);
}

#[test]
fn another_rule_another_type_and_garbage_are_errors() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    renew(&mut redis, 0, "a", 0);
    let other = call(&mut redis, "renew", 1, "a", 0, 999)
        .unwrap_err()
        .to_string();
    assert!(
        other.contains("holds the lease rule 1000000:1000:2000000 (interval_ns:burst:lease_us), not 1000000:999:2000000"),
        "{other}"
    );
    let _: () = redis::cmd("HSET")
        .arg(KEY)
        .arg("h:x")
        .arg("short")
        .query(&mut redis)
        .unwrap();
    let garbage = call(&mut redis, "renew", 2_000_000, "a", 0, 1000)
        .unwrap_err()
        .to_string();
    assert!(garbage.contains("holds no lease state at h:x"), "{garbage}");
    let _: () = redis::cmd("SET")
        .arg(KEY)
        .arg("a string")
        .query(&mut redis)
        .unwrap();
    let wrong = call(&mut redis, "renew", 2_000_000, "a", 0, 1000)
        .unwrap_err()
        .to_string();
    assert!(wrong.contains("WRONGTYPE"), "{wrong}");
    let arguments = call(&mut redis, "renew", 2_000_000, "a", 2_000_000, 1000)
        .unwrap_err()
        .to_string();
    assert!(
        arguments.contains("lease script called with renew"),
        "{arguments}"
    );
}

#[test]
fn a_rule_redis_lost_is_quiet_for_a_lease_again() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    renew(&mut redis, 0, "a", 0);
    assert_eq!(
        renew(&mut redis, 2_000_000, "a", S as u64).1[..2],
        [S, 1000]
    );
    let _: () = redis::cmd("FLUSHALL").query(&mut redis).unwrap();
    // a's lease may run to 4 s: nothing is granted until 5 s, a lease after the loss was
    // seen, under a new epoch.
    assert_eq!(
        renew(&mut redis, 3_000_000, "b", S as u64),
        ("quiet".to_owned(), [0, 0, 2_000_000, 3_000_000, 0, 0, 1, 0])
    );
    assert_eq!(renew(&mut redis, 4_999_999, "a", S as u64).0, "quiet");
    assert_eq!(
        renew(&mut redis, 5_000_000, "a", S as u64),
        granted([S, 1000, 2_000_000, 3_000_000, S, 1000, 1, 0])
    );
}

#[test]
fn window_counts_only_grow_and_never_sum_past_the_limit() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let mut renew = |now_us, holder, demand| {
        fields_of(window_call(&mut redis, "renew", now_us, holder, demand))
    };
    // New to Redis in window 0 (epoch 0.5 s): quiet to the window's end, whose counts
    // it cannot know.
    assert_eq!(
        renew(500_000, "a", S as u64),
        ("quiet".to_owned(), [0, 0, 500_000, 500_000, 0, 0, 1, 0])
    );
    // Window 1: a, alone, asks for 60%: 60 units, to 2 s. What no demand asks for stays.
    assert_eq!(
        renew(1_000_000, "a", 600_000),
        granted([0, 60, 1_000_000, 500_000, 0, 60, 1, 1])
    );
    // b asks for 60% too: past the limit, both level at 50%, but only 40 are left.
    assert_eq!(
        renew(1_200_000, "b", 600_000),
        granted([0, 40, 800_000, 500_000, 0, 100, 2, 1])
    );
    // Window 2 starts empty: b gets its 50.
    assert_eq!(
        renew(2_000_000, "b", 600_000),
        granted([0, 50, 1_000_000, 500_000, 0, 50, 2, 2])
    );
    // a asks for 20%: demands of 80% in all fit, so 20 units.
    assert_eq!(
        renew(2_100_000, "a", 200_000),
        granted([0, 20, 900_000, 500_000, 0, 70, 2, 2])
    );
    // b's target is its 60%: it has 50, and gets 10 more.
    assert_eq!(
        renew(2_200_000, "b", 600_000),
        granted([0, 60, 800_000, 500_000, 0, 80, 2, 2])
    );
    // a hands back with 10 of its 20 unused: 70 granted. b, alone, asks for everything and
    // gets the 30 left.
    let released = window_call(&mut redis, "release", 2_300_000, "a", 10);
    assert_eq!(released, Value::Int(1));
    let mut renew = |now_us, holder, demand| {
        fields_of(window_call(&mut redis, "renew", now_us, holder, demand))
    };
    assert_eq!(
        renew(2_400_000, "b", S as u64),
        granted([0, 90, 600_000, 500_000, 0, 100, 1, 2])
    );
    // A time before window 2: nothing for window 1, and nothing written.
    assert_eq!(
        renew(1_500_000, "b", S as u64),
        granted([0, 0, 500_000, 500_000, 0, 100, 0, 1])
    );
    assert_eq!(
        renew(2_450_000, "b", S as u64),
        granted([0, 90, 550_000, 500_000, 0, 100, 1, 2])
    );
}

#[test]
fn a_window_redis_lost_is_quiet_to_its_end() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    fields_of(window_call(&mut redis, "renew", 0, "a", 0));
    let grant = fields_of(window_call(&mut redis, "renew", 1_000_000, "a", S as u64));
    assert_eq!(grant.1[1], 100);
    let _: () = redis::cmd("FLUSHALL").query(&mut redis).unwrap();
    // The 100 of window 1 may be in use: nothing until 2 s, under a new epoch.
    assert_eq!(
        fields_of(window_call(&mut redis, "renew", 1_600_000, "b", S as u64)),
        ("quiet".to_owned(), [0, 0, 400_000, 1_600_000, 0, 0, 1, 1])
    );
    assert_eq!(
        fields_of(window_call(&mut redis, "renew", 2_000_000, "b", S as u64)),
        granted([0, 100, 1_000_000, 1_600_000, 0, 100, 1, 2])
    );
    let other = redis::Script::new(FIXED_WINDOW_SCRIPT)
        .key("lease:{window}")
        .arg("renew")
        .arg(2_000_001)
        .arg(99)
        .arg(1_000_000)
        .arg(2_000_000)
        .arg("b")
        .arg(0)
        .invoke::<Value>(&mut redis)
        .unwrap_err()
        .to_string();
    assert!(other.contains("holds the lease rule fw:100:1000000:2000000 (fw:limit:period_us:lease_us), not fw:99:1000000:2000000"), "{other}");
}

#[test]
fn a_lease_a_holder_renewed_past_stops_being_held_at_its_own_end() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    renew(&mut redis, 0, "h1", S as u64);
    assert_eq!(
        renew(&mut redis, 2_000_000, "h1", 600_000).1[..2],
        [S, 1000]
    );
    assert_eq!(renew(&mut redis, 2_500_000, "h2", 600_000).1[..2], [0, 0]);
    // h1 renews twice to half: its leases then are the whole rule until 4 s, half until
    // 5 s and half until 5.5 s.
    assert_eq!(
        renew(&mut redis, 3_000_000, "h1", 600_000),
        granted([S / 2, 500, 2_000_000, 0, S, 1000, 2, 0])
    );
    assert_eq!(
        renew(&mut redis, 3_500_000, "h1", 600_000),
        granted([S / 2, 500, 2_000_000, 0, S, 1000, 2, 0])
    );
    // At 4 s its whole-rule lease has ended, though it renewed after it began: h1 holds
    // half, and h2 gets the other half.
    assert_eq!(
        renew(&mut redis, 4_000_000, "h2", 600_000),
        granted([S / 2, 500, 2_000_000, 0, S, 1000, 2, 0])
    );
    // h1's demand falls to 10%: 10% + (100% − 70%) / 2 = 25%, a burst of 250; its leases
    // of half run to 5 s and 5.5 s.
    assert_eq!(
        renew(&mut redis, 4_500_000, "h1", 100_000),
        granted([250_000, 250, 2_000_000, 0, S, 1000, 2, 0])
    );
    // At 5 s h1 still holds half (until 5.5 s): h2's 60% + 15% is cut to half.
    assert_eq!(
        renew(&mut redis, 5_000_000, "h2", 600_000),
        granted([S / 2, 500, 2_000_000, 0, S, 1000, 2, 0])
    );
    // At 5.5 s h1 holds its 25% alone: h2's 80% + 5% is cut to the 75% left.
    assert_eq!(
        renew(&mut redis, 5_500_000, "h2", 800_000),
        granted([750_000, 750, 2_000_000, 0, S, 1000, 2, 0])
    );
}
