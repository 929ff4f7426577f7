/* Policies of several rules through include/rate.h: all or nothing, the combined fields,
 * which rule denied and each rule's own, and bad input. Plain C99; every case returns 0
 * on success. Expected values follow from docs/decision.md and docs/policies.md and are worked
 * out in the comments. */

#include "check.h"

#define MINUTE (60 * SECOND)

static rate_config rule(uint32_t algorithm, uint64_t limit, uint64_t period_ns) {
    rate_config config;
    memset(&config, 0, sizeof config);
    config.algorithm = algorithm;
    config.limit = limit;
    config.period_ns = period_ns;
    return config;
}

/* 2 a second (GCRA, burst 2) and 3 a minute (fixed window). */
static rate_policy *two_rules(void) {
    rate_config rules[2];
    rate_policy *policy = NULL;
    rules[0] = rule(RATE_GCRA, 2, SECOND);
    rules[1] = rule(RATE_FIXED_WINDOW, 3, MINUTE);
    if (rate_policy_new(rules, 2, &policy) != RATE_OK) {
        return NULL;
    }
    return policy;
}

static int test_all_or_nothing(void) {
    rate_policy_decision d;
    rate_policy *policy = two_rules();
    CHECK(policy != NULL);
    /* At 0: the first unit leaves the GCRA rule 1 of 2 (TAT 0.5 s) and the window 2 of 3. */
    CHECK(rate_policy_acquire_at(policy, 1, 0, &d) == RATE_OK);
    CHECK(d.decision.allowed == 1 && d.denied_by == RATE_POLICY_NO_RULE && d.rules_len == 2);
    CHECK_EQ_U64(d.decision.limit, 2);
    CHECK_EQ_U64(d.decision.remaining, 1);
    CHECK_EQ_U64(d.rules[0].remaining, 1);
    CHECK_EQ_U64(d.rules[1].remaining, 2);
    /* reset: GCRA full at 0.5 s, the window at 1:00; the greatest. */
    CHECK_EQ_U64(d.rules[0].reset_after_ns, 500 * MS);
    CHECK_EQ_U64(d.decision.reset_after_ns, MINUTE);
    CHECK(rate_policy_acquire_at(policy, 1, 0, NULL) == RATE_OK);
    /* The GCRA rule is empty until 0.5 s; the window gives its unit back: 1 left. */
    CHECK(rate_policy_acquire_at(policy, 1, 0, &d) == RATE_LIMITED);
    CHECK(d.decision.allowed == 0 && d.denied_by == 0);
    CHECK_EQ_U64(d.decision.retry_after_ns, 500 * MS);
    CHECK(d.rules[1].allowed == 1);
    CHECK_EQ_U64(d.rules[1].remaining, 1);
    CHECK_EQ_U64(d.decision.remaining, 0);
    /* At 1 s the third unit fits both; at 2 s the window denies until 1:00. */
    CHECK(rate_policy_acquire_at(policy, 1, SECOND, NULL) == RATE_OK);
    CHECK(rate_policy_acquire_at(policy, 1, 2 * SECOND, &d) == RATE_LIMITED);
    CHECK(d.denied_by == 1 && d.rules[0].allowed == 1);
    CHECK_EQ_U64(d.decision.retry_after_ns, 58 * SECOND);
    /* A query: admitted, nothing taken. */
    CHECK(rate_policy_acquire_at(policy, 0, 2 * SECOND, &d) == RATE_OK);
    CHECK_EQ_U64(d.rules[0].remaining, 2);
    CHECK_EQ_U64(d.rules[1].remaining, 0);
    rate_policy_free(policy);
    return 0;
}

static int test_costs_per_rule(void) {
    rate_policy_decision d;
    rate_policy *policy = two_rules();
    const uint64_t gcra_only[2] = {1, 0}, both[2] = {1, 1}, nine[9] = {0};
    CHECK(policy != NULL);
    /* A unit of the GCRA rule alone: the window is left out, and reports 3 of 3. */
    CHECK(rate_policy_acquire_costs_at(policy, gcra_only, 2, 0, &d) == RATE_OK);
    CHECK_EQ_U64(d.decision.limit, 2);
    CHECK_EQ_U64(d.decision.remaining, 1);
    CHECK_EQ_U64(d.decision.reset_after_ns, 500 * MS);
    CHECK_EQ_U64(d.rules[1].remaining, 3);
    /* Both: the GCRA rule's last unit, the window's first. */
    CHECK(rate_policy_acquire_costs_at(policy, both, 2, 0, NULL) == RATE_OK);
    CHECK(rate_policy_acquire_costs_at(policy, both, 2, 0, &d) == RATE_LIMITED);
    CHECK(d.denied_by == 0);
    CHECK_EQ_U64(d.rules[1].remaining, 2);
    /* One cost per rule; never read past RATE_POLICY_MAX_RULES. */
    CHECK(rate_policy_acquire_costs_at(policy, both, 1, 0, &d) == RATE_E_INVALID_CONFIG);
    CHECK(rate_policy_acquire_costs_at(policy, nine, 9, 0, &d) == RATE_E_INVALID_CONFIG);
    CHECK(rate_policy_acquire_costs_at(policy, NULL, 2, 0, &d) == RATE_E_NULL);
    CHECK(rate_policy_acquire_costs(NULL, both, 2, &d) == RATE_E_NULL);
    CHECK(rate_policy_acquire_costs(policy, gcra_only, 2, NULL) == RATE_OK);
    rate_policy_free(policy);
    return 0;
}

static int test_bad_input(void) {
    rate_config rules[9];
    rate_policy *policy = NULL;
    rate_policy_decision d;
    size_t i;
    for (i = 0; i < 9; i++) {
        rules[i] = rule(RATE_SLIDING_LOG, 3, SECOND);
    }
    CHECK(rate_policy_new(NULL, 1, &policy) == RATE_E_NULL);
    CHECK(rate_policy_new(rules, 1, NULL) == RATE_E_NULL);
    CHECK(rate_policy_new(NULL, 0, &policy) == RATE_E_INVALID_CONFIG);
    CHECK(rate_policy_new(rules, 9, &policy) == RATE_E_INVALID_CONFIG);
    rules[1].limit = 0;
    CHECK(rate_policy_new(rules, 2, &policy) == RATE_E_INVALID_CONFIG);
    rules[1].algorithm = 99;
    rules[1].limit = 1;
    CHECK(rate_policy_new(rules, 2, &policy) == RATE_E_INVALID_CONFIG);
    CHECK(policy == NULL);
    CHECK(rate_policy_new(rules, RATE_POLICY_MAX_RULES, &policy) == RATE_E_INVALID_CONFIG);
    rules[1].algorithm = RATE_SLIDING_LOG;
    CHECK(rate_policy_new(rules, RATE_POLICY_MAX_RULES, &policy) == RATE_OK);
    CHECK(rate_policy_acquire_at(NULL, 1, 0, &d) == RATE_E_NULL);
    CHECK(rate_policy_acquire(NULL, 1, NULL) == RATE_E_NULL);
    /* Rule 1 allows 1: a cost of 2 can never be admitted, and out is left alone. */
    memset(&d, 0xab, sizeof d);
    CHECK(rate_policy_acquire_at(policy, 2, 0, &d) == RATE_E_INSUFFICIENT_CAPACITY);
    CHECK(d.denied_by == 0xabababab);
    CHECK(rate_policy_acquire(policy, 1, NULL) == RATE_OK);
    CHECK(rate_policy_acquire(policy, 1, NULL) == RATE_LIMITED);
    rate_policy_free(policy);
    rate_policy_free(NULL);
    return 0;
}

/* A customer upgrades at 0, after 2 units: 4 a second (GCRA, T = 250 ms) keeps the
 * bucket's 0 tokens (TAT 1 s); 10 a minute keeps the window's 2. */
static int test_set_rules(void) {
    rate_config rules[2];
    rate_policy_decision d;
    rate_policy *policy = two_rules();
    CHECK(policy != NULL);
    CHECK(rate_policy_acquire_at(policy, 2, 0, NULL) == RATE_OK);
    rules[0] = rule(RATE_GCRA, 4, SECOND);
    rules[1] = rule(RATE_FIXED_WINDOW, 10, MINUTE);
    CHECK(rate_policy_set_rules_at(policy, rules, 2, 0) == RATE_OK);
    CHECK(rate_policy_acquire_at(policy, 0, 0, &d) == RATE_OK);
    CHECK_EQ_U64(d.rules[0].remaining, 0);
    CHECK_EQ_U64(d.rules[0].reset_after_ns, SECOND);
    CHECK_EQ_U64(d.rules[1].remaining, 8);
    CHECK(rate_policy_acquire_at(policy, 1, 250 * MS, NULL) == RATE_OK);
    /* Refused, changing nothing: another algorithm, another number of rules, NULL. */
    rules[1] = rule(RATE_SLIDING_WINDOW, 10, MINUTE);
    CHECK(rate_policy_set_rules_at(policy, rules, 2, 0) == RATE_E_INVALID_CONFIG);
    CHECK(rate_policy_set_rules(policy, rules, 1) == RATE_E_INVALID_CONFIG);
    CHECK(rate_policy_set_rules(policy, NULL, 2) == RATE_E_NULL);
    CHECK(rate_policy_set_rules(NULL, rules, 2) == RATE_E_NULL);
    CHECK(rate_policy_acquire_at(policy, 0, 250 * MS, &d) == RATE_OK);
    CHECK_EQ_U64(d.rules[1].limit, 10);
    CHECK_EQ_U64(d.rules[1].remaining, 7);
    rate_policy_free(policy);
    return 0;
}

/* 2 a second enforced, 1 a second rolled out in shadow (GCRA, each burst its limit). */
static int test_shadow(void) {
    rate_config rules[2];
    rate_policy *policy = NULL;
    rate_policy_decision d;
    uint32_t mask = 99;
    rules[0] = rule(RATE_GCRA, 2, SECOND);
    rules[1] = rule(RATE_GCRA, 1, SECOND);
    CHECK(rate_policy_new(rules, 2, &policy) == RATE_OK);
    CHECK(rate_policy_get_shadow(policy, &mask) == RATE_OK && mask == 0);
    CHECK(rate_policy_set_shadow(policy, 2) == RATE_OK);
    CHECK(rate_policy_get_shadow(policy, &mask) == RATE_OK && mask == 2);
    /* At 0 the first unit: both admit; combined over the enforced rule, 1 of 2 left. */
    CHECK(rate_policy_acquire_at(policy, 1, 0, &d) == RATE_OK);
    CHECK(d.rules[1].allowed == 1);
    CHECK_EQ_U64(d.decision.limit, 2);
    CHECK_EQ_U64(d.decision.remaining, 1);
    /* The second: admitted, and the shadow rule would have denied it (its token back at
     * 1 s); it takes nothing. */
    CHECK(rate_policy_acquire_at(policy, 1, 0, &d) == RATE_OK);
    CHECK(d.decision.allowed == 1 && d.denied_by == RATE_POLICY_NO_RULE);
    CHECK(d.rules[1].allowed == 0);
    CHECK_EQ_U64(d.rules[1].retry_after_ns, SECOND);
    CHECK_EQ_U64(d.decision.retry_after_ns, 0);
    /* The third: the enforced rule denies until 0.5 s; the shadow rule is only peeked. */
    CHECK(rate_policy_acquire_at(policy, 1, 0, &d) == RATE_LIMITED);
    CHECK(d.denied_by == 0 && d.rules[1].allowed == 0);
    CHECK_EQ_U64(d.decision.retry_after_ns, 500 * MS);
    /* Enforced at 1 s: one unit each, then the new rule denies until 2 s. */
    CHECK(rate_policy_set_shadow(policy, 0) == RATE_OK);
    CHECK(rate_policy_acquire_at(policy, 1, SECOND, NULL) == RATE_OK);
    CHECK(rate_policy_acquire_at(policy, 1, SECOND, &d) == RATE_LIMITED);
    CHECK(d.denied_by == 1);
    CHECK_EQ_U64(d.decision.retry_after_ns, SECOND);
    /* A bit past the rules is refused and the mask stays; NULL is refused. */
    CHECK(rate_policy_set_shadow(policy, 4) == RATE_E_INVALID_CONFIG);
    CHECK(rate_policy_get_shadow(policy, &mask) == RATE_OK && mask == 0);
    CHECK(rate_policy_set_shadow(NULL, 1) == RATE_E_NULL);
    CHECK(rate_policy_get_shadow(NULL, &mask) == RATE_E_NULL);
    CHECK(rate_policy_get_shadow(policy, NULL) == RATE_E_NULL);
    /* Every rule shadow: admitted, with nothing to combine. Each rule alone: the first,
     * its tokens due at 1.5 s, admits a unit at 1 s; the second, due at 2 s, would not. */
    CHECK(rate_policy_set_shadow(policy, 3) == RATE_OK);
    CHECK(rate_policy_acquire_at(policy, 1, SECOND, &d) == RATE_OK);
    CHECK(d.rules[0].allowed == 1 && d.rules[1].allowed == 0);
    CHECK_EQ_U64(d.decision.limit, UINT64_MAX);
    CHECK_EQ_U64(d.decision.remaining, UINT64_MAX);
    rate_policy_free(policy);
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_all_or_nothing),
        TEST_CASE(test_costs_per_rule),
        TEST_CASE(test_bad_input),
        TEST_CASE(test_set_rules),
        TEST_CASE(test_shadow),
    };
    return run_tests("test_policy", cases, sizeof cases / sizeof cases[0]);
}
