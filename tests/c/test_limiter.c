/* C tests of the direct limiter (rate_limiter_*) and the process-wide functions of
 * include/rate.h, linked against librate.so. Run by `cargo test` (tests/c_api.rs) and by
 * scripts/c-tests.sh under valgrind and ASan/UBSan.
 *
 * Every expected value below is worked out by hand from docs/decision.md, with the
 * arithmetic in a comment. Notation: L limit, P period, B burst (0 means L),
 * T = floor(P / L) the emission interval, tau = B*T the tolerance, TAT the theoretical
 * arrival time (0 when fresh). A request of n units at t, waiting at most W (0 for a plain
 * acquire): tat = max(TAT, t); admitted iff tat + n*T - t <= tau + W, then TAT := tat + n*T
 * and wait = max(0, tat + n*T - t - tau). From the fields' definitions, with
 * debt = max(0, TAT - t):
 *   remaining      = floor((tau - debt) / T), 0 when debt > tau
 *   reset_after    = debt                      (remaining == B exactly when debt == 0)
 *   retry_after    = TAT + n*T - t - tau - W   (for a denial; 0 when admitted)
 * Near UINT64_MAX, where a new TAT may not fit, see test_end_of_the_timeline.
 * Decisions are written {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns}.
 *
 * Build: cc -std=c99 -Wall -Wextra -Wpedantic -Werror -pthread -Iinclude
 *        -DRATE_EXPECTED_VERSION='"x.y.z"' tests/c/test_limiter.c -lrate
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"

#ifndef RATE_EXPECTED_VERSION
#error "compile with -DRATE_EXPECTED_VERSION='\"<Cargo.toml version>\"'"
#endif

#define MAX UINT64_MAX
/* END = 2^64-257: the largest TAT a state stores (the values above it mark keyed-table
 * slots), so the TAT timeline ends there and tau = B*T must be at most END. */
#define END (MAX - 256)
#define HOUR (UINT64_C(3600) * SECOND)

/* A GCRA limiter, or NULL if rate_limiter_new failed (the caller CHECKs it). */
static rate_limiter *new_gcra(uint64_t limit, uint64_t period_ns, uint64_t burst) {
    rate_config config = {RATE_GCRA, limit, period_ns, burst};
    rate_limiter *limiter = NULL;
    if (rate_limiter_new(&config, &limiter) != RATE_OK)
        return NULL;
    return limiter;
}

/* CLOCK_MONOTONIC read by the test itself, to bracket the library's own reads. */
static uint64_t monotonic_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        abort();
    return (uint64_t)ts.tv_sec * SECOND + (uint64_t)ts.tv_nsec;
}

/* ---- process-wide functions ---------------------------------------------------------- */

static int test_version_matches_cargo_toml(void) {
    const char *version = rate_version();
    CHECK(version != NULL);
    CHECK(version[0] != '\0');
    CHECK_EQ_STR(version, RATE_EXPECTED_VERSION);
    /* A static string: the same text on every call. */
    CHECK_EQ_STR(rate_version(), version);
    return 0;
}

static int test_status_codes_have_the_contract_numbers(void) {
    /* The numbers are ABI and must never change (docs/c.md). */
    CHECK(RATE_OK == 0);
    CHECK(RATE_LIMITED == 1);
    CHECK(RATE_E_NULL == -1);
    CHECK(RATE_E_INVALID_CONFIG == -2);
    CHECK(RATE_E_INSUFFICIENT_CAPACITY == -3);
    CHECK(RATE_E_TABLE_FULL == -4);
    CHECK(RATE_E_UNSUPPORTED == -5);
    CHECK(RATE_E_INTERNAL == -6);
    CHECK(RATE_E_IO == -7);
    CHECK(RATE_E_INCOMPATIBLE == -8);
    CHECK(RATE_E_REPLY == -9);
    /* The macros are parenthesised, so arithmetic on them is safe. */
    CHECK(2 - RATE_E_NULL == 3);
    CHECK(RATE_GCRA == 0 && RATE_FIXED_WINDOW == 1 && RATE_SLIDING_WINDOW == 2 &&
          RATE_SLIDING_LOG == 3);
    return 0;
}

static int test_status_str_describes_every_code(void) {
    static const int32_t known[] = {
        RATE_OK,           RATE_LIMITED,       RATE_E_NULL,     RATE_E_INVALID_CONFIG,
        RATE_E_INSUFFICIENT_CAPACITY, RATE_E_TABLE_FULL, RATE_E_UNSUPPORTED, RATE_E_INTERNAL,
        RATE_E_IO,         RATE_E_INCOMPATIBLE, RATE_E_REPLY,
    };
    static const int32_t unknown[] = {2, 3, -10, 100, -100, INT32_MAX, INT32_MIN};
    size_t count = sizeof known / sizeof known[0];
    size_t i, j;
    for (i = 0; i < count; i++) {
        const char *text = rate_status_str(known[i]);
        CHECK(text != NULL);
        CHECK(text[0] != '\0');
        CHECK(strcmp(text, "unknown status") != 0);
        for (j = 0; j < i; j++)
            CHECK(strcmp(text, rate_status_str(known[j])) != 0);
    }
    /* The header documents the text for unknown codes. */
    for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        CHECK_EQ_STR(rate_status_str(unknown[i]), "unknown status");
    return 0;
}

/* How far the library's clock may read from CLOCK_MONOTONIC: what the header allows a
 * TSC reading, 1 us, 4 us in a rare case. */
#define CLOCK_BOUND_NS 4000

static int test_now_ns_is_clock_monotonic(void) {
    /* The library's reading lies between two of the test's own CLOCK_MONOTONIC readings,
     * give or take the clock's bound. */
    const uint64_t bound = CLOCK_BOUND_NS;
    uint64_t before = monotonic_ns();
    uint64_t now = rate_now_ns();
    uint64_t after = monotonic_ns();
    CHECK(before <= now + bound);
    CHECK(now <= after + bound);
    CHECK(rate_now_ns() >= now);
    return 0;
}

/* ---- construction ---------------------------------------------------------------------- */

static int test_new_rejects_null_pointers(void) {
    rate_config config = {RATE_GCRA, 1, SECOND, 0};
    int untouched = 0;
    rate_limiter *limiter = (rate_limiter *)(void *)&untouched;
    CHECK_STATUS(rate_limiter_new(NULL, &limiter), RATE_E_NULL);
    CHECK(limiter == (rate_limiter *)(void *)&untouched);
    CHECK_STATUS(rate_limiter_new(&config, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_limiter_new(NULL, NULL), RATE_E_NULL);
    return 0;
}

static int test_new_rejects_invalid_configs(void) {
    static const rate_config invalid[] = {
        {RATE_GCRA, 0, SECOND, 0},          /* L = 0 */
        {RATE_GCRA, 0, SECOND, 5},          /* L = 0, even with a burst */
        {RATE_GCRA, 1, 0, 0},               /* P = 0 */
        {RATE_GCRA, 0, 0, 0},               /* both */
        {RATE_GCRA, 10, 9, 0},              /* T = floor(9 / 10) = 0 */
        {RATE_GCRA, MAX, MAX - 1, 0},       /* T = floor((2^64-2) / (2^64-1)) = 0 */
        {4, 1, SECOND, 0},                  /* no algorithm 4 */
        {UINT32_MAX, 1, SECOND, 0},         /* nor 2^32-1 */
        {RATE_GCRA, 1, MAX - 1, 2},         /* T = 2^64-2, B*T = 2*(2^64-2) > 2^64-1 */
        {RATE_GCRA, 2, MAX - 1, 3},         /* T = 2^63-1, B*T = 3*2^63-3 > 2^64-1 */
        {RATE_GCRA, 1, UINT64_C(1) << 32, UINT64_C(1) << 32}, /* B*T = 2^64 */
        {RATE_GCRA, 1, SECOND, MAX},        /* B*T = (2^64-1)*10^9 */
        {RATE_GCRA, 1, END + 1, 1},         /* B*T = 2^64-256 > END */
        {RATE_GCRA, MAX, MAX, 0},           /* RATE_FOREVER: 2^64-1 units > END */
        {RATE_GCRA, 2, MAX - 1, 0},         /* T = 2^63-1, B*T = 2^64-2 > END */
    };
    size_t i;
    for (i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        int untouched = 0;
        rate_limiter *limiter = (rate_limiter *)(void *)&untouched;
        if (rate_limiter_new(&invalid[i], &limiter) != RATE_E_INVALID_CONFIG) {
            fprintf(stderr, "%s:%d: invalid config #%zu was not RATE_E_INVALID_CONFIG\n",
                    __FILE__, __LINE__, i);
            return 1;
        }
        CHECK(limiter == (rate_limiter *)(void *)&untouched);
    }
    return 0;
}

static int test_new_accepts_configs_at_the_edge(void) {
    /* Each just fits: {config, B}. A fresh limiter is full at any time (docs/clock.md), so a query
     * at t = 0 reports {1, B, B, 0, 0, 0}. */
    static const struct {
        rate_config config;
        uint64_t burst;
    } edges[] = {
        {{RATE_GCRA, 1, 1, 0}, 1},                                /* T = 1 */
        {{RATE_GCRA, 5, SECOND, 0}, 5},                           /* B = 0 means L */
        {{RATE_GCRA, 5, SECOND, 2}, 2},                           /* B < L */
        {{RATE_GCRA, 1, SECOND, 7}, 7},                           /* B > L */
        {{RATE_GCRA, 2, END, 0}, 2},            /* T = 2^63-129, B*T = 2^64-258 */
        {{RATE_GCRA, 1, UINT64_C(1) << 32, (UINT64_C(1) << 32) - 1},
         (UINT64_C(1) << 32) - 1},              /* B*T = 2^64 - 2^32 */
        {{RATE_GCRA, END, END, 0}, END},        /* T = 1, B*T = END */
        {{RATE_GCRA, 1, END, 1}, 1},            /* T = END = B*T */
    };
    size_t i;
    for (i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        rate_limiter *limiter = NULL;
        rate_decision d;
        if (rate_limiter_new(&edges[i].config, &limiter) != RATE_OK) {
            fprintf(stderr, "%s:%d: edge config #%zu was rejected\n", __FILE__, __LINE__, i);
            return 1;
        }
        CHECK(limiter != NULL);
        CHECK_STATUS(rate_limiter_acquire_at(limiter, 0, 0, &d), RATE_OK);
        CHECK_DECISION(d, 1, edges[i].burst, edges[i].burst, 0, 0, 0);
        rate_limiter_free(limiter);
    }
    return 0;
}

static int test_free_null_is_a_no_op(void) {
    rate_limiter_free(NULL);
    rate_limiter_free(NULL);
    return 0;
}

/* ---- bad input on a call ------------------------------------------------------------- */

static int test_null_handle_is_e_null(void) {
    rate_decision d;
    fill_sentinel(&d);
    CHECK_STATUS(rate_limiter_acquire(NULL, 1, &d), RATE_E_NULL);
    CHECK_STATUS(rate_limiter_acquire_at(NULL, 1, 0, &d), RATE_E_NULL);
    CHECK_STATUS(rate_limiter_reserve_at(NULL, 1, 0, SECOND, &d), RATE_E_NULL);
    CHECK_STATUS(rate_limiter_acquire(NULL, 0, &d), RATE_E_NULL);
    CHECK(is_sentinel(&d));
    CHECK_STATUS(rate_limiter_acquire(NULL, 1, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_limiter_acquire_at(NULL, 1, 0, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_limiter_reserve_at(NULL, 1, 0, SECOND, NULL), RATE_E_NULL);
    return 0;
}

static int test_cost_above_burst_is_insufficient_capacity(void) {
    /* L=5, P=1 s, B=2: T = 200 ms, tau = 400 ms. The decision's limit is B, so n = 3 can
     * never be admitted even though 3 <= L. */
    rate_limiter *l = new_gcra(5, SECOND, 2);
    rate_decision d;
    CHECK(l != NULL);
    fill_sentinel(&d);
    CHECK_STATUS(rate_limiter_acquire_at(l, 3, 0, &d), RATE_E_INSUFFICIENT_CAPACITY);
    CHECK_STATUS(rate_limiter_acquire_at(l, MAX, 0, &d), RATE_E_INSUFFICIENT_CAPACITY);
    CHECK_STATUS(rate_limiter_reserve_at(l, 3, 0, MAX, &d), RATE_E_INSUFFICIENT_CAPACITY);
    CHECK_STATUS(rate_limiter_reserve_at(l, MAX, MAX, MAX, &d), RATE_E_INSUFFICIENT_CAPACITY);
    CHECK_STATUS(rate_limiter_acquire(l, 3, &d), RATE_E_INSUFFICIENT_CAPACITY);
    CHECK_STATUS(rate_limiter_acquire(l, MAX, &d), RATE_E_INSUFFICIENT_CAPACITY);
    CHECK(is_sentinel(&d));
    CHECK_STATUS(rate_limiter_acquire_at(l, 3, 0, NULL), RATE_E_INSUFFICIENT_CAPACITY);
    CHECK_STATUS(rate_limiter_reserve_at(l, 3, 0, MAX, NULL), RATE_E_INSUFFICIENT_CAPACITY);
    CHECK_STATUS(rate_limiter_acquire(l, 3, NULL), RATE_E_INSUFFICIENT_CAPACITY);
    /* None of that took anything: the full burst is still there.
     * n=2 at 0: 0 + 2*200 - 0 = 400 <= 400, TAT = 400 ms; debt 400 ms, remaining 0. */
    CHECK_STATUS(rate_limiter_acquire_at(l, 2, 0, &d), RATE_OK);
    CHECK_DECISION(d, 1, 2, 0, 0, 400 * MS, 0);
    rate_limiter_free(l);
    return 0;
}

static int test_out_may_be_null(void) {
    /* L=1, P=1 s, B=1: T = tau = 1 s. */
    static const struct step steps[] = {
        /* 0 + 1 - 0 = 1 <= 1: admitted, TAT = 1 s; then 1 + 1 - 0 = 2 > 1: denied. */
        ACQUIRE_NO_OUT(1, 0, RATE_OK),
        ACQUIRE_NO_OUT(1, 0, RATE_LIMITED),
        /* Reserve, W = 1 s: 2 <= 1 + 1, admitted, TAT = 2 s; then 3 > 2, denied. */
        RESERVE_NO_OUT(1, 0, SECOND, RATE_OK),
        RESERVE_NO_OUT(1, 0, SECOND, RATE_LIMITED),
        ACQUIRE_NO_OUT(0, 0, RATE_OK),
        /* What those calls left: TAT = 2 s. At 0: retry 2 + 1 - 0 - 1 = 2 s, debt 2 s. */
        ACQUIRE(1, 0, RATE_LIMITED, 0, 1, 0, 2 * SECOND, 2 * SECOND, 0),
    };
    return run_gcra_steps(1, SECOND, 1, STEPS(steps));
}

/* One call of rate_limiter_acquire_at and the status it must return. */
struct outcome {
    int line;
    uint64_t n, now_ns;
    int32_t status;
};

#define OUTCOME(n, now, status) {__LINE__, (n), (now), (status)}

/* Makes each call on two twin limiters of `config`, one with an out and one with out =
 * NULL (the outcome alone): both must return the call's status, and the out must say the
 * same (allowed on RATE_OK, denied on RATE_LIMITED, untouched on an error). */
static int run_twins(rate_config config, const struct outcome *calls, size_t count) {
    rate_limiter *with_out = NULL, *without_out = NULL;
    size_t i;
    int failed = 0;
    CHECK_STATUS(rate_limiter_new(&config, &with_out), RATE_OK);
    CHECK_STATUS(rate_limiter_new(&config, &without_out), RATE_OK);
    for (i = 0; i < count && !failed; i++) {
        const struct outcome *c = &calls[i];
        rate_decision d;
        int32_t status;
        fill_sentinel(&d);
        status = rate_limiter_acquire_at(with_out, c->n, c->now_ns, &d);
        failed |= check_status(__FILE__, c->line, "with an out", status, c->status);
        if (c->status < 0 && !is_sentinel(&d)) {
            fprintf(stderr, "%s:%d: the error wrote to out\n", __FILE__, c->line);
            failed = 1;
        } else if (c->status >= 0)
            failed |= check_eq_u64(__FILE__, c->line, "allowed", d.allowed, c->status == RATE_OK);
        status = rate_limiter_acquire_at(without_out, c->n, c->now_ns, NULL);
        failed |= check_status(__FILE__, c->line, "out NULL", status, c->status);
    }
    rate_limiter_free(with_out);
    rate_limiter_free(without_out);
    return failed;
}

#define TWINS(config, calls) run_twins((config), (calls), sizeof(calls) / sizeof((calls)[0]))

static int test_out_null_gives_the_outcome_of_the_same_call_with_out(void) {
    /* GCRA, L=2, P=1 s, B=2: T = 500 ms, tau = 1 s. */
    static const struct outcome gcra[] = {
        OUTCOME(0, 0, RATE_OK), /* a query */
        OUTCOME(3, 0, RATE_E_INSUFFICIENT_CAPACITY), /* 3 > B */
        OUTCOME(MAX, 0, RATE_E_INSUFFICIENT_CAPACITY),
        /* 0 + 2*500 - 0 = 1000 <= 1000: TAT = 1 s; then 1000 + 500 - 0 = 1500 > 1000. */
        OUTCOME(2, 0, RATE_OK),
        OUTCOME(1, 0, RATE_LIMITED),
        OUTCOME(0, 0, RATE_OK), /* a query, even on an empty bucket */
        /* At 500 ms: 1000 + 500 - 500 = 1000 <= 1000, TAT = 1.5 s. */
        OUTCOME(1, 500 * MS, RATE_OK),
        /* Back to 250 ms: 1500 + 500 - 250 = 1750 > 1000. */
        OUTCOME(1, 250 * MS, RATE_LIMITED),
        /* At 10 s: tat = 10 s, 10.5 - 10 = 0.5 s <= 1 s, TAT = 10.5 s. */
        OUTCOME(1, 10 * SECOND, RATE_OK),
        /* Back to 9.6 s: 10.5 + 0.5 - 9.6 = 1.4 s > 1 s, though 10 s would admit it. */
        OUTCOME(1, 9600 * MS, RATE_LIMITED),
        /* At 10 s: 11 - 10 = 1 s <= 1 s, TAT = 11 s; then 11 + 1 - 10 = 2 s > 1 s. */
        OUTCOME(1, 10 * SECOND, RATE_OK),
        OUTCOME(2, 10 * SECOND, RATE_LIMITED),
    };
    /* Fixed window, L=2, P=1 s: windows [k s, (k+1) s). */
    static const struct outcome fixed[] = {
        OUTCOME(0, 0, RATE_OK),
        OUTCOME(3, 0, RATE_E_INSUFFICIENT_CAPACITY), /* 3 > L */
        OUTCOME(2, 100 * MS, RATE_OK),               /* window 0: 0 + 2 <= 2 */
        OUTCOME(1, 200 * MS, RATE_LIMITED),          /* 2 + 1 > 2 */
        OUTCOME(0, 200 * MS, RATE_OK),
        OUTCOME(1, 1100 * MS, RATE_OK), /* window 1: 0 + 1 <= 2 */
        /* Back to 500 ms: counted in window 1, the latest seen: 1 + 1 <= 2, then 3 > 2. */
        OUTCOME(1, 500 * MS, RATE_OK),
        OUTCOME(1, 600 * MS, RATE_LIMITED),
        OUTCOME(1, 2 * SECOND, RATE_OK), /* window 2 */
    };
    /* Sliding log, L=2, P=1 s: admitted iff the entries in (t - 1 s, t] plus n are <= 2. */
    static const struct outcome sliding_log[] = {
        OUTCOME(0, 0, RATE_OK),
        OUTCOME(3, 0, RATE_E_INSUFFICIENT_CAPACITY),
        OUTCOME(1, 0, RATE_OK),             /* log: 0 */
        OUTCOME(1, 400 * MS, RATE_OK),      /* log: 0, 400 ms */
        OUTCOME(1, 900 * MS, RATE_LIMITED), /* both in (-100 ms, 900 ms] */
        OUTCOME(1, 1200 * MS, RATE_OK),     /* (200 ms, 1.2 s] holds 400 ms alone */
        /* Back to 1 s: judged at 1.2 s, the latest seen: 400 ms and 1.2 s are inside. */
        OUTCOME(1, SECOND, RATE_LIMITED),
        OUTCOME(2, 2500 * MS, RATE_OK), /* (1.5 s, 2.5 s] is empty */
    };
    return TWINS(make_config(RATE_GCRA, 2, SECOND, 2), gcra) ||
           TWINS(make_config(RATE_FIXED_WINDOW, 2, SECOND, 0), fixed) ||
           TWINS(make_config(RATE_SLIDING_LOG, 2, SECOND, 0), sliding_log);
}

/* ---- n == 0 ------------------------------------------------------------------------------ */

static int test_query_is_admitted_and_changes_nothing(void) {
    /* L=3, P=3 s, B=0 -> B=3: T = 1 s, tau = 3 s. */
    static const struct step steps[] = {
        /* Fresh: debt 0, remaining 3, reset 0. */
        ACQUIRE(0, 0, RATE_OK, 1, 3, 3, 0, 0, 0),
        /* n=2 at 0: 0 + 2 - 0 = 2 <= 3, TAT = 2 s; remaining floor((3-2)/1) = 1. */
        ACQUIRE(2, 0, RATE_OK, 1, 3, 1, 0, 2 * SECOND, 0),
        /* Queries, by acquire and by reserve, report TAT = 2 s and change nothing. */
        ACQUIRE(0, 0, RATE_OK, 1, 3, 1, 0, 2 * SECOND, 0),
        ACQUIRE(0, 0, RATE_OK, 1, 3, 1, 0, 2 * SECOND, 0),
        ACQUIRE_NO_OUT(0, 0, RATE_OK),
        RESERVE(0, 0, 5 * SECOND, RATE_OK, 1, 3, 1, 0, 2 * SECOND, 0),
        RESERVE_NO_OUT(0, 0, 5 * SECOND, RATE_OK),
        /* At 0.5 s: debt 1.5 s, remaining floor(1.5 / 1) = 1, reset 1.5 s. */
        ACQUIRE(0, 500 * MS, RATE_OK, 1, 3, 1, 0, 1500 * MS, 0),
        /* Had a query taken anything, this would be denied: 2 + 1 - 0 = 3 <= 3, TAT 3 s. */
        ACQUIRE(1, 0, RATE_OK, 1, 3, 0, 0, 3 * SECOND, 0),
        /* 3 + 1 - 0 = 4 > 3: denied, retry 4 - 3 = 1 s. A query is still admitted. */
        ACQUIRE(1, 0, RATE_LIMITED, 0, 3, 0, SECOND, 3 * SECOND, 0),
        ACQUIRE(0, 0, RATE_OK, 1, 3, 0, 0, 3 * SECOND, 0),
        /* A reserve queues past the tolerance: n=2, W=10 s: 3 + 2 - 0 = 5 <= 13, TAT 5 s,
         * wait 5 - 3 = 2 s. A query there (debt 5 s > tau) is still admitted (docs/decision.md,
         * queries). */
        RESERVE(2, 0, 10 * SECOND, RATE_OK, 1, 3, 0, 0, 5 * SECOND, 2 * SECOND),
        ACQUIRE(0, 0, RATE_OK, 1, 3, 0, 0, 5 * SECOND, 0),
        RESERVE(0, 0, 0, RATE_OK, 1, 3, 0, 0, 5 * SECOND, 0),
    };
    rate_limiter *fresh = new_gcra(3, 3 * SECOND, 0);
    rate_decision d;
    /* On the library's clock, a fresh limiter is full whatever the time. */
    CHECK(fresh != NULL);
    CHECK_STATUS(rate_limiter_acquire(fresh, 0, &d), RATE_OK);
    CHECK_DECISION(d, 1, 3, 3, 0, 0, 0);
    CHECK_STATUS(rate_limiter_acquire(fresh, 0, NULL), RATE_OK);
    rate_limiter_free(fresh);
    return run_gcra_steps(3, 3 * SECOND, 0, STEPS(steps));
}

/* ---- the seed scenarios ---------------------------------------------------------------- */

static int test_seed_bob_and_alice(void) {
    /* L=1, P=2 s, B=1: T = tau = 2 s. One limiter per user. */
    static const struct step bob[] = {
        /* At 0 ms: 0 + 2 - 0 = 2 <= 2, admitted, TAT = 2 s; debt 2 s, remaining 0. */
        ACQUIRE(1, 0, RATE_OK, 1, 1, 0, 0, 2 * SECOND, 0),
        /* At 999 ms: 2000 + 2000 - 999 = 3001 > 2000, denied;
         * retry 2000 + 2000 - 999 - 2000 = 1001 ms; reset 2000 - 999 = 1001 ms. */
        ACQUIRE(1, 999 * MS, RATE_LIMITED, 0, 1, 0, 1001 * MS, 1001 * MS, 0),
        /* At 1000 ms: 4000 - 1000 = 3000 > 2000, denied; retry 1000 ms, reset 1000 ms. */
        ACQUIRE(1, 1000 * MS, RATE_LIMITED, 0, 1, 0, 1000 * MS, 1000 * MS, 0),
        /* At 2001 ms: tat = 2001, 2001 + 2000 - 2001 = 2000 <= 2000, admitted,
         * TAT = 4001 ms; debt 2 s. */
        ACQUIRE(1, 2001 * MS, RATE_OK, 1, 1, 0, 0, 2 * SECOND, 0),
    };
    static const struct step alice[] = {
        /* Independent of Bob: admitted at 999 ms, TAT = 2999 ms, debt 2 s. */
        ACQUIRE(1, 999 * MS, RATE_OK, 1, 1, 0, 0, 2 * SECOND, 0),
        /* At 1000 ms: 2999 + 2000 - 1000 = 3999 > 2000; retry 1999 ms, reset 1999 ms. */
        ACQUIRE(1, 1000 * MS, RATE_LIMITED, 0, 1, 0, 1999 * MS, 1999 * MS, 0),
    };
    static const struct step carol[] = {
        /* retry_after is the smallest wait: admitted at 0, denied at 1999 ms with retry
         * 2000 + 2000 - 1999 - 2000 = 1 ms, and admitted at 1999 + 1 = 2000 ms. */
        ACQUIRE_NO_OUT(1, 0, RATE_OK),
        ACQUIRE(1, 1999 * MS, RATE_LIMITED, 0, 1, 0, MS, MS, 0),
        ACQUIRE(1, 2000 * MS, RATE_OK, 1, 1, 0, 0, 2 * SECOND, 0),
    };
    return run_gcra_steps(1, 2 * SECOND, 1, STEPS(bob)) ||
           run_gcra_steps(1, 2 * SECOND, 1, STEPS(alice)) ||
           run_gcra_steps(1, 2 * SECOND, 1, STEPS(carol));
}

static int test_seed_one_per_second_capacity_two(void) {
    /* L=1, P=1 s, B=2: T = 1 s, tau = 2 s. */
    static const struct step steps[] = {
        /* A at 0: 0 + 1 - 0 = 1 <= 2, TAT = 1 s; remaining floor((2-1)/1) = 1. */
        ACQUIRE(1, 0, RATE_OK, 1, 2, 1, 0, SECOND, 0),
        /* B at 0: 1 + 1 - 0 = 2 <= 2, TAT = 2 s; remaining 0. */
        ACQUIRE(1, 0, RATE_OK, 1, 2, 0, 0, 2 * SECOND, 0),
        /* C at 0: 2 + 1 - 0 = 3 > 2, denied; retry 3 - 2 = 1 s. */
        ACQUIRE(1, 0, RATE_LIMITED, 0, 2, 0, SECOND, 2 * SECOND, 0),
        /* D a second later: 2 + 1 - 1 = 2 <= 2, TAT = 3 s; debt 2 s, remaining 0. */
        ACQUIRE(1, SECOND, RATE_OK, 1, 2, 0, 0, 2 * SECOND, 0),
        /* E at 1 s: 3 + 1 - 1 = 3 > 2, denied; retry 3 - 2 = 1 s, reset 3 - 1 = 2 s. */
        ACQUIRE(1, SECOND, RATE_LIMITED, 0, 2, 0, SECOND, 2 * SECOND, 0),
        /* At 3 s: tat = 3, 3 + 1 - 3 = 1 <= 2, TAT = 4 s; debt 1 s, remaining 1. */
        ACQUIRE(1, 3 * SECOND, RATE_OK, 1, 2, 1, 0, SECOND, 0),
        /* At 5 s the bucket has drained (TAT 4 < 5): full again. */
        ACQUIRE(0, 5 * SECOND, RATE_OK, 1, 2, 2, 0, 0, 0),
    };
    return run_gcra_steps(1, SECOND, 2, STEPS(steps));
}

/* ---- integer rounding ------------------------------------------------------------------ */

static int test_remaining_rounds_down(void) {
    /* L=1, P=1000 ns, B=2: T = 1000, tau = 2000. */
    static const struct step steps[] = {
        /* At 0: 1000 <= 2000, TAT = 1000; remaining floor((2000-1000)/1000) = 1. */
        ACQUIRE(1, 0, RATE_OK, 1, 2, 1, 0, 1000, 0),
        /* At 500: debt 500, remaining floor(1500/1000) = 1, reset 500. */
        ACQUIRE(0, 500, RATE_OK, 1, 2, 1, 0, 500, 0),
        /* n=2 at 500: 1000 + 2000 - 500 = 2500 > 2000, denied; retry 500; remaining 1 < 2. */
        ACQUIRE(2, 500, RATE_LIMITED, 0, 2, 1, 500, 500, 0),
        /* At 999: debt 1, remaining floor(1999/1000) = 1. At 1000: debt 0, remaining 2. */
        ACQUIRE(0, 999, RATE_OK, 1, 2, 1, 0, 1, 0),
        ACQUIRE(0, 1000, RATE_OK, 1, 2, 2, 0, 0, 0),
    };
    return run_gcra_steps(1, 1000, 2, STEPS(steps));
}

static int test_emission_interval_rounds_down(void) {
    /* L=3, P=10 ns, B=0 -> 3: T = floor(10/3) = 3 (not 3.33), tau = 9. */
    static const struct step steps[] = {
        /* Three at 0: TAT 3, 6, 9; remaining 2, 1, 0. */
        ACQUIRE(1, 0, RATE_OK, 1, 3, 2, 0, 3, 0),
        ACQUIRE(1, 0, RATE_OK, 1, 3, 1, 0, 6, 0),
        ACQUIRE(1, 0, RATE_OK, 1, 3, 0, 0, 9, 0),
        /* Fourth at 0: 9 + 3 - 0 = 12 > 9; retry 12 - 9 = 3. */
        ACQUIRE(1, 0, RATE_LIMITED, 0, 3, 0, 3, 9, 0),
        /* At 3: 9 + 3 - 3 = 9 <= 9, TAT = 12; debt 9. */
        ACQUIRE(1, 3, RATE_OK, 1, 3, 0, 0, 9, 0),
    };
    return run_gcra_steps(3, 10, 0, STEPS(steps));
}

/* ---- reserve ------------------------------------------------------------------------------ */

static int test_reserve_queues_with_exact_waits(void) {
    /* L=10, P=1 s, B=1: T = tau = 100 ms. W = 500 ms, all at t = 0 at first. The k-th
     * reserve: TAT = 100k ms <= 100 + 500 for k <= 6; wait = 100k - 100 ms; debt 100k ms,
     * so remaining 0 and reset 100k ms. */
    static const struct step steps[] = {
        RESERVE(1, 0, 500 * MS, RATE_OK, 1, 1, 0, 0, 100 * MS, 0),
        RESERVE(1, 0, 500 * MS, RATE_OK, 1, 1, 0, 0, 200 * MS, 100 * MS),
        RESERVE(1, 0, 500 * MS, RATE_OK, 1, 1, 0, 0, 300 * MS, 200 * MS),
        RESERVE(1, 0, 500 * MS, RATE_OK, 1, 1, 0, 0, 400 * MS, 300 * MS),
        RESERVE(1, 0, 500 * MS, RATE_OK, 1, 1, 0, 0, 500 * MS, 400 * MS),
        RESERVE(1, 0, 500 * MS, RATE_OK, 1, 1, 0, 0, 600 * MS, 500 * MS),
        /* 7th: 600 + 100 - 0 = 700 > 600, denied; retry 700 - 100 - 500 = 100 ms. */
        RESERVE(1, 0, 500 * MS, RATE_LIMITED, 0, 1, 0, 100 * MS, 600 * MS, 0),
        /* ... and admitted 100 ms later: 600 + 100 - 100 = 600 <= 600, TAT = 700 ms,
         * wait 600 - 100 = 500 ms; debt 600 ms. */
        RESERVE(1, 100 * MS, 500 * MS, RATE_OK, 1, 1, 0, 0, 600 * MS, 500 * MS),
        /* A plain acquire at 100 ms: 700 + 100 - 100 = 700 > 100; retry 600 ms. */
        ACQUIRE(1, 100 * MS, RATE_LIMITED, 0, 1, 0, 600 * MS, 600 * MS, 0),
        /* At 700 ms: 700 + 100 - 700 = 100 <= 100, TAT = 800 ms. */
        ACQUIRE(1, 700 * MS, RATE_OK, 1, 1, 0, 0, 100 * MS, 0),
    };
    return run_gcra_steps(10, SECOND, 1, STEPS(steps));
}

static int test_reserve_of_several_units(void) {
    /* L=4, P=1 s, B=2: T = 250 ms, tau = 500 ms. */
    static const struct step steps[] = {
        /* n=2 at 0, W=1 s: 0 + 500 - 0 = 500 <= 1500, TAT = 500, wait 0. */
        RESERVE(2, 0, SECOND, RATE_OK, 1, 2, 0, 0, 500 * MS, 0),
        /* n=2 at 0: 1000 <= 1500, TAT = 1000, wait 500. */
        RESERVE(2, 0, SECOND, RATE_OK, 1, 2, 0, 0, 1000 * MS, 500 * MS),
        /* n=2 at 0: 1500 <= 1500, TAT = 1500, wait 1000. */
        RESERVE(2, 0, SECOND, RATE_OK, 1, 2, 0, 0, 1500 * MS, 1000 * MS),
        /* n=2 at 0: 2000 > 1500; retry 2000 - 500 - 1000 = 500. */
        RESERVE(2, 0, SECOND, RATE_LIMITED, 0, 2, 0, 500 * MS, 1500 * MS, 0),
        /* n=1 at 0: 1750 > 1500; retry 1750 - 500 - 1000 = 250. */
        RESERVE(1, 0, SECOND, RATE_LIMITED, 0, 2, 0, 250 * MS, 1500 * MS, 0),
        /* Plain acquire n=1 at 0: 1750 > 500; retry 1750 - 500 = 1250. */
        ACQUIRE(1, 0, RATE_LIMITED, 0, 2, 0, 1250 * MS, 1500 * MS, 0),
        /* W=0 at 1000: 1500 + 250 - 1000 = 750 > 500; retry 250; debt 500. */
        RESERVE(1, 1000 * MS, 0, RATE_LIMITED, 0, 2, 0, 250 * MS, 500 * MS, 0),
        /* W=0 at 1250: 1750 - 1250 = 500 <= 500, TAT = 1750, wait 0; debt 500. */
        RESERVE(1, 1250 * MS, 0, RATE_OK, 1, 2, 0, 0, 500 * MS, 0),
        /* Query at 1500: debt 250, remaining floor(250/250) = 1. */
        ACQUIRE(0, 1500 * MS, RATE_OK, 1, 2, 1, 0, 250 * MS, 0),
    };
    return run_gcra_steps(4, SECOND, 2, STEPS(steps));
}

static int test_reserve_with_zero_wait_is_acquire(void) {
    /* L=2, P=1 s, B=0 -> 2: T = 500 ms, tau = 1 s. The same history on two limiters, one
     * by acquire_at and one by reserve_at with W = 0, must give identical decisions.
     * Outcomes by hand, TAT starting at 0:
     *   (0,1)     500 <= 1000 admit, TAT 500     (0,1)    1000 <= 1000 admit, TAT 1000
     *   (0,1)     1500 > 1000 deny               (300,1)  1500 - 300 = 1200 > 1000 deny
     *   (500,1)   1500 - 500 = 1000 admit, 1500  (500,2)  2500 - 500 = 2000 > 1000 deny
     *   (2000,2)  2000+1000-2000 = 1000 admit, TAT 3000   (2000,1) 3500-2000 = 1500 deny */
    static const struct {
        uint64_t t, n;
        int32_t status;
    } history[] = {
        {0, 1, RATE_OK},          {0, 1, RATE_OK},          {0, 1, RATE_LIMITED},
        {300 * MS, 1, RATE_LIMITED}, {500 * MS, 1, RATE_OK}, {500 * MS, 2, RATE_LIMITED},
        {2000 * MS, 2, RATE_OK},  {2000 * MS, 1, RATE_LIMITED},
    };
    rate_limiter *by_acquire = new_gcra(2, SECOND, 0);
    rate_limiter *by_reserve = new_gcra(2, SECOND, 0);
    size_t i;
    CHECK(by_acquire != NULL && by_reserve != NULL);
    for (i = 0; i < sizeof history / sizeof history[0]; i++) {
        rate_decision a, r;
        CHECK_STATUS(rate_limiter_acquire_at(by_acquire, history[i].n, history[i].t, &a),
                     history[i].status);
        CHECK_STATUS(rate_limiter_reserve_at(by_reserve, history[i].n, history[i].t, 0, &r),
                     history[i].status);
        if (check_decision(__FILE__, __LINE__, "reserve vs acquire", &r, &a)) {
            fprintf(stderr, "%s:%d: at step %zu\n", __FILE__, __LINE__, i);
            return 1;
        }
    }
    rate_limiter_free(by_acquire);
    rate_limiter_free(by_reserve);
    return 0;
}

/* ---- time ------------------------------------------------------------------------------- */

static int test_time_going_backwards(void) {
    /* L=1, P=1 s, B=2: T = 1 s, tau = 2 s. */
    static const struct step steps[] = {
        /* At 10 s: 10 + 1 - 10 = 1 <= 2, TAT = 11 s; remaining 1. */
        ACQUIRE(1, 10 * SECOND, RATE_OK, 1, 2, 1, 0, SECOND, 0),
        /* Back to 5 s: 11 + 1 - 5 = 7 > 2; retry 7 - 2 = 5 s; debt 6 s > tau, remaining 0. */
        ACQUIRE(1, 5 * SECOND, RATE_LIMITED, 0, 2, 0, 5 * SECOND, 6 * SECOND, 0),
        ACQUIRE(0, 5 * SECOND, RATE_OK, 1, 2, 0, 0, 6 * SECOND, 0),
        /* At 10 s again: 11 + 1 - 10 = 2 <= 2, TAT = 12 s. */
        ACQUIRE(1, 10 * SECOND, RATE_OK, 1, 2, 0, 0, 2 * SECOND, 0),
        /* At 0: 12 + 1 - 0 = 13 > 2; retry 11 s; reset 12 s. No wrap, no panic. */
        ACQUIRE(1, 0, RATE_LIMITED, 0, 2, 0, 11 * SECOND, 12 * SECOND, 0),
        /* Reserve at 9 s, W = 1 s: 13 - 9 = 4 > 3; retry 4 - 3 = 1 s; reset 3 s. */
        RESERVE(1, 9 * SECOND, SECOND, RATE_LIMITED, 0, 2, 0, SECOND, 3 * SECOND, 0),
        /* Reserve at 10 s, W = 1 s: 13 - 10 = 3 <= 3, TAT = 13 s, wait 3 - 2 = 1 s. */
        RESERVE(1, 10 * SECOND, SECOND, RATE_OK, 1, 2, 0, 0, 3 * SECOND, SECOND),
        /* Nothing earlier than the latest time seen (10 s) admits more than 10 s would:
         * with TAT = 13 s, n=1 at t needs 14 - t <= 2, i.e. t >= 12 s. */
        ACQUIRE_NO_OUT(1, 0, RATE_LIMITED),
        ACQUIRE_NO_OUT(1, 1, RATE_LIMITED),
        ACQUIRE_NO_OUT(1, 5 * SECOND, RATE_LIMITED),
        ACQUIRE_NO_OUT(1, 10 * SECOND, RATE_LIMITED),
        ACQUIRE_NO_OUT(1, 12 * SECOND - 1, RATE_LIMITED),
        ACQUIRE(1, 12 * SECOND, RATE_OK, 1, 2, 0, 0, 2 * SECOND, 0),
    };
    return run_gcra_steps(1, SECOND, 2, STEPS(steps));
}

/* M = 2^64-1, END = M-256. The TAT is one u64 (docs/decision.md) of at most END, so an admission
 * whose new TAT would pass END cannot be recorded; recording END instead would understate the
 * TAT and admit more than GCRA allows. Such a request is never admitted on the timeline, so its
 * retry_after is "never" (M, docs/decision.md, saturation); remaining counts only units whose TAT
 * fits, and a bucket that can never again be full reports reset_after M. */
static int test_end_of_the_timeline(void) {
    /* L=1, P=1000, B=1: T = tau = 1000. Fresh at t = M: one unit needs TAT M + 1000. */
    static const struct step at_the_end[] = {
        ACQUIRE(0, MAX, RATE_OK, 1, 1, 0, 0, MAX, 0),
        ACQUIRE(1, MAX, RATE_LIMITED, 0, 1, 0, MAX, MAX, 0),
        RESERVE(1, MAX, MAX, RATE_LIMITED, 0, 1, 0, MAX, MAX, 0),
        ACQUIRE_NO_OUT(1, MAX, RATE_LIMITED),
    };
    /* Same config, fresh at t = END - 1000: TAT = END fits, admitted; another unit would
     * need END + 1000, so remaining 0 and the bucket is never full again (reset M). */
    static const struct step one_before[] = {
        ACQUIRE(1, END - 1000, RATE_OK, 1, 1, 0, 0, MAX, 0),
        ACQUIRE(1, END - 1000, RATE_LIMITED, 0, 1, 0, MAX, MAX, 0),
        ACQUIRE(1, MAX, RATE_LIMITED, 0, 1, 0, MAX, MAX, 0),
    };
    /* L=1, P=1000, B=2: T = 1000, tau = 2000; fresh at t = END - 2000, where exactly B
     * units fit: TAT END - 2000 + 2*1000 = END. */
    static const struct step two_before[] = {
        ACQUIRE(0, END - 2000, RATE_OK, 1, 2, 2, 0, 0, 0),
        /* n=1: TAT = END - 1000; one more fits (TAT END); full again would need
         * t >= END - 1000 and t + 2000 <= END: never. */
        ACQUIRE(1, END - 2000, RATE_OK, 1, 2, 1, 0, MAX, 0),
        /* n=2 would need TAT END + 1000: never. */
        ACQUIRE(2, END - 2000, RATE_LIMITED, 0, 2, 1, MAX, MAX, 0),
        ACQUIRE(1, END - 2000, RATE_OK, 1, 2, 0, 0, MAX, 0),
    };
    /* Reserve with W = M, fresh at t = END - 3000, L=1, P=1000, B=1 (T = tau = 1000):
     * TATs END-2000, END-1000, END with waits 0, 1000, 2000. reset: full at t = TAT needs
     * TAT + 1000 <= END, true for the first two (reset 1000, 2000), never for the third. */
    static const struct step queued_to_the_end[] = {
        RESERVE(1, END - 3000, MAX, RATE_OK, 1, 1, 0, 0, 1000, 0),
        RESERVE(1, END - 3000, MAX, RATE_OK, 1, 1, 0, 0, 2000, 1000),
        RESERVE(1, END - 3000, MAX, RATE_OK, 1, 1, 0, 0, MAX, 2000),
        RESERVE(1, END - 3000, MAX, RATE_LIMITED, 0, 1, 0, MAX, MAX, 0),
    };
    return run_gcra_steps(1, 1000, 1, STEPS(at_the_end)) ||
           run_gcra_steps(1, 1000, 1, STEPS(one_before)) ||
           run_gcra_steps(1, 1000, 2, STEPS(two_before)) ||
           run_gcra_steps(1, 1000, 1, STEPS(queued_to_the_end));
}

static int test_huge_configs_and_waits(void) {
    /* L=1, P=END, B=1: T = tau = END. At 0: 0 + END - 0 = END <= END, TAT = END; debt END.
     * A second unit needs TAT 2*END: never. At t = M: debt 0 but a unit needs TAT M + END:
     * remaining 0. */
    static const struct step longest_period[] = {
        ACQUIRE(1, 0, RATE_OK, 1, 1, 0, 0, MAX, 0),
        ACQUIRE(1, 0, RATE_LIMITED, 0, 1, 0, MAX, MAX, 0),
        ACQUIRE(0, MAX, RATE_OK, 1, 1, 0, 0, MAX, 0),
    };
    /* L=END, P=END, B=0 -> END: T = 1, tau = END. n = END at 0: TAT = END. */
    static const struct step largest_burst[] = {
        ACQUIRE(END, 0, RATE_OK, 1, END, 0, 0, MAX, 0),
        ACQUIRE(1, 0, RATE_LIMITED, 0, END, 0, MAX, MAX, 0),
    };
    /* Same, fresh at t = 1: only END - 1 units fit (TAT 1 + m <= END), so n = END is never
     * admitted and the bucket never shows END remaining. */
    static const struct step largest_burst_at_1[] = {
        ACQUIRE(END, 1, RATE_LIMITED, 0, END, END - 1, MAX, MAX, 0),
        ACQUIRE(END - 1, 1, RATE_OK, 1, END, 0, 0, MAX, 0),
    };
    /* W = M from t = 0, L=1, P=1000, B=1 (T = tau = 1000): nothing is too far ahead.
     * k-th reserve: TAT 1000k, wait 1000(k-1). A plain acquire then: TAT 3000,
     * 4000 - 0 > 1000, retry 4000 - 1000 = 3000. */
    static const struct step longest_wait[] = {
        RESERVE(1, 0, MAX, RATE_OK, 1, 1, 0, 0, 1000, 0),
        RESERVE(1, 0, MAX, RATE_OK, 1, 1, 0, 0, 2000, 1000),
        RESERVE(1, 0, MAX, RATE_OK, 1, 1, 0, 0, 3000, 2000),
        ACQUIRE(1, 0, RATE_LIMITED, 0, 1, 0, 3000, 3000, 0),
    };
    return run_gcra_steps(1, END, 1, STEPS(longest_period)) ||
           run_gcra_steps(END, END, 0, STEPS(largest_burst)) ||
           run_gcra_steps(END, END, 0, STEPS(largest_burst_at_1)) ||
           run_gcra_steps(1, 1000, 1, STEPS(longest_wait));
}

/* ---- the library clock -------------------------------------------------------------------- */

static int test_acquire_on_the_library_clock(void) {
    /* L=1, P=1 h, B=1: T = tau = 1 h. The first acquire at t0 is admitted with TAT =
     * t0 + 1 h: debt exactly 1 h. The second at t1 >= t0 is denied with retry = reset =
     * t0 + 1 h - t1, where before <= t0 <= t1 <= after, each give or take the library
     * clock's bound, bounds t1 - t0. */
    rate_limiter *l = new_gcra(1, HOUR, 1);
    rate_decision first, second;
    uint64_t before, after;
    CHECK(l != NULL);
    before = monotonic_ns();
    CHECK_STATUS(rate_limiter_acquire(l, 1, &first), RATE_OK);
    CHECK_STATUS(rate_limiter_acquire(l, 1, &second), RATE_LIMITED);
    after = monotonic_ns();
    CHECK_DECISION(first, 1, 1, 0, 0, HOUR, 0);
    CHECK_EQ_U64(second.allowed, 0);
    CHECK_EQ_U64(second.limit, 1);
    CHECK_EQ_U64(second.remaining, 0);
    CHECK_EQ_U64(second.wait_ns, 0);
    CHECK_EQ_U64(second.reset_after_ns, second.retry_after_ns);
    CHECK(second.retry_after_ns <= HOUR);
    CHECK(second.retry_after_ns + 2 * CLOCK_BOUND_NS >= HOUR - (after - before));
    /* The _at functions on rate_now_ns's timeline see the same TAT. */
    CHECK_STATUS(rate_limiter_acquire_at(l, 1, rate_now_ns(), NULL), RATE_LIMITED);
    rate_limiter_free(l);
    return 0;
}

static int test_acquire_without_out_on_the_library_clock(void) {
    /* L=1, P=1 h, B=2: T = 1 h, tau = 2 h. With out == NULL the library may decide on its
     * coarse clock; the outcomes must be those of the precise one: two admitted, then
     * denied (for at least an hour). */
    rate_limiter *l = new_gcra(1, HOUR, 2);
    rate_decision d;
    uint64_t before, after;
    CHECK(l != NULL);
    before = monotonic_ns();
    CHECK_STATUS(rate_limiter_acquire(l, 1, NULL), RATE_OK);
    CHECK_STATUS(rate_limiter_acquire(l, 1, NULL), RATE_OK);
    CHECK_STATUS(rate_limiter_acquire(l, 1, NULL), RATE_LIMITED);
    CHECK_STATUS(rate_limiter_acquire(l, 0, NULL), RATE_OK);
    /* The first at t0 >= before left TAT t0 + 1 h; the second (t0 + 1 h > its time)
     * TAT t0 + 2 h. A request at t <= after: retry = t0 + 2h + 1h - t - 2h = 1 h - (t - t0),
     * reset = t0 + 2 h - t = retry + 1 h. */
    CHECK_STATUS(rate_limiter_acquire(l, 1, &d), RATE_LIMITED);
    after = monotonic_ns();
    CHECK_EQ_U64(d.allowed, 0);
    CHECK_EQ_U64(d.limit, 2);
    CHECK_EQ_U64(d.remaining, 0);
    CHECK_EQ_U64(d.wait_ns, 0);
    CHECK(d.retry_after_ns <= HOUR);
    CHECK(d.retry_after_ns + 2 * CLOCK_BOUND_NS >= HOUR - (after - before));
    CHECK_EQ_U64(d.reset_after_ns, d.retry_after_ns + HOUR);
    rate_limiter_free(l);
    return 0;
}

/* ---- threads ------------------------------------------------------------------------------ */

#define THREADS 4

/* One hammer run: every thread makes `attempts` requests of 1 unit at the frozen time
 * `now_ns` on one limiter of burst B and emission interval T. */
struct hammer_config {
    rate_limiter *limiter;
    int reserve; /* 0: acquire_at; 1: reserve_at with max_wait_ns */
    uint64_t now_ns, max_wait_ns, attempts;
    uint64_t burst, emission_interval;
    uint64_t final_debt; /* TAT - now once no more can be admitted */
};

struct hammer {
    const struct hammer_config *config;
    pthread_barrier_t *start;
    uint64_t admitted;
    int bad_decisions; /* statuses and decisions that break the rules below */
    uint64_t *seen;    /* for admitted decisions: a count per value of `key` below */
    size_t seen_len;
};

/* Whether a decision made during a hammer run is possible at all. Admitted: the k-th
 * admission leaves TAT = now + k*T, so reset = k*T, wait = max(0, k*T - B*T) and
 * remaining = max(0, B - k); hence reset - wait = (B - remaining)*T both for acquire
 * (wait 0) and for the B = 1 reserve run (remaining 0). Denied: only once the bucket is
 * exhausted, so reset = the final debt, remaining 0, retry = T (one more unit's worth). */
static int hammer_decision_ok(const struct hammer_config *c, int32_t status,
                              const rate_decision *d) {
    if (d->limit != c->burst)
        return 0;
    if (status == RATE_OK)
        return d->allowed == 1 && d->retry_after_ns == 0 && d->remaining < c->burst &&
               d->reset_after_ns - d->wait_ns == (c->burst - d->remaining) * c->emission_interval;
    return status == RATE_LIMITED && d->allowed == 0 && d->remaining == 0 &&
           d->retry_after_ns == c->emission_interval && d->reset_after_ns == c->final_debt &&
           d->wait_ns == 0;
}

/* The value each admitted decision is filed under: for acquire, `remaining`, which the
 * k-th admission at a frozen time leaves at B - k; for reserve, `wait_ns` in units of T,
 * which the k-th admission leaves at k - 1. */
static uint64_t hammer_key(const struct hammer_config *c, const rate_decision *d) {
    return c->reserve ? d->wait_ns / c->emission_interval : d->remaining;
}

static void *hammer_thread(void *arg) {
    struct hammer *h = arg;
    const struct hammer_config *c = h->config;
    uint64_t i;
    pthread_barrier_wait(h->start);
    for (i = 0; i < c->attempts; i++) {
        rate_decision d;
        int32_t status = c->reserve
                             ? rate_limiter_reserve_at(c->limiter, 1, c->now_ns, c->max_wait_ns, &d)
                             : rate_limiter_acquire_at(c->limiter, 1, c->now_ns, &d);
        if (!hammer_decision_ok(c, status, &d)) {
            h->bad_decisions++;
        } else if (status == RATE_OK) {
            uint64_t key = hammer_key(c, &d);
            h->admitted++;
            if (key < h->seen_len)
                h->seen[key]++;
            else
                h->bad_decisions++;
        }
    }
    return NULL;
}

/* Runs THREADS threads on one limiter; returns the total admitted, or MAX if a thread
 * saw an impossible status or decision. Adds each admission's key to seen[0..seen_len). */
static uint64_t run_hammer(const struct hammer_config *config, uint64_t *seen,
                           size_t seen_len) {
    pthread_t threads[THREADS];
    struct hammer work[THREADS];
    pthread_barrier_t start;
    uint64_t admitted = 0;
    int failed = 0;
    size_t i, j;
    if (pthread_barrier_init(&start, NULL, THREADS) != 0)
        return MAX;
    for (i = 0; i < THREADS; i++) {
        work[i].config = config;
        work[i].start = &start;
        work[i].admitted = 0;
        work[i].bad_decisions = 0;
        work[i].seen = calloc(seen_len, sizeof(uint64_t));
        work[i].seen_len = seen_len;
        if (work[i].seen == NULL)
            abort();
        if (pthread_create(&threads[i], NULL, hammer_thread, &work[i]) != 0)
            abort(); /* the barrier would never open */
    }
    for (i = 0; i < THREADS; i++) {
        if (pthread_join(threads[i], NULL) != 0)
            failed = 1;
        admitted += work[i].admitted;
        failed |= work[i].bad_decisions != 0;
        for (j = 0; j < seen_len; j++)
            seen[j] += work[i].seen[j];
        free(work[i].seen);
    }
    pthread_barrier_destroy(&start);
    return failed ? MAX : admitted;
}

static int test_four_threads_admit_exactly_the_burst(void) {
    /* L=1000, P=1 s, B=0 -> 1000: T = 1 ms, tau = 1 s, frozen at t = 42 s. 4 threads try
     * 1000 units each. The k-th admission leaves TAT = t + k ms <= t + 1 s, so exactly
     * k = 1..1000 are admitted, each leaving remaining B - k: every value 0..999 once. */
    enum { BURST = 1000 };
    uint64_t seen[BURST] = {0};
    rate_limiter *l = new_gcra(BURST, SECOND, 0);
    /* Denials see TAT = t + 1 s: debt 1 s. */
    const struct hammer_config config = {l, 0, 42 * SECOND, 0, BURST, BURST, MS, SECOND};
    rate_decision d;
    size_t i;
    CHECK(l != NULL);
    CHECK_EQ_U64(run_hammer(&config, seen, BURST), BURST);
    for (i = 0; i < BURST; i++)
        CHECK_EQ_U64(seen[i], 1);
    /* Now TAT = 43 s: 43 + 0.001 - 42 - 1 = 1 ms to wait. */
    CHECK_STATUS(rate_limiter_acquire_at(l, 1, 42 * SECOND, &d), RATE_LIMITED);
    CHECK_DECISION(d, 0, BURST, 0, MS, SECOND, 0);
    rate_limiter_free(l);
    return 0;
}

static int test_four_threads_reserve_each_slot_once(void) {
    /* L=1000, P=1 s, B=1: T = tau = 1 ms; W = 999 ms, frozen at t = 7 s. 4 threads try
     * 500 reserves each (2000). The k-th admission: TAT = t + k ms, admitted iff
     * k ms <= 1 + 999 ms, so k = 1..1000, with wait (k - 1) ms: each of 0..999 ms once. */
    enum { SLOTS = 1000 };
    uint64_t seen[SLOTS] = {0};
    rate_limiter *l = new_gcra(1000, SECOND, 1);
    /* Denials see TAT = t + 1000 ms: debt 1 s. */
    const struct hammer_config config = {l, 1, 7 * SECOND, 999 * MS, 500, 1, MS, SECOND};
    rate_decision d;
    size_t i;
    CHECK(l != NULL);
    CHECK_EQ_U64(run_hammer(&config, seen, SLOTS), SLOTS);
    for (i = 0; i < SLOTS; i++)
        CHECK_EQ_U64(seen[i], 1);
    /* TAT = 8 s: a reserve at 7 s needs 8 + 0.001 - 7 = 1001 ms <= 1000 ms; retry 1 ms. */
    CHECK_STATUS(rate_limiter_reserve_at(l, 1, 7 * SECOND, 999 * MS, &d), RATE_LIMITED);
    CHECK_DECISION(d, 0, 1, 0, MS, SECOND, 0);
    rate_limiter_free(l);
    return 0;
}

/* 10 a second (T = 100 ms): 6 taken at 0, 4 tokens left. Tightened at 0 to 1 a second,
 * burst 2: the tokens are capped at 2 (TAT 0), then 1 per second. */
static int test_set_config(void) {
    rate_config config = make_config(RATE_GCRA, 10, SECOND, 0);
    rate_limiter *limiter = NULL;
    rate_decision d;
    CHECK(rate_limiter_new(&config, &limiter) == RATE_OK);
    CHECK(rate_limiter_acquire_at(limiter, 6, 0, NULL) == RATE_OK);
    config = make_config(RATE_GCRA, 1, SECOND, 2);
    CHECK(rate_limiter_set_config_at(limiter, &config, 0) == RATE_OK);
    CHECK(rate_limiter_acquire_at(limiter, 2, 0, &d) == RATE_OK);
    CHECK_EQ_U64(d.limit, 2);
    CHECK(rate_limiter_acquire_at(limiter, 1, 0, &d) == RATE_LIMITED);
    CHECK_EQ_U64(d.retry_after_ns, SECOND);
    /* Refused, changing nothing: another algorithm, an invalid rule, NULL. */
    config = make_config(RATE_FIXED_WINDOW, 2, SECOND, 0);
    CHECK(rate_limiter_set_config(limiter, &config) == RATE_E_INVALID_CONFIG);
    config = make_config(RATE_GCRA, 0, SECOND, 0);
    CHECK(rate_limiter_set_config(limiter, &config) == RATE_E_INVALID_CONFIG);
    config.algorithm = 99;
    CHECK(rate_limiter_set_config(limiter, &config) == RATE_E_INVALID_CONFIG);
    CHECK(rate_limiter_set_config(limiter, NULL) == RATE_E_NULL);
    CHECK(rate_limiter_set_config(NULL, &config) == RATE_E_NULL);
    /* Still 1 a second, burst 2: TAT 2 s, so 1 unit back at 1 s. */
    CHECK(rate_limiter_acquire_at(limiter, 0, SECOND, &d) == RATE_OK);
    CHECK_EQ_U64(d.limit, 2);
    CHECK_EQ_U64(d.remaining, 1);
    rate_limiter_free(limiter);
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_set_config),
        TEST_CASE(test_version_matches_cargo_toml),
        TEST_CASE(test_status_codes_have_the_contract_numbers),
        TEST_CASE(test_status_str_describes_every_code),
        TEST_CASE(test_now_ns_is_clock_monotonic),
        TEST_CASE(test_new_rejects_null_pointers),
        TEST_CASE(test_new_rejects_invalid_configs),
        TEST_CASE(test_new_accepts_configs_at_the_edge),
        TEST_CASE(test_free_null_is_a_no_op),
        TEST_CASE(test_null_handle_is_e_null),
        TEST_CASE(test_cost_above_burst_is_insufficient_capacity),
        TEST_CASE(test_out_may_be_null),
        TEST_CASE(test_out_null_gives_the_outcome_of_the_same_call_with_out),
        TEST_CASE(test_query_is_admitted_and_changes_nothing),
        TEST_CASE(test_seed_bob_and_alice),
        TEST_CASE(test_seed_one_per_second_capacity_two),
        TEST_CASE(test_remaining_rounds_down),
        TEST_CASE(test_emission_interval_rounds_down),
        TEST_CASE(test_reserve_queues_with_exact_waits),
        TEST_CASE(test_reserve_of_several_units),
        TEST_CASE(test_reserve_with_zero_wait_is_acquire),
        TEST_CASE(test_time_going_backwards),
        TEST_CASE(test_end_of_the_timeline),
        TEST_CASE(test_huge_configs_and_waits),
        TEST_CASE(test_acquire_on_the_library_clock),
        TEST_CASE(test_acquire_without_out_on_the_library_clock),
        TEST_CASE(test_four_threads_admit_exactly_the_burst),
        TEST_CASE(test_four_threads_reserve_each_slot_once),
    };
    return run_tests("test_limiter", cases, sizeof cases / sizeof cases[0]);
}
