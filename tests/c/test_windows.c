/* The window algorithms through include/rate.h: fixed window, sliding window counter,
 * sliding log. Plain C99; every case returns 0 on success. Expected values follow from
 * docs/decision.md and are worked out in the comments. */

#include "check.h"

#define MINUTE (60 * SECOND)

static const uint32_t WINDOW_ALGORITHMS[] = {RATE_FIXED_WINDOW, RATE_SLIDING_WINDOW,
                                             RATE_SLIDING_LOG};
#define WINDOW_ALGORITHM_COUNT (sizeof WINDOW_ALGORITHMS / sizeof WINDOW_ALGORITHMS[0])

static rate_config config_of(uint32_t algorithm, uint64_t limit, uint64_t period_ns) {
    return make_config(algorithm, limit, period_ns, 0);
}

static rate_limiter *make(uint32_t algorithm, uint64_t limit, uint64_t period_ns) {
    rate_config config = config_of(algorithm, limit, period_ns);
    rate_limiter *limiter = NULL;
    if (rate_limiter_new(&config, &limiter) != RATE_OK) {
        return NULL;
    }
    return limiter;
}

/* Whether a decision has exactly these fields (wait_ns is always 0 for windows). */
static int is(const rate_decision *d, uint8_t allowed, uint64_t limit, uint64_t remaining,
              uint64_t retry_after_ns, uint64_t reset_after_ns) {
    return d->allowed == allowed && d->limit == limit && d->remaining == remaining &&
           d->retry_after_ns == retry_after_ns && d->reset_after_ns == reset_after_ns &&
           d->wait_ns == 0;
}

/* Fixed window, 2 per minute: 0:24 and 0:36 admitted, 0:49 denied until 1:00, 1:12
 * admitted in the next window. */
static int test_fixed_window_seed(void) {
    rate_limiter *limiter = make(RATE_FIXED_WINDOW, 2, MINUTE);
    rate_decision d;
    CHECK(limiter != NULL);
    CHECK(rate_limiter_acquire_at(limiter, 1, 24 * SECOND, &d) == RATE_OK);
    CHECK(is(&d, 1, 2, 1, 0, 36 * SECOND));
    CHECK(rate_limiter_acquire_at(limiter, 1, 36 * SECOND, &d) == RATE_OK);
    CHECK(is(&d, 1, 2, 0, 0, 24 * SECOND));
    CHECK(rate_limiter_acquire_at(limiter, 1, 49 * SECOND, &d) == RATE_LIMITED);
    CHECK(is(&d, 0, 2, 0, 11 * SECOND, 11 * SECOND));
    CHECK(rate_limiter_acquire_at(limiter, 1, 72 * SECOND, &d) == RATE_OK);
    CHECK(is(&d, 1, 2, 1, 0, 48 * SECOND));
    rate_limiter_free(limiter);
    return 0;
}

/* Sliding window counter, 10 per minute, 9 admitted in the first minute. 15 s into the
 * second the 9 weigh 9*45/60 = 6.75: 3 more fit (9.75 <= 10), a 4th does not until
 * 9*(60-e)/60 + 4 <= 10, e = 20 s. Both windows are clear at 3:00. */
static int test_sliding_window_seed(void) {
    rate_limiter *limiter = make(RATE_SLIDING_WINDOW, 10, MINUTE);
    rate_decision d;
    const uint64_t at = MINUTE + 15 * SECOND;
    CHECK(limiter != NULL);
    CHECK(rate_limiter_acquire_at(limiter, 9, 30 * SECOND, &d) == RATE_OK);
    CHECK(is(&d, 1, 10, 1, 0, 90 * SECOND));
    CHECK(rate_limiter_acquire_at(limiter, 0, at, &d) == RATE_OK);
    CHECK(is(&d, 1, 10, 3, 0, 45 * SECOND));
    CHECK(rate_limiter_acquire_at(limiter, 3, at, &d) == RATE_OK);
    CHECK(is(&d, 1, 10, 0, 0, 105 * SECOND));
    CHECK(rate_limiter_acquire_at(limiter, 1, at, &d) == RATE_LIMITED);
    CHECK(is(&d, 0, 10, 0, 5 * SECOND, 105 * SECOND));
    CHECK(rate_limiter_acquire_at(limiter, 1, MINUTE + 20 * SECOND - 1, NULL) == RATE_LIMITED);
    CHECK(rate_limiter_acquire_at(limiter, 1, MINUTE + 20 * SECOND, NULL) == RATE_OK);
    rate_limiter_free(limiter);
    return 0;
}

/* Sliding log, 2 per minute: exact over any 60 s, so 1:12 is still denied (0:24 is in
 * the last minute) and 1:24 is admitted. */
static int test_sliding_log_seed(void) {
    rate_limiter *limiter = make(RATE_SLIDING_LOG, 2, MINUTE);
    rate_decision d;
    CHECK(limiter != NULL);
    CHECK(rate_limiter_acquire_at(limiter, 1, 24 * SECOND, &d) == RATE_OK);
    CHECK(is(&d, 1, 2, 1, 0, 60 * SECOND));
    CHECK(rate_limiter_acquire_at(limiter, 1, 36 * SECOND, &d) == RATE_OK);
    CHECK(is(&d, 1, 2, 0, 0, 60 * SECOND));
    CHECK(rate_limiter_acquire_at(limiter, 1, 49 * SECOND, &d) == RATE_LIMITED);
    CHECK(is(&d, 0, 2, 0, 35 * SECOND, 47 * SECOND));
    CHECK(rate_limiter_acquire_at(limiter, 1, 72 * SECOND, &d) == RATE_LIMITED);
    CHECK(is(&d, 0, 2, 0, 12 * SECOND, 24 * SECOND));
    CHECK(rate_limiter_acquire_at(limiter, 1, 84 * SECOND, &d) == RATE_OK);
    CHECK(is(&d, 1, 2, 0, 0, 60 * SECOND));
    rate_limiter_free(limiter);
    return 0;
}

/* reserve does not exist for the window algorithms, whatever n; out is left alone. */
static int test_reserve_is_unsupported(void) {
    size_t i;
    for (i = 0; i < WINDOW_ALGORITHM_COUNT; i++) {
        rate_limiter *limiter = make(WINDOW_ALGORITHMS[i], 3, MINUTE);
        rate_decision d;
        CHECK(limiter != NULL);
        memset(&d, 0xAB, sizeof d);
        CHECK(rate_limiter_reserve_at(limiter, 1, 0, SECOND, &d) == RATE_E_UNSUPPORTED);
        CHECK(rate_limiter_reserve_at(limiter, 0, 0, 0, &d) == RATE_E_UNSUPPORTED);
        CHECK(rate_limiter_reserve_at(limiter, 4, 0, 0, NULL) == RATE_E_UNSUPPORTED);
        CHECK(d.allowed == 0xAB && d.remaining == UINT64_C(0xABABABABABABABAB));
        /* Nothing was taken. */
        CHECK(rate_limiter_acquire_at(limiter, 0, 0, &d) == RATE_OK);
        CHECK(is(&d, 1, 3, 3, 0, 0));
        rate_limiter_free(limiter);
    }
    return 0;
}

/* A cost above the limit is an error, not a denial; a cost of 0 is a query. */
static int test_costs(void) {
    size_t i;
    for (i = 0; i < WINDOW_ALGORITHM_COUNT; i++) {
        rate_limiter *limiter = make(WINDOW_ALGORITHMS[i], 3, MINUTE);
        rate_decision d;
        CHECK(limiter != NULL);
        memset(&d, 0xAB, sizeof d);
        CHECK(rate_limiter_acquire_at(limiter, 4, 5, &d) == RATE_E_INSUFFICIENT_CAPACITY);
        CHECK(d.allowed == 0xAB);
        CHECK(rate_limiter_acquire_at(limiter, 3, 5, &d) == RATE_OK);
        CHECK(d.remaining == 0);
        CHECK(rate_limiter_acquire_at(limiter, 0, 5, &d) == RATE_OK);
        CHECK(d.allowed == 1 && d.remaining == 0);
        CHECK(rate_limiter_acquire_at(limiter, 1, 5, &d) == RATE_LIMITED);
        rate_limiter_free(limiter);
    }
    return 0;
}

/* Zero limit or period, more than the packed state can count (windows: L*2^64/P must
 * stay below ~2^64; log: L <= 2^20 and L*(2^64/P + 1) <= 2^64 - 257). */
static int test_invalid_configs(void) {
    struct {
        uint32_t algorithm;
        uint64_t limit, period_ns;
    } cases[] = {
        {RATE_FIXED_WINDOW, 0, SECOND},
        {RATE_FIXED_WINDOW, 1, 0},
        {RATE_FIXED_WINDOW, 1, 2},
        {RATE_FIXED_WINDOW, SECOND, SECOND},
        {RATE_SLIDING_WINDOW, 0, SECOND},
        {RATE_SLIDING_WINDOW, 1, 0},
        {RATE_SLIDING_WINDOW, 1, 1},
        {RATE_SLIDING_LOG, 0, SECOND},
        {RATE_SLIDING_LOG, 1, 0},
        {RATE_SLIDING_LOG, 3, 3},
        {RATE_SLIDING_LOG, (UINT64_C(1) << 20) + 1, UINT64_MAX - 1},
        {4, 1, SECOND},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rate_config config = config_of(cases[i].algorithm, cases[i].limit, cases[i].period_ns);
        rate_limiter *limiter = (rate_limiter *)&config; /* must stay untouched */
        if (rate_limiter_new(&config, &limiter) != RATE_E_INVALID_CONFIG) {
            fprintf(stderr, "case %u: not RATE_E_INVALID_CONFIG\n", (unsigned)i);
            return 1;
        }
        CHECK(limiter == (rate_limiter *)&config);
    }
    /* The largest accepted: L = 2^20 for the log; L = P/4 for the windows. */
    {
        rate_limiter *a = make(RATE_SLIDING_LOG, UINT64_C(1) << 20, UINT64_C(1) << 21);
        rate_limiter *b = make(RATE_FIXED_WINDOW, SECOND / 4, SECOND);
        rate_limiter *c = make(RATE_SLIDING_WINDOW, SECOND / 4, SECOND);
        CHECK(a != NULL && b != NULL && c != NULL);
        rate_limiter_free(a);
        rate_limiter_free(b);
        rate_limiter_free(c);
    }
    return 0;
}

/* rate_limiter_acquire with out == NULL takes the coarse-clock shortcut: with a period
 * of ~146 years no window edge or expiry can fall in the test, so exactly L are admitted. */
static int test_acquire_now_without_out(void) {
    size_t i;
    for (i = 0; i < WINDOW_ALGORITHM_COUNT; i++) {
        rate_limiter *limiter = make(WINDOW_ALGORITHMS[i], 5, UINT64_MAX / 4);
        rate_decision d;
        int admitted = 0, k;
        CHECK(limiter != NULL);
        for (k = 0; k < 8; k++) {
            int32_t status = rate_limiter_acquire(limiter, 1, NULL);
            CHECK(status == RATE_OK || status == RATE_LIMITED);
            admitted += status == RATE_OK;
        }
        CHECK(admitted == 5);
        CHECK(rate_limiter_acquire(limiter, 6, NULL) == RATE_E_INSUFFICIENT_CAPACITY);
        CHECK(rate_limiter_acquire(limiter, 0, &d) == RATE_OK);
        CHECK(d.limit == 5 && d.remaining == 0);
        rate_limiter_free(limiter);
    }
    return 0;
}

/* burst is a GCRA setting; the windows ignore it. */
static int test_burst_is_ignored(void) {
    size_t i;
    for (i = 0; i < WINDOW_ALGORITHM_COUNT; i++) {
        rate_config config = config_of(WINDOW_ALGORITHMS[i], 2, MINUTE);
        rate_limiter *limiter = NULL;
        rate_decision d;
        config.burst = 7;
        CHECK(rate_limiter_new(&config, &limiter) == RATE_OK);
        CHECK(rate_limiter_acquire_at(limiter, 0, 0, &d) == RATE_OK);
        CHECK(d.limit == 2 && d.remaining == 2);
        CHECK(rate_limiter_acquire_at(limiter, 3, 0, &d) == RATE_E_INSUFFICIENT_CAPACITY);
        rate_limiter_free(limiter);
    }
    return 0;
}

/* RATE_FOREVER never refills: every algorithm admits its allowance once (GCRA its burst),
 * at any times, and reports UINT64_MAX ("never") for what never comes. */
static int test_forever(void) {
    static const uint32_t algorithms[] = {RATE_GCRA, RATE_FIXED_WINDOW, RATE_SLIDING_WINDOW,
                                          RATE_SLIDING_LOG};
    size_t i;
    for (i = 0; i < sizeof algorithms / sizeof algorithms[0]; i++) {
        rate_config config = config_of(algorithms[i], 3, RATE_FOREVER);
        rate_limiter *limiter = NULL;
        rate_decision d;
        CHECK(rate_limiter_new(&config, &limiter) == RATE_OK);
        CHECK(rate_limiter_acquire_at(limiter, 2, UINT64_MAX, &d) == RATE_OK);
        CHECK(is(&d, 1, 3, 1, 0, UINT64_MAX));
        CHECK(rate_limiter_acquire_at(limiter, 2, 0, &d) == RATE_LIMITED);
        CHECK(is(&d, 0, 3, 1, UINT64_MAX, UINT64_MAX));
        rate_limiter_free(limiter);
    }
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_fixed_window_seed),
        TEST_CASE(test_sliding_window_seed),
        TEST_CASE(test_sliding_log_seed),
        TEST_CASE(test_reserve_is_unsupported),
        TEST_CASE(test_costs),
        TEST_CASE(test_invalid_configs),
        TEST_CASE(test_acquire_now_without_out),
        TEST_CASE(test_burst_is_ignored),
        TEST_CASE(test_forever),
    };
    return run_tests("test_windows", cases, sizeof cases / sizeof cases[0]);
}
