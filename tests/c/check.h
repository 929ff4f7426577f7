/* Tiny assertion macros and a driver shared by the C tests in tests/c/.
 *
 * A test case is `static int test_x(void)` returning 0 on success. A failed CHECK prints
 * `file:line: ...` to stderr and returns 1 from the test case, so the driver can go on
 * with the next case and report every failing one. `main` calls `run_tests`, whose
 * result is the process's exit status (non-zero when any case failed).
 */
#ifndef RATE_TESTS_CHECK_H
#define RATE_TESTS_CHECK_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rate.h"

#define MS UINT64_C(1000000)
#define SECOND UINT64_C(1000000000)

/* Fails the current test case unless `cond` holds. */
#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                               \
        }                                                                           \
    } while (0)

/* Fails the current test case unless the two unsigned integers are equal. */
#define CHECK_EQ_U64(actual, expected)                                                       \
    do {                                                                                     \
        if (check_eq_u64(__FILE__, __LINE__, #actual, (uint64_t)(actual), (uint64_t)(expected))) \
            return 1;                                                                        \
    } while (0)

/* Fails the current test case unless the two NUL-terminated strings are equal. */
#define CHECK_EQ_STR(actual, expected)                                                   \
    do {                                                                                 \
        if (check_eq_str(__FILE__, __LINE__, #actual, (actual), (expected)))             \
            return 1;                                                                    \
    } while (0)

/* Fails the current test case unless a call returned the expected status code. */
#define CHECK_STATUS(call, expected)                                                   \
    do {                                                                               \
        if (check_status(__FILE__, __LINE__, #call, (int32_t)(call), (int32_t)(expected))) \
            return 1;                                                                  \
    } while (0)

/* Fails the current test case unless every field of the decision `d` is as expected. */
#define CHECK_DECISION(d, allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns) \
    do {                                                                                  \
        const rate_decision expected_ = {(allowed), (limit), (remaining), (retry_after_ns),  \
                                         (reset_after_ns), (wait_ns)};                    \
        if (check_decision(__FILE__, __LINE__, #d, &(d), &expected_))                     \
            return 1;                                                                     \
    } while (0)

static inline int check_eq_u64(const char *file, int line, const char *what, uint64_t actual,
                               uint64_t expected) {
    if (actual == expected)
        return 0;
    fprintf(stderr, "%s:%d: %s is %" PRIu64 ", expected %" PRIu64 "\n", file, line, what, actual,
            expected);
    return 1;
}

static inline int check_eq_str(const char *file, int line, const char *what, const char *actual,
                               const char *expected) {
    if (actual != NULL && strcmp(actual, expected) == 0)
        return 0;
    fprintf(stderr, "%s:%d: %s is \"%s\", expected \"%s\"\n", file, line, what,
            actual != NULL ? actual : "(NULL)", expected);
    return 1;
}

static inline int check_status(const char *file, int line, const char *call, int32_t actual,
                               int32_t expected) {
    if (actual == expected)
        return 0;
    fprintf(stderr, "%s:%d: %s returned %" PRId32 " (%s), expected %" PRId32 " (%s)\n", file,
            line, call, actual, rate_status_str(actual), expected, rate_status_str(expected));
    return 1;
}

static inline int check_decision(const char *file, int line, const char *name,
                                 const rate_decision *actual, const rate_decision *expected) {
    int failed = 0;
    failed |= check_eq_u64(file, line, "allowed", actual->allowed, expected->allowed);
    failed |= check_eq_u64(file, line, "limit", actual->limit, expected->limit);
    failed |= check_eq_u64(file, line, "remaining", actual->remaining, expected->remaining);
    failed |= check_eq_u64(file, line, "retry_after_ns", actual->retry_after_ns,
                           expected->retry_after_ns);
    failed |= check_eq_u64(file, line, "reset_after_ns", actual->reset_after_ns,
                           expected->reset_after_ns);
    failed |= check_eq_u64(file, line, "wait_ns", actual->wait_ns, expected->wait_ns);
    if (failed)
        fprintf(stderr, "%s:%d: ^ in decision %s\n", file, line, name);
    return failed;
}

/* A configuration as one value, for arguments and initializers. */
static inline rate_config make_config(uint32_t algorithm, uint64_t limit, uint64_t period_ns,
                                      uint64_t burst) {
    rate_config config;
    memset(&config, 0, sizeof config);
    config.algorithm = algorithm;
    config.limit = limit;
    config.period_ns = period_ns;
    config.burst = burst;
    return config;
}

/* Fills a decision with a pattern no call writes, to prove that an error leaves it alone. */
static inline void fill_sentinel(rate_decision *d) {
    memset(d, 0xA5, sizeof *d);
}

/* Whether `d` still holds the pattern of fill_sentinel. */
static inline int is_sentinel(const rate_decision *d) {
    rate_decision sentinel;
    fill_sentinel(&sentinel);
    return memcmp(d, &sentinel, sizeof *d) == 0;
}

/* ---- scripted scenarios: one limiter, a list of calls and what each must return ---- */

enum step_call { STEP_ACQUIRE_AT, STEP_RESERVE_AT };

struct step {
    const char *file; /* where the step is written, for the failure message */
    int line;
    enum step_call call;
    uint64_t n, now_ns, max_wait_ns;
    int with_out; /* 0: pass out = NULL and check the status only */
    int32_t status;
    rate_decision expected; /* {allowed, limit, remaining, retry_after, reset_after, wait} */
};

/* rate_limiter_acquire_at(l, n, now, &d) returns `status` and writes the decision `...`. */
#define ACQUIRE(n, now, status, ...) \
    {__FILE__, __LINE__, STEP_ACQUIRE_AT, (n), (now), 0, 1, (status), {__VA_ARGS__}}
/* rate_limiter_reserve_at(l, n, now, max_wait, &d) likewise. */
#define RESERVE(n, now, max_wait, status, ...) \
    {__FILE__, __LINE__, STEP_RESERVE_AT, (n), (now), (max_wait), 1, (status), {__VA_ARGS__}}
/* The same calls with out = NULL. */
#define ACQUIRE_NO_OUT(n, now, status) \
    {__FILE__, __LINE__, STEP_ACQUIRE_AT, (n), (now), 0, 0, (status), {0, 0, 0, 0, 0, 0}}
#define RESERVE_NO_OUT(n, now, max_wait, status) \
    {__FILE__, __LINE__, STEP_RESERVE_AT, (n), (now), (max_wait), 0, (status), {0, 0, 0, 0, 0, 0}}

/* Runs the steps in order on `limiter`; 0 if every one returned what it says. */
static inline int run_steps(rate_limiter *limiter, const struct step *steps, size_t count) {
    size_t i;
    for (i = 0; i < count; i++) {
        const struct step *s = &steps[i];
        rate_decision d;
        rate_decision *out = s->with_out ? &d : NULL;
        int32_t status = s->call == STEP_RESERVE_AT
                             ? rate_limiter_reserve_at(limiter, s->n, s->now_ns, s->max_wait_ns, out)
                             : rate_limiter_acquire_at(limiter, s->n, s->now_ns, out);
        const char *call = s->call == STEP_RESERVE_AT ? "reserve" : "acquire";
        if (check_status(s->file, s->line, call, status, s->status))
            return 1;
        if (s->with_out && check_decision(s->file, s->line, call, &d, &s->expected))
            return 1;
    }
    return 0;
}

/* Runs the steps on a fresh GCRA limiter of limit L, period P, burst B. */
static inline int run_gcra_steps(uint64_t limit, uint64_t period_ns, uint64_t burst,
                                 const struct step *steps, size_t count) {
    rate_config config = make_config(RATE_GCRA, limit, period_ns, burst);
    rate_limiter *limiter = NULL;
    int failed;
    if (rate_limiter_new(&config, &limiter) != RATE_OK) {
        fprintf(stderr, "%s:%d: rate_limiter_new failed\n", steps[0].file, steps[0].line);
        return 1;
    }
    failed = run_steps(limiter, steps, count);
    rate_limiter_free(limiter);
    return failed;
}

#define STEPS(steps) (steps), sizeof(steps) / sizeof((steps)[0])

struct test_case {
    const char *name;
    int (*run)(void);
};

#define TEST_CASE(fn) {#fn, fn}

/* Whether `name` is one of the comma-separated names in $RATE_TEST_SKIP: cases a harness
 * cannot run faithfully (scripts/dist-check.sh, under qemu-user), skipped and said so. */
static inline int skipped_by_environment(const char *name) {
    const char *list = getenv("RATE_TEST_SKIP");
    size_t length = strlen(name);
    while (list != NULL && *list != '\0') {
        const char *end = strchr(list, ',');
        size_t item = end != NULL ? (size_t)(end - list) : strlen(list);
        if (item == length && strncmp(list, name, length) == 0)
            return 1;
        list = end != NULL ? end + 1 : NULL;
    }
    return 0;
}

/* Runs every case, printing each outcome; returns the number that failed (capped at 1 for
 * use as an exit status). */
static inline int run_tests(const char *suite, const struct test_case *cases, size_t count) {
    size_t failed = 0, skipped = 0;
    size_t i;
    for (i = 0; i < count; i++) {
        int result;
        if (skipped_by_environment(cases[i].name)) {
            printf("skipped %s (RATE_TEST_SKIP)\n", cases[i].name);
            skipped++;
            continue;
        }
        result = cases[i].run();
        printf("%s %s\n", result == 0 ? "ok    " : "FAILED", cases[i].name);
        fflush(stdout);
        if (result != 0)
            failed++;
    }
    printf("%s: %zu passed, %zu failed\n", suite, count - failed - skipped, failed);
    return failed == 0 ? 0 : 1;
}

#endif /* RATE_TESTS_CHECK_H */
