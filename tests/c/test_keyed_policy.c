/* Keyed policies through include/rate.h: per-key and global rules decided together for
 * one key, costs per rule, reset, statistics, a shared file, and bad input. Plain C99;
 * every case returns 0 on success. Expected values follow from docs/decision.md,
 * docs/keyed.md, docs/shared.md and docs/policies.md and are worked out in the comments. */

#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <unistd.h>

#include "check.h"

/* A key from a C string: its bytes and length. */
#define K(s) (const uint8_t *)(s), strlen(s)

static rate_keyed_rule rule(uint32_t scope, uint32_t algorithm, uint64_t limit,
                            uint64_t period_ns) {
    rate_keyed_rule r;
    memset(&r, 0, sizeof r);
    r.scope = scope;
    r.config.algorithm = algorithm;
    r.config.limit = limit;
    r.config.period_ns = period_ns;
    return r;
}

/* Seed 004, scaled down: per customer 1 post and 5 likes a second (GCRA), everybody 3
 * requests a second (fixed window). */
static int make_site(rate_keyed_rule rules[3]) {
    rules[0] = rule(RATE_RULE_PER_KEY, RATE_GCRA, 1, SECOND);
    rules[1] = rule(RATE_RULE_PER_KEY, RATE_GCRA, 5, SECOND);
    rules[2] = rule(RATE_RULE_GLOBAL, RATE_FIXED_WINDOW, 3, SECOND);
    return 0;
}

static const uint64_t POST[3] = {1, 0, 1};
static const uint64_t LIKE[3] = {0, 1, 1};

static int test_posts_and_likes(void) {
    rate_keyed_rule rules[3];
    rate_keyed_policy *site = NULL;
    rate_policy_decision d;
    rate_keyed_stats stats;
    make_site(rules);
    CHECK_STATUS(rate_keyed_policy_new(rules, 3, 100, &site), RATE_OK);
    /* alice posts at 0: her post rule 0 left, everybody 2 left; the like rule reports 5. */
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(site, K("alice"), POST, 3, 0, &d), RATE_OK);
    CHECK(d.denied_by == RATE_POLICY_NO_RULE && d.rules_len == 3);
    CHECK_EQ_U64(d.rules[0].remaining, 0);
    CHECK_EQ_U64(d.rules[1].remaining, 5);
    CHECK_EQ_U64(d.rules[2].remaining, 2);
    /* Combined over the post and global rules only: limit 1, remaining 0. */
    CHECK_EQ_U64(d.decision.limit, 1);
    CHECK_EQ_U64(d.decision.remaining, 0);
    /* Her second post: denied by her post rule (retry at 1 s); the global unit given back. */
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(site, K("alice"), POST, 3, 0, &d),
                 RATE_LIMITED);
    CHECK(d.denied_by == 0);
    CHECK_EQ_U64(d.decision.retry_after_ns, SECOND);
    CHECK_EQ_U64(d.rules[2].remaining, 2);
    /* A like, then bob's post: the window is full; carol is denied by the global rule. */
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(site, K("alice"), LIKE, 3, 0, NULL), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(site, K("bob"), POST, 3, 0, NULL), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(site, K("carol"), LIKE, 3, 0, &d),
                 RATE_LIMITED);
    CHECK(d.denied_by == 2);
    CHECK_EQ_U64(d.decision.retry_after_ns, SECOND);
    /* One unit of every rule (n = 1), at 1 s: a fresh window and bucket. */
    CHECK_STATUS(rate_keyed_policy_acquire_at(site, K("alice"), 1, SECOND, &d), RATE_OK);
    CHECK_EQ_U64(d.rules[2].remaining, 2);
    /* Reset alice: her post rule is fresh at once; the global rule keeps its count. */
    CHECK_STATUS(rate_keyed_policy_reset(site, K("alice")), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(site, K("alice"), POST, 3, SECOND, &d),
                 RATE_OK);
    CHECK_EQ_U64(d.rules[2].remaining, 1);
    /* alice and bob hold live states at 1 s; nothing was refused. */
    CHECK_STATUS(rate_keyed_policy_read_stats_at(site, SECOND, &stats), RATE_OK);
    CHECK_EQ_U64(stats.capacity, 100);
    CHECK_EQ_U64(stats.max_keys, 200);
    CHECK_EQ_U64(stats.live_keys, 1);
    CHECK_EQ_U64(stats.table_full, 0);
    CHECK_STATUS(rate_keyed_policy_read_stats(site, &stats), RATE_OK);
    rate_keyed_policy_free(site);
    return 0;
}

static int test_a_shared_file(void) {
    rate_keyed_rule rules[3];
    rate_keyed_policy *first = NULL, *second = NULL, *other = NULL;
    rate_policy_decision d;
    char path[256];
    make_site(rules);
    snprintf(path, sizeof path, "/tmp/librate-c-keyed-policy-%ld", (long)getpid());
    unlink(path);
    CHECK_STATUS(rate_keyed_policy_open(path, rules, 3, 100, &first), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_open(path, rules, 3, 100, &second), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(first, K("alice"), POST, 3, 0, NULL), RATE_OK);
    /* The second handle sees alice's post and the global count. */
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(second, K("alice"), POST, 3, 0, &d),
                 RATE_LIMITED);
    CHECK_EQ_U64(d.rules[2].remaining, 2);
    /* Other rules, or another capacity: refused. */
    CHECK_STATUS(rate_keyed_policy_open(path, rules, 2, 100, &other), RATE_E_INCOMPATIBLE);
    CHECK_STATUS(rate_keyed_policy_open(path, rules, 3, 99, &other), RATE_E_INCOMPATIBLE);
    CHECK(other == NULL);
    CHECK_STATUS(rate_keyed_policy_open(NULL, rules, 3, 100, &other), RATE_E_NULL);
    rate_keyed_policy_free(first);
    rate_keyed_policy_free(second);
    unlink(path);
    return 0;
}

static int test_bad_input(void) {
    rate_keyed_rule rules[9];
    rate_keyed_policy *policy = NULL;
    rate_policy_decision d;
    uint64_t costs[2] = {1, 1};
    size_t i;
    for (i = 0; i < 9; i++) {
        rules[i] = rule(RATE_RULE_PER_KEY, RATE_GCRA, 2, SECOND);
    }
    CHECK_STATUS(rate_keyed_policy_new(NULL, 1, 10, &policy), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_new(rules, 1, 10, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_new(rules, 0, 10, &policy), RATE_E_INVALID_CONFIG);
    CHECK_STATUS(rate_keyed_policy_new(rules, 9, 10, &policy), RATE_E_INVALID_CONFIG);
    CHECK_STATUS(rate_keyed_policy_new(rules, 1, 0, &policy), RATE_E_INVALID_CONFIG);
    rules[1].scope = 7;
    CHECK_STATUS(rate_keyed_policy_new(rules, 2, 10, &policy), RATE_E_INVALID_CONFIG);
    rules[1].scope = RATE_RULE_GLOBAL;
    rules[1].config.algorithm = 99;
    CHECK_STATUS(rate_keyed_policy_new(rules, 2, 10, &policy), RATE_E_INVALID_CONFIG);
    CHECK(policy == NULL);
    rules[1].config.algorithm = RATE_SLIDING_LOG;
    CHECK_STATUS(rate_keyed_policy_new(rules, 2, 10, &policy), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_at(NULL, K("k"), 1, 0, &d), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_acquire(policy, NULL, 1, 1, &d), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_acquire_costs(policy, K("k"), NULL, 2, &d), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_reset(NULL, K("k")), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_read_stats(policy, NULL), RATE_E_NULL);
    /* A cost per rule, no more, no less; a cost past a limit; out left alone. */
    memset(&d, 0xab, sizeof d);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(policy, K("k"), costs, 1, 0, &d),
                 RATE_E_INVALID_CONFIG);
    CHECK_STATUS(rate_keyed_policy_acquire_at(policy, K("k"), 3, 0, &d),
                 RATE_E_INSUFFICIENT_CAPACITY);
    CHECK(d.denied_by == 0xabababab);
    /* The empty key is a key; NULL with length 0 names it. */
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(policy, NULL, 0, costs, 2, 0, NULL), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(policy, K(""), costs, 2, 0, NULL), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(policy, K(""), costs, 2, 0, NULL),
                 RATE_LIMITED);
    rate_keyed_policy_free(policy);
    rate_keyed_policy_free(NULL);
    return 0;
}

/* The site doubles its limits at 0, after alice's post and bob's like: per customer 2
 * posts and 10 likes a second, everybody 6. alice's empty post bucket stays empty (a token
 * every 500 ms now), bob's like bucket keeps its 4 tokens, the window keeps its 2 of 6. */
static int test_set_rules(void) {
    rate_keyed_rule rules[3], site_rules[3];
    rate_keyed_policy *site = NULL, *shared = NULL, *other = NULL;
    rate_policy_decision d;
    char path[256];
    make_site(rules);
    CHECK_STATUS(rate_keyed_policy_new(rules, 3, 100, &site), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(site, K("alice"), POST, 3, 0, NULL), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(site, K("bob"), LIKE, 3, 0, NULL), RATE_OK);
    rules[0] = rule(RATE_RULE_PER_KEY, RATE_GCRA, 2, SECOND);
    rules[1] = rule(RATE_RULE_PER_KEY, RATE_GCRA, 10, SECOND);
    rules[2] = rule(RATE_RULE_GLOBAL, RATE_FIXED_WINDOW, 6, SECOND);
    CHECK_STATUS(rate_keyed_policy_set_rules_at(site, rules, 3, 0), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_at(site, K("alice"), 0, 0, &d), RATE_OK);
    CHECK_EQ_U64(d.rules[0].remaining, 0);
    CHECK_EQ_U64(d.rules[2].remaining, 4);
    CHECK_STATUS(rate_keyed_policy_acquire_at(site, K("bob"), 0, 0, &d), RATE_OK);
    CHECK_EQ_U64(d.rules[1].remaining, 4);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(site, K("alice"), POST, 3, 500 * MS, NULL),
                 RATE_OK);
    /* Refused, changing nothing: a global rule made per key, fewer rules, NULL. */
    rules[2].scope = RATE_RULE_PER_KEY;
    CHECK_STATUS(rate_keyed_policy_set_rules_at(site, rules, 3, 0), RATE_E_INVALID_CONFIG);
    rules[2].scope = 7;
    CHECK_STATUS(rate_keyed_policy_set_rules_at(site, rules, 3, 0), RATE_E_INVALID_CONFIG);
    rules[2].scope = RATE_RULE_GLOBAL;
    CHECK_STATUS(rate_keyed_policy_set_rules(site, rules, 2), RATE_E_INVALID_CONFIG);
    CHECK_STATUS(rate_keyed_policy_set_rules(site, NULL, 3), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_set_rules(NULL, rules, 3), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_acquire_at(site, K("carol"), 0, 500 * MS, &d), RATE_OK);
    CHECK_EQ_U64(d.rules[2].limit, 6);
    CHECK_EQ_U64(d.rules[2].remaining, 3);
    rate_keyed_policy_free(site);
    /* A policy in a shared file changes in the file, for every handle of it. Under the
     * doubled rules alice posts twice at 0: her post bucket (T = 500 ms, tau = 1 s) is
     * empty, the window counts 2. Back to the site's rules at 0: the empty bucket stays
     * empty (TAT' = 0 + 1 s - 0: reset in 1 s), the window keeps its 2 of now 3. */
    snprintf(path, sizeof path, "/tmp/librate-c-keyed-policy-live-%ld", (long)getpid());
    unlink(path);
    make_site(site_rules);
    CHECK_STATUS(rate_keyed_policy_open(path, rules, 3, 100, &shared), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(shared, K("alice"), POST, 3, 0, NULL),
                 RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(shared, K("alice"), POST, 3, 0, NULL),
                 RATE_OK);
    CHECK_STATUS(rate_keyed_policy_set_rules_at(shared, site_rules, 3, 0), RATE_OK);
    rate_keyed_policy_free(shared);
    CHECK_STATUS(rate_keyed_policy_open(path, rules, 3, 100, &other), RATE_E_INCOMPATIBLE);
    CHECK_STATUS(rate_keyed_policy_open(path, site_rules, 3, 100, &other), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_at(other, K("alice"), 0, 0, &d), RATE_OK);
    rate_keyed_policy_free(other);
    unlink(path);
    CHECK_DECISION(d.rules[0], 1, 1, 0, 0, SECOND, 0);
    CHECK_DECISION(d.rules[2], 1, 3, 1, 0, SECOND, 0);
    return 0;
}

/* The site's like rule rolled out in shadow: alice's second like in a second is one it
 * would deny, and the request is admitted. */
static int test_shadow(void) {
    rate_keyed_rule rules[3];
    rate_keyed_policy *site = NULL;
    rate_policy_decision d;
    uint32_t mask = 99;
    make_site(rules);
    rules[1] = rule(RATE_RULE_PER_KEY, RATE_GCRA, 1, SECOND);
    CHECK_STATUS(rate_keyed_policy_new(rules, 3, 100, &site), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_set_shadow(site, 2), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_get_shadow(site, &mask), RATE_OK);
    CHECK(mask == 2);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(site, K("alice"), LIKE, 3, 0, &d), RATE_OK);
    CHECK(d.rules[1].allowed == 1);
    /* Combined over the global rule alone: 3 a second, 2 left. */
    CHECK_EQ_U64(d.decision.limit, 3);
    CHECK_EQ_U64(d.decision.remaining, 2);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(site, K("alice"), LIKE, 3, 0, &d), RATE_OK);
    CHECK(d.rules[1].allowed == 0 && d.denied_by == RATE_POLICY_NO_RULE);
    CHECK_EQ_U64(d.decision.remaining, 1);
    CHECK_STATUS(rate_keyed_policy_set_shadow(site, 8), RATE_E_INVALID_CONFIG);
    CHECK_STATUS(rate_keyed_policy_set_shadow(NULL, 1), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_get_shadow(NULL, &mask), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_get_shadow(site, NULL), RATE_E_NULL);
    /* Enforced: alice's like rule took one token at 0, back at 1 s. */
    CHECK_STATUS(rate_keyed_policy_set_shadow(site, 0), RATE_OK);
    CHECK_STATUS(rate_keyed_policy_acquire_costs_at(site, K("alice"), LIKE, 3, 0, &d),
                 RATE_LIMITED);
    CHECK(d.denied_by == 1);
    rate_keyed_policy_free(site);
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_posts_and_likes),
        TEST_CASE(test_a_shared_file),
        TEST_CASE(test_bad_input),
        TEST_CASE(test_set_rules),
        TEST_CASE(test_shadow),
    };
    return run_tests("test_keyed_policy", cases, sizeof cases / sizeof cases[0]);
}
