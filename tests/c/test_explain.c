/* rate_limiter_explain_config and rate_keyed_explain_config: after rate_*_new says
 * RATE_E_INVALID_CONFIG, they say which field broke which bound. The expected bounds
 * follow from the rules in docs/decision.md; each is worked out beside its case. */
#include "check.h"

/* Checks that rate_limiter_new rejects `config` and that the reason is `expected`. */
static int rejected_because(rate_config config, const char *expected) {
    rate_limiter *l = NULL;
    char reason[RATE_REASON_LEN];
    CHECK_STATUS(rate_limiter_new(&config, &l), RATE_E_INVALID_CONFIG);
    CHECK(l == NULL);
    CHECK_STATUS(rate_limiter_explain_config(&config, reason, sizeof reason),
                 RATE_E_INVALID_CONFIG);
    CHECK_EQ_STR(reason, expected);
    /* A keyed table judges the configuration the same way. */
    CHECK_STATUS(rate_keyed_explain_config(&config, 8, reason, sizeof reason),
                 RATE_E_INVALID_CONFIG);
    CHECK_EQ_STR(reason, expected);
    return 0;
}

static int test_zero_limit_and_period(void) {
    CHECK(!rejected_because((rate_config){RATE_GCRA, 0, SECOND, 0}, "limit 0: must be at least 1"));
    CHECK(!rejected_because((rate_config){RATE_SLIDING_LOG, 0, SECOND, 0},
                            "limit 0: must be at least 1"));
    CHECK(!rejected_because((rate_config){RATE_FIXED_WINDOW, 1, 0, 0},
                            "period_ns 0: must be at least 1"));
    return 0;
}

static int test_more_than_one_unit_per_ns(void) {
    /* GCRA: T = floor(P / L) >= 1, so L <= P. */
    CHECK(!rejected_because((rate_config){RATE_GCRA, SECOND + 1, SECOND, 0},
                            "limit 1000000001: must be at most 1000000000 for GCRA with "
                            "period_ns 1000000000 (at most one unit per ns)"));
    return 0;
}

static int test_burst_past_the_timeline(void) {
    /* T = P = 2^63 - 1; 2T = 2^64 - 2 is past the largest storable 2^64 - 257. */
    CHECK(!rejected_because((rate_config){RATE_GCRA, 1, INT64_MAX, 3},
                            "burst 3: must be at most 1 for GCRA with limit 1 and period_ns "
                            "9223372036854775807 (burst x (period_ns / limit) must be at most "
                            "2^64 - 257 ns)"));
    return 0;
}

static int test_window_bounds(void) {
    /* floor((2^64-1) / 10^9) * 2^bits(L) + L <= 2^64 - 257 holds for 29 bits, not 30. */
    CHECK(!rejected_because((rate_config){RATE_FIXED_WINDOW, SECOND, SECOND, 0},
                            "limit 1000000000: must be at most 536870911 for the fixed window "
                            "with period_ns 1000000000"));
    /* The log's ring holds at most 2^20 timestamps. */
    CHECK(!rejected_because((rate_config){RATE_SLIDING_LOG, (1 << 20) + 1, SECOND, 0},
                            "limit 1048577: must be at most 1048576 for the sliding log with "
                            "period_ns 1000000000"));
    /* L = 1: floor((2^64-1) / P) * 2 + 1 <= 2^64 - 257 first holds at P = 3. */
    CHECK(!rejected_because((rate_config){RATE_FIXED_WINDOW, 1, 1, 0},
                            "period_ns 1: must be at least 3 for the fixed window with limit 1"));
    return 0;
}

static int test_unknown_algorithm(void) {
    CHECK(!rejected_because((rate_config){7, 1, SECOND, 0},
                            "algorithm 7: must be 0 (GCRA), 1 (fixed window), 2 (sliding "
                            "window) or 3 (sliding log)"));
    return 0;
}

static int test_capacity(void) {
    const rate_config config = {RATE_GCRA, 10, SECOND, 0};
    rate_keyed *k = NULL;
    char reason[RATE_REASON_LEN];
    CHECK_STATUS(rate_keyed_new(&config, 0, &k), RATE_E_INVALID_CONFIG);
    CHECK_STATUS(rate_keyed_explain_config(&config, 0, reason, sizeof reason),
                 RATE_E_INVALID_CONFIG);
    CHECK_EQ_STR(reason, "capacity 0: must be at least 1");
    /* GCRA takes 32 bytes per key: (2^64 - 1) * 32 bytes fit no address space. */
    CHECK_STATUS(rate_keyed_new(&config, UINT64_MAX, &k), RATE_E_INVALID_CONFIG);
    CHECK(k == NULL);
    CHECK_STATUS(rate_keyed_explain_config(&config, UINT64_MAX, reason, sizeof reason),
                 RATE_E_INVALID_CONFIG);
    CHECK_EQ_STR(reason, "capacity 18446744073709551615: its table needs "
                         "590295810358705651680 bytes (32 per key), more than can be allocated");
    /* The limiter itself is fine. */
    CHECK_STATUS(rate_limiter_explain_config(&config, reason, sizeof reason), RATE_OK);
    CHECK_EQ_STR(reason, "");
    return 0;
}

static int test_valid_configs_give_ok_and_an_empty_reason(void) {
    const rate_config config = {RATE_SLIDING_WINDOW, 100, SECOND, 0};
    char reason[RATE_REASON_LEN] = "untouched?";
    CHECK_STATUS(rate_limiter_explain_config(&config, reason, sizeof reason), RATE_OK);
    CHECK_EQ_STR(reason, "");
    CHECK_STATUS(rate_keyed_explain_config(&config, 1000, reason, sizeof reason), RATE_OK);
    CHECK_EQ_STR(reason, "");
    return 0;
}

static int test_null_and_short_buffers(void) {
    const rate_config zero = {RATE_GCRA, 0, SECOND, 0};
    char reason[8];
    memset(reason, 'x', sizeof reason);
    CHECK_STATUS(rate_limiter_explain_config(NULL, reason, sizeof reason), RATE_E_NULL);
    CHECK(reason[0] == 'x'); /* untouched */
    CHECK_STATUS(rate_keyed_explain_config(NULL, 1, reason, sizeof reason), RATE_E_NULL);
    /* No buffer: only the status. */
    CHECK_STATUS(rate_limiter_explain_config(&zero, NULL, 99), RATE_E_INVALID_CONFIG);
    CHECK_STATUS(rate_limiter_explain_config(&zero, reason, 0), RATE_E_INVALID_CONFIG);
    CHECK(reason[0] == 'x');
    /* Cut to 7 bytes and terminated. */
    CHECK_STATUS(rate_limiter_explain_config(&zero, reason, sizeof reason), RATE_E_INVALID_CONFIG);
    CHECK_EQ_STR(reason, "limit 0");
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_zero_limit_and_period),
        TEST_CASE(test_more_than_one_unit_per_ns),
        TEST_CASE(test_burst_past_the_timeline),
        TEST_CASE(test_window_bounds),
        TEST_CASE(test_unknown_algorithm),
        TEST_CASE(test_capacity),
        TEST_CASE(test_valid_configs_give_ok_and_an_empty_reason),
        TEST_CASE(test_null_and_short_buffers),
    };
    return run_tests("test_explain", cases, sizeof cases / sizeof cases[0]);
}
