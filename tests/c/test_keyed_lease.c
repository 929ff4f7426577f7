/* Keyed leases from C (docs/leases.md, keys): keys not leased are sent to Redis (the call's
 * arguments, its answer read back), a round leases the hot keys, a leased key decides from
 * its share, closing hands every share back, and every bad input. No Redis: the script's
 * answers are written out. Run by `cargo test` (ffi/tests/c_api.rs) and by
 * scripts/c-tests.sh under valgrind and ASan/UBSan.
 *
 * Every expected value is worked out by hand from the contract: the rule is GCRA, 100 a
 * second per key (T = 10 ms, B = 100), leased 2 s at a time; a key is leased once it asks
 * for 10 units between two rounds, at most 2 keys. A share of the whole rule decides as a
 * GCRA of one unit every 10 ms and starts empty.
 *
 * Build: cc -std=c99 -Wall -Wextra -Wpedantic -Werror -Iinclude tests/c/test_keyed_lease.c -lrate
 */
#include "check.h"

static const rate_lease_rule RULE = {{RATE_GCRA, 100, SECOND, 0}, 2 * SECOND, 0};

static rate_keyed_lease_holder *holder_named(const char *name) {
    rate_keyed_lease_holder *holder = NULL;
    int32_t status =
        rate_keyed_lease_holder_new(&RULE, 10, 2, (const uint8_t *)name, strlen(name), &holder);
    return status == RATE_OK ? holder : NULL;
}

static int32_t ask(const rate_keyed_lease_holder *holder, const char *key, uint64_t n,
                   uint64_t now_ns) {
    return rate_keyed_lease_acquire_at(holder, (const uint8_t *)key, strlen(key), n, now_ns, NULL);
}

static int test_keys_not_leased_are_decided_in_redis(void) {
    rate_keyed_lease_holder *holder = holder_named("k1");
    rate_lease_renewal call;
    rate_decision decision;
    CHECK(holder != NULL);
    CHECK_STATUS(ask(holder, "a", 5, 0), RATE_KEYED_LEASE_IN_REDIS);
    /* The call: the units asked for, no holder's name, the time in whole microseconds. */
    CHECK_STATUS(rate_keyed_lease_in_redis_at(holder, 3, 1500 * MS + 999, &call), RATE_OK);
    CHECK_EQ_STR(call.args[0], "acquire");
    CHECK_EQ_STR(call.args[1], "1500000");
    CHECK_EQ_STR(call.args[2], "10000000");
    CHECK_EQ_STR(call.args[3], "100");
    CHECK_EQ_STR(call.args[4], "2000000");
    CHECK_EQ_STR(call.args[5], "");
    CHECK_EQ_STR(call.args[6], "3");
    CHECK_STATUS(rate_keyed_lease_in_redis(holder, 3, &call), RATE_OK);
    CHECK_EQ_STR(call.args[1], "");
    /* More than the rule's burst is never sent. */
    CHECK_STATUS(rate_keyed_lease_in_redis(holder, 101, &call), RATE_E_INSUFFICIENT_CAPACITY);
    CHECK_STATUS(ask(holder, "a", 101, 0), RATE_E_INSUFFICIENT_CAPACITY);
    {
        /* Admitted: 97 left, full again in 3 units' time, 30 ms. */
        const int64_t admitted[RATE_KEYED_LEASE_FIELDS] = {1, 100, 97, 0, 30000};
        const int64_t denied[RATE_KEYED_LEASE_FIELDS] = {0, 100, 0, 10000, 1000000};
        CHECK_STATUS(rate_keyed_lease_decision(holder, 3, admitted, &decision), RATE_OK);
        CHECK(decision.allowed);
        CHECK_EQ_U64(decision.limit, 100);
        CHECK_EQ_U64(decision.remaining, 97);
        CHECK_EQ_U64(decision.retry_after_ns, 0);
        CHECK_EQ_U64(decision.reset_after_ns, 30 * MS);
        CHECK_STATUS(rate_keyed_lease_decision(holder, 3, denied, &decision), RATE_LIMITED);
        CHECK(!decision.allowed);
        CHECK_EQ_U64(decision.retry_after_ns, 10 * MS);
        CHECK_STATUS(rate_keyed_lease_decision(holder, 3, denied, NULL), RATE_LIMITED);
    }
    rate_keyed_lease_holder_free(holder);
    return 0;
}

static int test_a_round_leases_the_hot_keys(void) {
    rate_keyed_lease_holder *holder = holder_named("k1");
    rate_keyed_lease_round *round = NULL;
    rate_lease_renewal renewal;
    rate_decision decision;
    const uint8_t *key = NULL;
    size_t key_len = 0;
    const uint64_t whole[RATE_LEASE_FIELDS] = {1000000, 100, 2000000, 1, 1000000, 100, 1, 0};
    CHECK(holder != NULL);
    /* "a" asks for 11 units, past the line of 10; "b" for 9. */
    CHECK_STATUS(ask(holder, "a", 5, 0), RATE_KEYED_LEASE_IN_REDIS);
    CHECK_STATUS(ask(holder, "a", 6, 0), RATE_KEYED_LEASE_IN_REDIS);
    CHECK_STATUS(ask(holder, "b", 9, 0), RATE_KEYED_LEASE_IN_REDIS);
    CHECK_STATUS(rate_keyed_lease_renewals_at(holder, 0, &round), RATE_OK);
    CHECK_EQ_U64(rate_keyed_lease_round_len(round), 1);
    CHECK_STATUS(rate_keyed_lease_round_key(round, 0, &key, &key_len), RATE_OK);
    CHECK_EQ_U64(key_len, 1);
    CHECK(key[0] == 'a');
    CHECK_STATUS(rate_keyed_lease_round_renewal(round, 0, &renewal), RATE_OK);
    CHECK_EQ_STR(renewal.args[0], "renew");
    CHECK_EQ_STR(renewal.args[5], "k1");
    /* A key's first renewal asks for the whole rule. */
    CHECK_EQ_STR(renewal.args[6], "1000000");
    CHECK_STATUS(rate_keyed_lease_leased(holder, (const uint8_t *)"a", 1), 1);
    CHECK_STATUS(rate_keyed_lease_leased(holder, (const uint8_t *)"b", 1), 0);
    /* Leased, no share yet: still decided in Redis. */
    CHECK_STATUS(ask(holder, "a", 1, 0), RATE_KEYED_LEASE_IN_REDIS);
    CHECK_STATUS(rate_keyed_lease_round_apply_at(round, 0, (const uint8_t *)"granted", 7, whole, 0),
                 RATE_LEASE_LEASED);
    CHECK_STATUS(rate_keyed_lease_round_apply_at(round, 1, (const uint8_t *)"granted", 7, whole, 0),
                 RATE_E_NULL);
    rate_keyed_lease_round_free(round);
    /* The share starts empty: one unit at 10 ms, none more then. */
    CHECK_STATUS(ask(holder, "a", 1, 9 * MS), RATE_LIMITED);
    CHECK_STATUS(rate_keyed_lease_acquire_at(holder, (const uint8_t *)"a", 1, 1, 10 * MS, &decision),
                 RATE_OK);
    /* The share's decision: nothing left, the next unit in 10 ms, full in 100 units' time. */
    CHECK(decision.allowed);
    CHECK_EQ_U64(decision.limit, 100);
    CHECK_EQ_U64(decision.remaining, 0);
    CHECK_EQ_U64(decision.reset_after_ns, 100 * 10 * MS);
    CHECK_STATUS(rate_keyed_lease_acquire_at(holder, (const uint8_t *)"a", 1, 1, 10 * MS, &decision),
                 RATE_LIMITED);
    CHECK(!decision.allowed);
    CHECK_EQ_U64(decision.retry_after_ns, 10 * MS);
    /* A key not leased leaves `out` alone. */
    decision.limit = 7;
    CHECK_STATUS(rate_keyed_lease_acquire_at(holder, (const uint8_t *)"b", 1, 1, 10 * MS, &decision),
                 RATE_KEYED_LEASE_IN_REDIS);
    CHECK_EQ_U64(decision.limit, 7);
    /* Closing: every share handed back, no key leased any more. */
    CHECK_STATUS(rate_keyed_lease_release_all(holder, &round), RATE_OK);
    CHECK_EQ_U64(rate_keyed_lease_round_len(round), 1);
    CHECK_STATUS(rate_keyed_lease_round_renewal(round, 0, &renewal), RATE_OK);
    CHECK_EQ_STR(renewal.args[0], "release");
    rate_keyed_lease_round_free(round);
    CHECK_STATUS(ask(holder, "a", 1, 20 * MS), RATE_KEYED_LEASE_IN_REDIS);
    rate_keyed_lease_holder_free(holder);
    return 0;
}

static int test_bad_input(void) {
    rate_keyed_lease_holder *holder = holder_named("k1");
    rate_keyed_lease_holder *refused = NULL;
    rate_keyed_lease_round *round = NULL;
    rate_lease_renewal renewal;
    const uint8_t *key = NULL;
    size_t key_len = 0;
    const int64_t garbage[RATE_KEYED_LEASE_FIELDS] = {2, 100, 0, 0, 0};
    const int64_t past_the_rule[RATE_KEYED_LEASE_FIELDS] = {1, 101, 0, 0, 0};
    rate_lease_rule sliding = RULE;
    sliding.config.algorithm = RATE_SLIDING_WINDOW;
    CHECK(holder != NULL);
    CHECK_STATUS(rate_keyed_lease_holder_new(NULL, 10, 2, NULL, 0, &refused), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_lease_holder_new(&RULE, 10, 2, NULL, 0, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_lease_holder_new(&RULE, 10, 2, NULL, 3, &refused), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_lease_holder_new(&RULE, 10, 0, NULL, 0, &refused),
                 RATE_E_INVALID_CONFIG);
    CHECK_STATUS(rate_keyed_lease_holder_new(&sliding, 10, 2, NULL, 0, &refused),
                 RATE_E_UNSUPPORTED);
    CHECK_STATUS(rate_keyed_lease_holder_new(&RULE, 10, 2, (const uint8_t *)"a\0b", 3, &refused),
                 RATE_E_INVALID_CONFIG);
    CHECK(refused == NULL);
    CHECK_STATUS(rate_keyed_lease_acquire(NULL, (const uint8_t *)"a", 1, 1, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_lease_acquire(holder, NULL, 3, 1, NULL), RATE_E_NULL);
    /* The empty key is a key. */
    CHECK_STATUS(rate_keyed_lease_acquire(holder, NULL, 0, 1, NULL), RATE_KEYED_LEASE_IN_REDIS);
    CHECK_STATUS(rate_keyed_lease_in_redis(NULL, 1, &renewal), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_lease_in_redis(holder, 1, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_lease_decision(holder, 1, NULL, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_lease_decision(holder, 1, garbage, NULL), RATE_E_REPLY);
    CHECK_STATUS(rate_keyed_lease_decision(holder, 1, past_the_rule, NULL), RATE_E_REPLY);
    CHECK_STATUS(rate_keyed_lease_leased(NULL, NULL, 0), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_lease_renewals(NULL, &round), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_lease_renewals(holder, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_lease_renewals(holder, &round), RATE_OK);
    CHECK_EQ_U64(rate_keyed_lease_round_len(round), 0);
    CHECK_STATUS(rate_keyed_lease_round_key(round, 0, &key, &key_len), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_lease_round_renewal(round, 0, &renewal), RATE_E_NULL);
    rate_keyed_lease_round_free(round);
    CHECK_EQ_U64(rate_keyed_lease_round_len(NULL), 0);
    rate_keyed_lease_round_free(NULL);
    CHECK(rate_keyed_lease_script(NULL) == NULL);
    CHECK(strncmp(rate_keyed_lease_script(holder), "local ", 6) == 0);
    rate_keyed_lease_holder_free(NULL);
    rate_keyed_lease_holder_free(holder);
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_keys_not_leased_are_decided_in_redis),
        TEST_CASE(test_a_round_leases_the_hot_keys),
        TEST_CASE(test_bad_input),
    };
    return run_tests("test_keyed_lease", cases, sizeof cases / sizeof cases[0]);
}
