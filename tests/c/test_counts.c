/* Counts of requests from C (docs/metrics.md, counters): off until a handle's
 * `enable_counts`, then each request counted once, in the field the contract gives it, and
 * every bad input.
 *
 * Every expected value is worked out by hand: fixed windows, all at time 0, so a rule of L
 * a minute admits the first L units and denies the rest.
 *
 * Build: cc -std=c99 -Wall -Wextra -Wpedantic -Werror -Iinclude tests/c/test_counts.c -lrate
 */
#include "check.h"

#define MINUTE (60 * SECOND)

static const rate_config TWO_A_MINUTE = {RATE_FIXED_WINDOW, 2, MINUTE, 0};
static const rate_config THREE_A_MINUTE = {RATE_FIXED_WINDOW, 3, MINUTE, 0};

static int test_a_limiter_counts_once_enabled(void) {
    rate_limiter *limiter = NULL;
    rate_counts counts = {7, 7, 7};
    rate_decision decision;
    CHECK_STATUS(rate_limiter_new(&TWO_A_MINUTE, &limiter), RATE_OK);
    CHECK_STATUS(rate_limiter_acquire_at(limiter, 1, 0, NULL), RATE_OK);
    /* Off: nothing to read, `counts` untouched. */
    CHECK_STATUS(rate_limiter_read_counts(limiter, &counts), RATE_E_UNSUPPORTED);
    CHECK_EQ_U64(counts.admitted, 7);
    CHECK_STATUS(rate_limiter_enable_counts(limiter), RATE_OK);
    CHECK_STATUS(rate_limiter_acquire_at(limiter, 1, 0, &decision), RATE_OK);
    CHECK_STATUS(rate_limiter_acquire_at(limiter, 1, 0, NULL), RATE_LIMITED);
    CHECK_STATUS(rate_limiter_acquire_at(limiter, 1, 0, &decision), RATE_LIMITED);
    /* Not requests: a query, and a cost above the limit. */
    CHECK_STATUS(rate_limiter_acquire_at(limiter, 0, 0, NULL), RATE_OK);
    CHECK_STATUS(rate_limiter_acquire_at(limiter, 3, 0, NULL), RATE_E_INSUFFICIENT_CAPACITY);
    CHECK_STATUS(rate_limiter_enable_counts(limiter), RATE_OK); /* on stays on, kept */
    CHECK_STATUS(rate_limiter_read_counts(limiter, &counts), RATE_OK);
    CHECK_EQ_U64(counts.admitted, 1);
    CHECK_EQ_U64(counts.denied, 2);
    CHECK_EQ_U64(counts.table_full, 0);
    rate_limiter_free(limiter);
    return 0;
}

static int test_a_keyed_limiter_counts_every_key(void) {
    rate_keyed *keyed = NULL;
    rate_counts counts;
    const uint8_t *keys[3] = {(const uint8_t *)"a", (const uint8_t *)"b", (const uint8_t *)"a"};
    const size_t lens[3] = {1, 1, 1};
    int32_t statuses[3];
    CHECK_STATUS(rate_keyed_new(&TWO_A_MINUTE, 100, &keyed), RATE_OK);
    CHECK_STATUS(rate_keyed_enable_counts(keyed), RATE_OK);
    CHECK_STATUS(rate_keyed_acquire_at(keyed, (const uint8_t *)"a", 1, 2, 0, NULL), RATE_OK);
    /* "a" is spent; "b" admitted; "a" denied again. */
    CHECK_STATUS(rate_keyed_acquire_batch_at(keyed, keys, lens, 3, 1, 0, statuses), RATE_OK);
    CHECK_STATUS(statuses[0], RATE_LIMITED);
    CHECK_STATUS(statuses[1], RATE_OK);
    CHECK_STATUS(statuses[2], RATE_LIMITED);
    CHECK_STATUS(rate_keyed_read_counts(keyed, &counts), RATE_OK);
    CHECK_EQ_U64(counts.admitted, 2);
    CHECK_EQ_U64(counts.denied, 2);
    CHECK_EQ_U64(counts.table_full, 0);
    rate_keyed_free(keyed);
    return 0;
}

static int test_a_policy_counts_the_rule_that_denied(void) {
    const rate_config rules[2] = {TWO_A_MINUTE, THREE_A_MINUTE};
    const uint64_t second_rule_only[2] = {0, 1};
    rate_policy *policy = NULL;
    rate_counts counts;
    rate_rule_counts each[3] = {{9, 9}, {9, 9}, {9, 9}};
    CHECK_STATUS(rate_policy_new(rules, 2, &policy), RATE_OK);
    CHECK_STATUS(rate_policy_enable_counts(policy), RATE_OK);
    CHECK_STATUS(rate_policy_acquire_at(policy, 1, 0, NULL), RATE_OK);
    CHECK_STATUS(rate_policy_acquire_at(policy, 1, 0, NULL), RATE_OK);
    /* Rule 0 is spent (2 of 2): it denies. */
    CHECK_STATUS(rate_policy_acquire_at(policy, 1, 0, NULL), RATE_LIMITED);
    /* Rule 1 alone: its third unit, then it denies. */
    CHECK_STATUS(rate_policy_acquire_costs_at(policy, second_rule_only, 2, 0, NULL), RATE_OK);
    CHECK_STATUS(rate_policy_acquire_costs_at(policy, second_rule_only, 2, 0, NULL), RATE_LIMITED);
    CHECK_STATUS(rate_policy_read_counts(policy, &counts, each, 3), RATE_OK);
    CHECK_EQ_U64(counts.admitted, 3);
    CHECK_EQ_U64(counts.denied, 2);
    CHECK_EQ_U64(each[0].denied, 1);
    CHECK_EQ_U64(each[1].denied, 1);
    CHECK_EQ_U64(each[0].shadow_denied, 0);
    CHECK_EQ_U64(each[1].shadow_denied, 0);
    CHECK_EQ_U64(each[2].denied, 9); /* past the policy's rules: untouched */
    /* Fewer rules asked for: only those written; none at all with NULL. */
    each[1].denied = 9;
    CHECK_STATUS(rate_policy_read_counts(policy, &counts, each, 1), RATE_OK);
    CHECK_EQ_U64(each[1].denied, 9);
    CHECK_STATUS(rate_policy_read_counts(policy, &counts, NULL, 0), RATE_OK);
    rate_policy_free(policy);
    return 0;
}

static int test_a_keyed_policy_counts_per_rule(void) {
    const rate_keyed_rule rules[2] = {{TWO_A_MINUTE, RATE_RULE_PER_KEY}, {THREE_A_MINUTE, RATE_RULE_GLOBAL}};
    rate_keyed_policy *policy = NULL;
    rate_counts counts;
    rate_rule_counts each[2];
    CHECK_STATUS(rate_keyed_policy_new(rules, 2, 100, &policy), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_enable_counts(policy), RATE_OK);
    /* "a" takes its 2; its third is denied by its per-key rule; "b" takes the global
     * rule's last unit; "c" is denied by the global rule. */
    CHECK_STATUS(rate_keyed_policy_acquire_at(policy, (const uint8_t *)"a", 1, 2, 0, NULL), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_at(policy, (const uint8_t *)"a", 1, 1, 0, NULL),
                 RATE_LIMITED);
    CHECK_STATUS(rate_keyed_policy_acquire_at(policy, (const uint8_t *)"b", 1, 1, 0, NULL), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_at(policy, (const uint8_t *)"c", 1, 1, 0, NULL),
                 RATE_LIMITED);
    CHECK_STATUS(rate_keyed_policy_read_counts(policy, &counts, each, 2), RATE_OK);
    CHECK_EQ_U64(counts.admitted, 2);
    CHECK_EQ_U64(counts.denied, 2);
    CHECK_EQ_U64(counts.table_full, 0);
    CHECK_EQ_U64(each[0].denied, 1);
    CHECK_EQ_U64(each[1].denied, 1);
    rate_keyed_policy_free(policy);
    return 0;
}

/* A holder of 1,000 a second leased 2 s at a time, with no fallback rule (deny). Its first
 * renewal is sent at 0 and answered at 500 ms: half the rate, a burst of 500, held until
 * 1,998 ms (2 s less its thousandth, from the renewal's sending). A share starts empty
 * and fills one unit every 2 ms. */
static int test_a_lease_holder_counts_and_keeps_its_books(void) {
    static const rate_lease_rule rule = {{RATE_GCRA, 1000, SECOND, 0}, 2 * SECOND, 0};
    const uint64_t fields[RATE_LEASE_FIELDS] = {500000, 500, 2000000, 1, 500000, 500, 1, 0};
    rate_lease_holder *holder = NULL;
    rate_lease_renewal renewal;
    rate_lease_stats stats;
    rate_counts counts;
    CHECK_STATUS(rate_lease_holder_new(&rule, NULL, (const uint8_t *)"h", 1, &holder), RATE_OK);
    CHECK_STATUS(rate_lease_enable_counts(holder), RATE_OK);
    CHECK_STATUS(rate_lease_renew_at(holder, 0, &renewal), RATE_OK);
    CHECK_STATUS(rate_lease_apply_at(holder, &renewal, (const uint8_t *)"granted", 7, fields,
                                     500 * MS),
                 RATE_LEASE_LEASED);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 500 * MS, NULL), RATE_LIMITED);
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 502 * MS, NULL), RATE_OK);
    CHECK_STATUS(rate_lease_read_stats_at(holder, SECOND, &stats), RATE_OK);
    CHECK_EQ_U64(stats.renewals, 1);
    CHECK_EQ_U64(stats.fallback_ns, 500 * MS);
    CHECK_EQ_U64(stats.held_rate, 500000);
    CHECK_EQ_U64(stats.held_burst, 500);
    CHECK_STATUS(stats.state, RATE_LEASE_LEASED);
    /* Past the lease's end, unrenewed: the fallback denies, and its time runs. */
    CHECK_STATUS(rate_lease_acquire_at(holder, 1, 3 * SECOND, NULL), RATE_LIMITED);
    CHECK_STATUS(rate_lease_read_stats_at(holder, 3 * SECOND, &stats), RATE_OK);
    CHECK_EQ_U64(stats.fallback_ns, 500 * MS + 1002 * MS);
    CHECK_STATUS(stats.state, RATE_LEASE_FALLBACK);
    CHECK_STATUS(rate_lease_read_counts(holder, &counts), RATE_OK);
    CHECK_EQ_U64(counts.admitted, 1);
    CHECK_EQ_U64(counts.denied, 2);
    CHECK_STATUS(rate_lease_read_stats(NULL, &stats), RATE_E_NULL);
    CHECK_STATUS(rate_lease_read_stats(holder, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_lease_enable_counts(NULL), RATE_E_NULL);
    CHECK_STATUS(rate_lease_read_counts(NULL, &counts), RATE_E_NULL);
    rate_lease_holder_free(holder);
    return 0;
}

static int test_bad_input(void) {
    rate_limiter *limiter = NULL;
    rate_policy *policy = NULL;
    rate_counts counts;
    CHECK_STATUS(rate_limiter_enable_counts(NULL), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_enable_counts(NULL), RATE_E_NULL);
    CHECK_STATUS(rate_policy_enable_counts(NULL), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_enable_counts(NULL), RATE_E_NULL);
    CHECK_STATUS(rate_limiter_read_counts(NULL, &counts), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_read_counts(NULL, &counts), RATE_E_NULL);
    CHECK_STATUS(rate_policy_read_counts(NULL, &counts, NULL, 0), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_read_counts(NULL, &counts, NULL, 0), RATE_E_NULL);
    CHECK_STATUS(rate_limiter_new(&TWO_A_MINUTE, &limiter), RATE_OK);
    CHECK_STATUS(rate_limiter_enable_counts(limiter), RATE_OK);
    CHECK_STATUS(rate_limiter_read_counts(limiter, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_policy_new(&TWO_A_MINUTE, 1, &policy), RATE_OK);
    CHECK_STATUS(rate_policy_enable_counts(policy), RATE_OK);
    CHECK_STATUS(rate_policy_read_counts(policy, &counts, NULL, 1), RATE_E_NULL);
    rate_limiter_free(limiter);
    rate_policy_free(policy);
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_a_limiter_counts_once_enabled),
        TEST_CASE(test_a_keyed_limiter_counts_every_key),
        TEST_CASE(test_a_policy_counts_the_rule_that_denied),
        TEST_CASE(test_a_keyed_policy_counts_per_rule),
        TEST_CASE(test_a_lease_holder_counts_and_keeps_its_books),
        TEST_CASE(test_bad_input),
    };
    return run_tests("test_counts", cases, sizeof cases / sizeof cases[0]);
}
