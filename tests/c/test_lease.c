/* A lease holder from C (docs/leases.md): the renewal's arguments, grants applied by hand
 * (no Redis: the answers are the script's, written out), decisions from a share, the
 * states, the fallback, the hand-back, and every bad input. Run by `cargo test`
 * (tests/c_api.rs) and by scripts/c-tests.sh under valgrind and ASan/UBSan.
 *
 * Every expected value is worked out by hand from the contract: the rule is GCRA, 1,000 a
 * second (T = 1 ms, B = 1,000), leased 2 s at a time (renewed every 500 ms, a margin of
 * 2 ms). A share of `rate` millionths decides as a GCRA of one unit every
 * ceil(T * 10^6 / rate) ns, bursts of its `burst`; a fresh lease starts empty; a lease
 * that follows one still held keeps the tokens, capped at the new burst
 * (docs/live-changes.md). Decisions are written {allowed, limit, remaining,
 * retry_after_ns, reset_after_ns, wait_ns}.
 *
 * Build: cc -std=c99 -Wall -Wextra -Wpedantic -Werror -Iinclude tests/c/test_lease.c -lrate
 */
#define _POSIX_C_SOURCE 200809L

#include "check.h"

#include <unistd.h>

static const rate_lease_rule RULE = {{RATE_GCRA, 1000, SECOND, 0}, 2 * SECOND, 0};

static rate_lease_holder *holder_named(const char *name, const rate_config *fallback) {
    rate_lease_holder *holder = NULL;
    int32_t status =
        rate_lease_holder_new(&RULE, fallback, (const uint8_t *)name, strlen(name), &holder);
    return status == RATE_OK ? holder : NULL;
}

/* Applies the script's answer `status` with its seven integers at `now_ns`. */
static int32_t answer(rate_lease_holder *holder, const rate_lease_renewal *renewal,
                      const char *status, uint64_t rate, uint64_t burst, uint64_t now_ns) {
    const uint64_t fields[RATE_LEASE_FIELDS] = {rate, burst, 2000000, 7, rate, burst, 1, 0};
    return rate_lease_apply_at(holder, renewal, (const uint8_t *)status, strlen(status), fields,
                               now_ns);
}

static int test_the_renewal_names_the_rule_and_the_demand(void) {
    rate_lease_holder *holder = holder_named("host-a", NULL);
    rate_lease_renewal renewal;
    CHECK(holder != NULL);
    CHECK_STATUS(rate_lease_renew_at(holder, 10 * SECOND, &renewal), RATE_OK);
    CHECK_EQ_U64(renewal.sent_at_ns, 10 * SECOND);
    CHECK_EQ_STR(renewal.args[0], "renew");
    CHECK_EQ_STR(renewal.args[1], "10000000");
    CHECK_EQ_STR(renewal.args[2], "1000000");
    CHECK_EQ_STR(renewal.args[3], "1000");
    CHECK_EQ_STR(renewal.args[4], "2000000");
    CHECK_EQ_STR(renewal.args[5], "host-a");
    /* The first asks for the whole rule: a fair share of it. */
    CHECK_EQ_STR(renewal.args[6], "1000000");
    /* Three units in the next 500 ms: 3 * T / 500 ms = 6,000 millionths. */
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 10 * SECOND, NULL), RATE_LIMITED);
    CHECK_STATUS(rate_lease_acquire_at(holder, 2, 10 * SECOND, NULL), RATE_LIMITED);
    CHECK_STATUS(rate_lease_renew_at(holder, 10 * SECOND + 500 * MS, &renewal), RATE_OK);
    CHECK_EQ_STR(renewal.args[6], "6000");
    /* By the server's clock: no time is sent. */
    CHECK_STATUS(rate_lease_renew(holder, &renewal), RATE_OK);
    CHECK_EQ_STR(renewal.args[1], "");
    rate_lease_holder_free(holder);
    return 0;
}

static int test_a_share_decides_and_carries_over(void) {
    rate_lease_holder *holder = holder_named("host-a", NULL);
    rate_lease_renewal renewal;
    rate_lease_grant grant;
    rate_decision d;
    CHECK(holder != NULL);
    CHECK_STATUS(rate_lease_renew_at(holder, 10 * SECOND, &renewal), RATE_OK);
    /* No answer yet: the fallback, a denial until the next renewal. */
    CHECK_STATUS(rate_lease_state_at(holder, 10 * SECOND), RATE_LEASE_FALLBACK);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 10 * SECOND, &d), RATE_LIMITED);
    CHECK_DECISION(d, 0, 0, 0, 500 * MS, 0, 0);
    /* Half the rate, bursts of 500: one unit every 2 ms, tau = 1 s, held to 11.998 s. */
    CHECK_STATUS(answer(holder, &renewal, "granted", 500000, 500, 10 * SECOND), RATE_LEASE_LEASED);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 10 * SECOND, &d), RATE_LIMITED);
    CHECK_DECISION(d, 0, 500, 0, 2 * MS, SECOND, 0);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 10 * SECOND + 2 * MS, &d), RATE_OK);
    CHECK_DECISION(d, 1, 500, 0, 0, SECOND, 0);
    CHECK_STATUS(rate_lease_state_at(holder, 11 * SECOND + 998 * MS - 1), RATE_LEASE_LEASED);
    CHECK_STATUS(rate_lease_state_at(holder, 11 * SECOND + 998 * MS), RATE_LEASE_FALLBACK);
    /* At 10.5 s the share holds (1 s - (11.002 s - 10.5 s)) / 2 ms = 249 tokens; renewed
     * to the whole rule (T = 1 ms, tau = 1 s) they are kept: 249 more, then none. */
    CHECK_STATUS(rate_lease_renew_at(holder, 10 * SECOND + 500 * MS, &renewal), RATE_OK);
    CHECK_STATUS(answer(holder, &renewal, "granted", 1000000, 1000, 10 * SECOND + 500 * MS),
                 RATE_LEASE_LEASED);
    CHECK_STATUS(rate_lease_acquire_at(holder, 249, 10 * SECOND + 500 * MS, &d), RATE_OK);
    CHECK_DECISION(d, 1, 1000, 0, 0, SECOND, 0);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 10 * SECOND + 500 * MS, &d), RATE_LIMITED);
    CHECK_DECISION(d, 0, 1000, 0, MS, SECOND, 0);
    CHECK_STATUS(rate_lease_last_grant(holder, &grant), RATE_OK);
    CHECK_EQ_U64(grant.rate, 1000000);
    CHECK_EQ_U64(grant.burst, 1000);
    CHECK_EQ_U64(grant.lease_us, 2000000);
    CHECK_EQ_U64(grant.epoch, 7);
    CHECK_EQ_U64(grant.holders, 1);
    rate_lease_holder_free(holder);
    return 0;
}

static int test_no_share_quiet_and_the_hand_back(void) {
    rate_lease_holder *holder = holder_named("host-a", NULL);
    rate_lease_renewal renewal;
    rate_decision d;
    CHECK(holder != NULL);
    CHECK_STATUS(rate_lease_renew_at(holder, 10 * SECOND, &renewal), RATE_OK);
    CHECK_STATUS(answer(holder, &renewal, "granted", 1000000, 1000, 10 * SECOND), RATE_LEASE_LEASED);
    /* Nothing granted: denied (not the fallback) for the lease, tokens gone. */
    CHECK_STATUS(rate_lease_renew_at(holder, 11 * SECOND, &renewal), RATE_OK);
    CHECK_STATUS(answer(holder, &renewal, "granted", 0, 0, 11 * SECOND), RATE_LEASE_UNSHARED);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 11 * SECOND, &d), RATE_LIMITED);
    CHECK_DECISION(d, 0, 0, 0, 500 * MS, 0, 0);
    CHECK_STATUS(rate_lease_acquire_at(holder, 0, 11 * SECOND, &d), RATE_OK);
    /* Quiet: nothing new, denied until 12.998 s (11.5 s + 2 s - 2 ms), then the fallback. */
    CHECK_STATUS(rate_lease_renew_at(holder, 11 * SECOND + 500 * MS, &renewal), RATE_OK);
    CHECK_STATUS(answer(holder, &renewal, "quiet", 0, 0, 11 * SECOND + 500 * MS), RATE_LEASE_UNSHARED);
    CHECK_STATUS(rate_lease_state_at(holder, 13 * SECOND + 498 * MS - 1), RATE_LEASE_UNSHARED);
    CHECK_STATUS(rate_lease_state_at(holder, 13 * SECOND + 498 * MS), RATE_LEASE_FALLBACK);
    /* After the gap the next lease starts empty: one unit after T. */
    CHECK_STATUS(rate_lease_renew_at(holder, 14 * SECOND, &renewal), RATE_OK);
    CHECK_STATUS(answer(holder, &renewal, "granted", 1000000, 1000, 14 * SECOND), RATE_LEASE_LEASED);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 14 * SECOND, NULL), RATE_LIMITED);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 14 * SECOND + MS, NULL), RATE_OK);
    CHECK_STATUS(rate_lease_release(holder, &renewal), RATE_OK);
    CHECK_EQ_STR(renewal.args[0], "release");
    CHECK_EQ_STR(renewal.args[5], "host-a");
    CHECK_STATUS(rate_lease_state_at(holder, 14 * SECOND + MS), RATE_LEASE_FALLBACK);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 15 * SECOND, NULL), RATE_LIMITED);
    rate_lease_holder_free(holder);
    return 0;
}

static int test_the_local_fallback(void) {
    const rate_config local = make_config(RATE_GCRA, 1, SECOND, 1);
    rate_lease_holder *holder = holder_named("host-b", &local);
    rate_decision d;
    CHECK(holder != NULL);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 0, &d), RATE_OK);
    CHECK_DECISION(d, 1, 1, 0, 0, SECOND, 0);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 0, NULL), RATE_LIMITED);
    CHECK_STATUS(rate_lease_state_at(holder, 0), RATE_LEASE_FALLBACK);
    rate_lease_holder_free(holder);
    return 0;
}

static int test_answers_the_script_never_gives(void) {
    rate_lease_holder *holder = holder_named("host-a", NULL);
    rate_lease_renewal renewal;
    const uint64_t fields[RATE_LEASE_FIELDS] = {1000000, 1000, 2000000, 7, 1000000, 1000, 1, 0};
    CHECK(holder != NULL);
    CHECK_STATUS(rate_lease_renew_at(holder, 0, &renewal), RATE_OK);
    CHECK_STATUS(rate_lease_apply_at(holder, &renewal, (const uint8_t *)"nope", 4, fields, 0),
                 RATE_E_REPLY);
    CHECK_STATUS(answer(holder, &renewal, "granted", 1000001, 1000, 0), RATE_E_REPLY);
    CHECK_STATUS(answer(holder, &renewal, "granted", 1000000, 1001, 0), RATE_E_REPLY);
    CHECK_STATUS(answer(holder, &renewal, "granted", 5, 0, 0), RATE_E_REPLY);
    /* Nothing was applied. */
    CHECK_STATUS(rate_lease_state_at(holder, 0), RATE_LEASE_FALLBACK);
    CHECK_EQ_STR(rate_status_str(RATE_E_REPLY),
                 "Redis answered something librate's script never answers; nothing was applied");
    rate_lease_holder_free(holder);
    return 0;
}

static int test_bad_input(void) {
    rate_lease_holder *holder = NULL;
    rate_lease_renewal renewal;
    rate_lease_grant grant;
    rate_lease_rule rule = RULE;
    const uint64_t fields[RATE_LEASE_FIELDS] = {0};
    const rate_config bad_fallback = make_config(RATE_GCRA, 0, SECOND, 0);
    char reason[RATE_REASON_LEN];
    char long_name[66];
    CHECK_STATUS(rate_lease_holder_new(NULL, NULL, NULL, 0, &holder), RATE_E_NULL);
    CHECK_STATUS(rate_lease_holder_new(&RULE, NULL, NULL, 0, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_lease_holder_new(&RULE, NULL, NULL, 3, &holder), RATE_E_NULL);
    CHECK_STATUS(rate_lease_holder_new(&RULE, NULL, (const uint8_t *)"a\0b", 3, &holder),
                 RATE_E_INVALID_CONFIG);
    CHECK_STATUS(rate_lease_explain(&RULE, NULL, (const uint8_t *)"a\0b", 3, reason, sizeof reason),
                 RATE_E_INVALID_CONFIG);
    CHECK_EQ_STR(reason, "name \"a\\0b\": a holder's name is 1 to 64 bytes of UTF-8 without NUL");
    CHECK_STATUS(rate_lease_explain(&RULE, &bad_fallback, NULL, 0, reason, sizeof reason),
                 RATE_E_INVALID_CONFIG);
    CHECK_EQ_STR(reason, "fallback: limit 0: must be at least 1");
    CHECK_STATUS(rate_lease_explain(&RULE, NULL, NULL, 0, reason, sizeof reason), RATE_OK);
    CHECK_EQ_STR(reason, "");
    CHECK_STATUS(rate_lease_explain(NULL, NULL, NULL, 0, reason, sizeof reason), RATE_E_NULL);
    memset(long_name, 'x', sizeof long_name);
    CHECK_STATUS(rate_lease_holder_new(&RULE, NULL, (const uint8_t *)long_name, 65, &holder),
                 RATE_E_INVALID_CONFIG);
    rule.config.algorithm = RATE_SLIDING_WINDOW;
    CHECK_STATUS(rate_lease_holder_new(&rule, NULL, NULL, 0, &holder), RATE_E_UNSUPPORTED);
    CHECK_STATUS(rate_lease_explain(&rule, NULL, NULL, 0, reason, sizeof reason), RATE_E_UNSUPPORTED);
    CHECK_EQ_STR(reason, "leases divide GCRA and fixed-window rules only, not the sliding window");
    rule.config.algorithm = RATE_SLIDING_LOG;
    CHECK_STATUS(rate_lease_holder_new(&rule, NULL, NULL, 0, &holder), RATE_E_UNSUPPORTED);
    /* A leased window's period is a whole number of microseconds. */
    rule.config.algorithm = RATE_FIXED_WINDOW;
    rule.config.period_ns = SECOND + 1;
    CHECK_STATUS(rate_lease_holder_new(&rule, NULL, NULL, 0, &holder), RATE_E_INVALID_CONFIG);
    rule = RULE;
    rule.lease_ns = 999 * 1000;
    CHECK_STATUS(rate_lease_holder_new(&rule, NULL, NULL, 0, &holder), RATE_E_INVALID_CONFIG);
    rule = RULE;
    rule.renew_every_ns = 2 * SECOND - 2 * MS;
    CHECK_STATUS(rate_lease_holder_new(&rule, NULL, NULL, 0, &holder), RATE_E_INVALID_CONFIG);
    rule.renew_every_ns -= 1;
    CHECK_STATUS(rate_lease_holder_new(&rule, NULL, NULL, 0, &holder), RATE_OK);
    CHECK(holder != NULL);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1001, 0, NULL), RATE_E_INSUFFICIENT_CAPACITY);
    CHECK_STATUS(rate_lease_acquire(NULL, 1, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_lease_state(NULL), RATE_E_NULL);
    CHECK_STATUS(rate_lease_renew(NULL, &renewal), RATE_E_NULL);
    CHECK_STATUS(rate_lease_renew_at(holder, 0, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_lease_release(NULL, &renewal), RATE_E_NULL);
    CHECK_STATUS(rate_lease_renew_at(holder, 0, &renewal), RATE_OK);
    CHECK_STATUS(rate_lease_apply(NULL, &renewal, (const uint8_t *)"quiet", 5, fields), RATE_E_NULL);
    CHECK_STATUS(rate_lease_apply(holder, NULL, (const uint8_t *)"quiet", 5, fields), RATE_E_NULL);
    CHECK_STATUS(rate_lease_apply(holder, &renewal, NULL, 5, fields), RATE_E_NULL);
    CHECK_STATUS(rate_lease_apply(holder, &renewal, (const uint8_t *)"quiet", 5, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_lease_last_grant(NULL, &grant), RATE_E_NULL);
    CHECK_STATUS(rate_lease_last_grant(holder, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_lease_last_grant(holder, &grant), RATE_OK);
    CHECK_EQ_U64(grant.rate, 0);
    CHECK(strstr(rate_lease_script(holder), "\n-- librate's lease script for GCRA") != NULL);
    CHECK(rate_lease_script(NULL) == NULL);
    rate_lease_holder_free(NULL);
    rate_lease_holder_free(holder);
    return 0;
}

/* A fixed window of 100 a second (P = 1,000,000 us), leased 2 s at a time: a count of the
 * window, held from when it arrived to the window's end less a thousandth of the time
 * held. */
static int test_a_window_count(void) {
    const rate_lease_rule rule = {{RATE_FIXED_WINDOW, 100, SECOND, 0}, 2 * SECOND, 0};
    rate_lease_holder *holder = NULL;
    rate_lease_renewal renewal;
    rate_lease_grant grant;
    rate_decision d;
    const uint64_t first[RATE_LEASE_FIELDS] = {0, 30, 750000, 7, 0, 30, 1, 10};
    const uint64_t more[RATE_LEASE_FIELDS] = {0, 50, 500000, 7, 0, 50, 1, 10};
    const uint64_t next[RATE_LEASE_FIELDS] = {0, 40, 1000000, 7, 0, 40, 1, 11};
    const uint8_t *granted = (const uint8_t *)"granted";
    CHECK_STATUS(rate_lease_holder_new(&rule, NULL, (const uint8_t *)"w", 1, &holder), RATE_OK);
    CHECK(strstr(rate_lease_script(holder), "\n-- librate's lease script for fixed windows") != NULL);
    CHECK_STATUS(rate_lease_renew_at(holder, 10 * SECOND + 250 * MS, &renewal), RATE_OK);
    CHECK_EQ_STR(renewal.args[2], "100");
    CHECK_EQ_STR(renewal.args[3], "1000000");
    /* 30 of window 10, to 11 s: held to 10.25 s + 750 ms - 750 us = 10.99925 s. */
    CHECK_STATUS(rate_lease_apply_at(holder, &renewal, granted, 7, first, 10 * SECOND + 250 * MS),
                 RATE_LEASE_LEASED);
    CHECK_STATUS(rate_lease_acquire_at(holder, 30, 10 * SECOND + 250 * MS, &d), RATE_OK);
    CHECK_DECISION(d, 1, 30, 0, 0, 749250 * 1000, 0);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 10 * SECOND + 500 * MS, &d), RATE_LIMITED);
    CHECK_DECISION(d, 0, 30, 0, 499250 * 1000, 499250 * 1000, 0);
    /* More of the same window: 50 in all, to the sooner end. */
    CHECK_STATUS(rate_lease_renew_at(holder, 10 * SECOND + 500 * MS, &renewal), RATE_OK);
    CHECK_STATUS(rate_lease_apply_at(holder, &renewal, granted, 7, more, 10 * SECOND + 500 * MS),
                 RATE_LEASE_LEASED);
    CHECK_STATUS(rate_lease_acquire_at(holder, 20, 10 * SECOND + 500 * MS, &d), RATE_OK);
    CHECK_DECISION(d, 1, 50, 0, 0, 499250 * 1000, 0);
    CHECK_STATUS(rate_lease_state_at(holder, 10 * SECOND + 999250 * 1000 - 1), RATE_LEASE_LEASED);
    CHECK_STATUS(rate_lease_state_at(holder, 10 * SECOND + 999250 * 1000), RATE_LEASE_FALLBACK);
    CHECK_STATUS(rate_lease_acquire_at(holder, 0, 10 * SECOND + 999250 * 1000, &d), RATE_OK);
    CHECK_DECISION(d, 1, 50, 0, 0, 0, 0);
    /* Window 11: a count of its own, from when it arrived, to 12 s less 1 ms. */
    CHECK_STATUS(rate_lease_renew_at(holder, 11 * SECOND, &renewal), RATE_OK);
    CHECK_STATUS(rate_lease_apply_at(holder, &renewal, granted, 7, next, 11 * SECOND),
                 RATE_LEASE_LEASED);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 11 * SECOND, &d), RATE_OK);
    CHECK_DECISION(d, 1, 40, 39, 0, 999 * MS, 0);
    CHECK_STATUS(rate_lease_last_grant(holder, &grant), RATE_OK);
    CHECK_EQ_U64(grant.window, 11);
    CHECK_EQ_U64(grant.burst, 40);
    /* The hand-back returns the 39 left, and the holder stops deciding first. */
    CHECK_STATUS(rate_lease_release(holder, &renewal), RATE_OK);
    CHECK_EQ_STR(renewal.args[0], "release");
    CHECK_EQ_STR(renewal.args[6], "39");
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 11 * SECOND + 100 * MS, NULL), RATE_LIMITED);
    rate_lease_holder_free(holder);
    return 0;
}

/* One share for a host: every opener of the file is one holder, under one name; a process
 * renews while rate_lease_lead says so. */
static int test_a_host_holder(void) {
    char path[64];
    rate_lease_holder *one = NULL, *other = NULL, *refused = NULL;
    rate_lease_renewal a, b;
    rate_lease_rule longer = RULE;
    snprintf(path, sizeof path, "/tmp/librate-test-lease-%ld", (long)getpid());
    remove(path);
    CHECK_STATUS(rate_lease_holder_open(path, &RULE, NULL, &one), RATE_OK);
    CHECK_STATUS(rate_lease_holder_open(path, &RULE, NULL, &other), RATE_OK);
    CHECK_STATUS(rate_lease_renew_at(one, 10 * SECOND, &a), RATE_OK);
    CHECK_STATUS(rate_lease_renew_at(other, 10 * SECOND, &b), RATE_OK);
    CHECK_EQ_STR(a.args[5], b.args[5]);
    CHECK(strlen(a.args[5]) == 16);
    /* One process: it renews, gives it up, and claims it again. */
    CHECK_STATUS(rate_lease_lead(one), 1);
    CHECK_STATUS(rate_lease_step_down(one), RATE_OK);
    CHECK_STATUS(rate_lease_lead(other), 1);
    /* A grant applied through one is the other's too: they decide from one share. */
    CHECK_STATUS(answer(one, &a, "granted", 1000000, 1000, 10 * SECOND), RATE_LEASE_LEASED);
    CHECK_STATUS(rate_lease_state_at(other, 10 * SECOND), RATE_LEASE_LEASED);
    CHECK_STATUS(rate_lease_acquire_at(one, 1, 10 * SECOND + MS, NULL), RATE_OK);
    CHECK_STATUS(rate_lease_acquire_at(other, 1, 10 * SECOND + MS, NULL), RATE_LIMITED);
    /* Another lease is another holder's file: refused, the file untouched. */
    longer.lease_ns = 3 * SECOND;
    CHECK_STATUS(rate_lease_holder_open(path, &longer, NULL, &refused), RATE_E_INCOMPATIBLE);
    CHECK_STATUS(rate_lease_holder_open("/nonexistent-dir/lease", &RULE, NULL, &refused), RATE_E_IO);
    CHECK_STATUS(rate_lease_holder_open(NULL, &RULE, NULL, &refused), RATE_E_NULL);
    CHECK_STATUS(rate_lease_holder_open(path, NULL, NULL, &refused), RATE_E_NULL);
    CHECK_STATUS(rate_lease_holder_open(path, &RULE, NULL, NULL), RATE_E_NULL);
    CHECK(refused == NULL);
    CHECK_STATUS(rate_lease_lead(NULL), RATE_E_NULL);
    CHECK_STATUS(rate_lease_step_down(NULL), RATE_E_NULL);
    rate_lease_holder_free(one);
    rate_lease_holder_free(other);
    remove(path);
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_the_renewal_names_the_rule_and_the_demand),
        TEST_CASE(test_a_share_decides_and_carries_over),
        TEST_CASE(test_no_share_quiet_and_the_hand_back),
        TEST_CASE(test_the_local_fallback),
        TEST_CASE(test_a_window_count),
        TEST_CASE(test_a_host_holder),
        TEST_CASE(test_answers_the_script_never_gives),
        TEST_CASE(test_bad_input),
    };
    return run_tests("test_lease", cases, sizeof cases / sizeof cases[0]);
}
