/* rate_limiter_reset, rate_keyed_reset and rate_keyed_read_stats from C: a reset limiter
 * of each algorithm decides as a new one, a reset key as a new key, a key not in the table
 * stays out, refusals are counted (in a shared table, across processes), and every bad
 * pointer is RATE_E_NULL. Run by `cargo test` (tests/c_api.rs) and by scripts/c-tests.sh
 * under valgrind and ASan/UBSan.
 *
 * Every expected value is worked out by hand from the contract (include/rate.h).
 * Decisions are written {allowed, limit, remaining, retry_after_ns, reset_after_ns,
 * wait_ns}.
 *
 * Build: cc -std=c99 -Wall -Wextra -Wpedantic -Werror -Iinclude tests/c/test_reset.c -lrate
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include "shared.h"

/* One algorithm's case: `fill` units at `fill_at` use it up, so a unit at `at` is
 * denied; after a reset `n` units at `at` are admitted as by a new limiter, with
 * `remaining` and `reset_after_ns`. */
struct reset_case {
    rate_config config;
    uint64_t fill, fill_at, n, at, remaining, reset_after_ns;
};

static int test_a_reset_limiter_decides_as_a_new_one(void) {
    const struct reset_case cases[] = {
        /* GCRA 1/s, burst 2: TAT 0.5 + 1 s after the reset, so 1 left, full 1 s later. */
        {make_config(RATE_GCRA, 1, SECOND, 2), 2, 0, 1, 500 * MS, 1, SECOND},
        /* Fixed window 2/min: 1 of 2 in the window that ends at 60 s. */
        {make_config(RATE_FIXED_WINDOW, 2, 60 * SECOND, 0), 2, 24 * SECOND, 1, 36 * SECOND, 1,
         24 * SECOND},
        /* Sliding window 10/min, 10 at 30 s: at 65 s window 0 weighs 10·55/60 = 9.17, so 1
         * is denied; after the reset all 10 fit, both counts 0 from window 3 (180 s). */
        {make_config(RATE_SLIDING_WINDOW, 10, 60 * SECOND, 0), 10, 30 * SECOND, 10, 65 * SECOND,
         0, 115 * SECOND},
        /* Sliding log 2/min, full at 10 s: after the reset 2 fit at 20 s, gone at 80 s. */
        {make_config(RATE_SLIDING_LOG, 2, 60 * SECOND, 0), 2, 10 * SECOND, 2, 20 * SECOND, 0,
         60 * SECOND},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct reset_case *c = &cases[i];
        rate_limiter *limiter = NULL;
        rate_decision d;
        int failed = 0;
        CHECK_STATUS(rate_limiter_new(&c->config, &limiter), RATE_OK);
        failed |= rate_limiter_acquire_at(limiter, c->fill, c->fill_at, NULL) != RATE_OK;
        failed |= rate_limiter_acquire_at(limiter, 1, c->at, NULL) != RATE_LIMITED;
        failed |= rate_limiter_reset(limiter) != RATE_OK;
        failed |= rate_limiter_acquire_at(limiter, c->n, c->at, &d) != RATE_OK;
        rate_limiter_free(limiter);
        if (failed)
            fprintf(stderr, "case %zu (algorithm %u)\n", i, (unsigned)c->config.algorithm);
        CHECK(!failed);
        /* The decision's limit: GCRA's burst (0 means the limit), the windows' limit. */
        CHECK_DECISION(d, 1, c->config.burst != 0 ? c->config.burst : c->config.limit,
                       c->remaining, 0, c->reset_after_ns, 0);
    }
    return 0;
}

static int32_t acquire_key(rate_keyed *table, const char *key, uint64_t n, uint64_t now_ns,
                           rate_decision *out) {
    return rate_keyed_acquire_at(table, (const uint8_t *)key, strlen(key), n, now_ns, out);
}

static int32_t reset_key(rate_keyed *table, const char *key) {
    return rate_keyed_reset(table, (const uint8_t *)key, strlen(key));
}

/* Checks a table's statistics at `now_ns` and frees it, pass or fail. */
static int check_stats(rate_keyed *table, uint64_t now_ns, uint64_t capacity, uint64_t max_keys,
                       uint64_t live_keys, uint64_t table_full) {
    rate_keyed_stats stats;
    int32_t status = rate_keyed_read_stats_at(table, now_ns, &stats);
    rate_keyed_free(table);
    CHECK_STATUS(status, RATE_OK);
    CHECK_EQ_U64(stats.capacity, capacity);
    CHECK_EQ_U64(stats.max_keys, max_keys);
    CHECK_EQ_U64(stats.live_keys, live_keys);
    CHECK_EQ_U64(stats.table_full, table_full);
    return 0;
}

static int test_a_reset_key_and_the_statistics(void) {
    /* GCRA 1 per 10 s, burst 1, capacity 1 (two slots): a TAT 10 s after an admission. */
    rate_config config = make_config(RATE_GCRA, 1, 10 * SECOND, 0);
    rate_keyed *table = NULL;
    rate_decision d;
    int failed = 0;
    CHECK_STATUS(rate_keyed_new(&config, 1, &table), RATE_OK);
    failed |= acquire_key(table, "a", 1, 0, NULL) != RATE_OK;
    failed |= acquire_key(table, "b", 1, 0, NULL) != RATE_OK;
    failed |= acquire_key(table, "c", 1, 0, NULL) != RATE_E_TABLE_FULL;
    /* c is not in the table: resetting it adds nothing, and it is refused again. */
    failed |= reset_key(table, "c") != RATE_OK;
    failed |= acquire_key(table, "c", 1, 0, NULL) != RATE_E_TABLE_FULL;
    failed |= acquire_key(table, "a", 1, 0, NULL) != RATE_LIMITED;
    /* a's former state keeps its slot until 10 s: a is a new key refused until then, but a
     * query of it needs no slot and sees a new key's full bucket. */
    failed |= reset_key(table, "a") != RATE_OK;
    failed |= acquire_key(table, "a", 1, SECOND, NULL) != RATE_E_TABLE_FULL;
    failed |= acquire_key(table, "a", 0, SECOND, &d) != RATE_OK || d.remaining != 1;
    failed |= acquire_key(table, "a", 1, 10 * SECOND, NULL) != RATE_OK;
    if (failed)
        rate_keyed_free(table);
    CHECK(!failed);
    /* At 10 s: a is live (TAT 20 s), b fresh (TAT 10 s); three refusals. */
    return check_stats(table, 10 * SECOND, 1, 2, 1, 3);
}

static int test_bad_input(void) {
    rate_config config = make_config(RATE_GCRA, 1, SECOND, 0);
    rate_keyed *table = NULL;
    rate_keyed_stats stats;
    int failed = 0;
    memset(&stats, 0xA5, sizeof stats);
    CHECK_STATUS(rate_limiter_reset(NULL), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_reset(NULL, (const uint8_t *)"k", 1), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_read_stats(NULL, &stats), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_read_stats_at(NULL, 0, &stats), RATE_E_NULL);
    CHECK_EQ_U64(stats.table_full, UINT64_C(0xA5A5A5A5A5A5A5A5));
    CHECK_STATUS(rate_keyed_new(&config, 1, &table), RATE_OK);
    failed |= rate_keyed_reset(table, NULL, 1) != RATE_E_NULL;
    failed |= rate_keyed_reset(table, NULL, 0) != RATE_OK; /* the empty key */
    failed |= rate_keyed_read_stats(table, NULL) != RATE_E_NULL;
    failed |= rate_keyed_read_stats_at(table, 0, NULL) != RATE_E_NULL;
    rate_keyed_free(table);
    CHECK(!failed);
    return 0;
}

/* Two processes each have two new keys refused by a full shared table, and one of them
 * resets a shared limiter and a key: the parent sees four refusals, the limiter full
 * again, and the key new again. */
static int test_shared_resets_and_refusals_across_processes(void) {
    rate_config config = make_config(RATE_GCRA, 1, HOUR, 0);
    char table_path[600], limiter_path[600];
    rate_keyed *table = NULL;
    rate_limiter *limiter = NULL;
    pid_t children[2];
    int i, failed = 0;
    in_scratch(table_path, sizeof table_path, "reset-table");
    in_scratch(limiter_path, sizeof limiter_path, "reset-limiter");
    CHECK_STATUS(rate_keyed_open(table_path, &config, 1, &table), RATE_OK);
    CHECK_STATUS(rate_limiter_open(limiter_path, &config, &limiter), RATE_OK);
    failed |= acquire_key(table, "a", 1, FROZEN, NULL) != RATE_OK;
    failed |= acquire_key(table, "b", 1, FROZEN, NULL) != RATE_OK;
    failed |= rate_limiter_acquire_at(limiter, 1, FROZEN, NULL) != RATE_OK;
    for (i = 0; i < 2 && !failed; i++) {
        children[i] = fork();
        if (children[i] == 0) {
            rate_keyed *mine = NULL;
            rate_limiter *its = NULL;
            int bad = rate_keyed_open(table_path, &config, 1, &mine) != RATE_OK;
            bad |= rate_limiter_open(limiter_path, &config, &its) != RATE_OK;
            bad |= acquire_key(mine, i == 0 ? "c0" : "c1", 1, FROZEN, NULL) != RATE_E_TABLE_FULL;
            bad |= acquire_key(mine, i == 0 ? "d0" : "d1", 1, FROZEN, NULL) != RATE_E_TABLE_FULL;
            if (i == 1) {
                bad |= rate_limiter_reset(its) != RATE_OK;
                bad |= reset_key(mine, "a") != RATE_OK;
            }
            rate_keyed_free(mine);
            rate_limiter_free(its);
            _exit(bad);
        }
        failed |= children[i] < 0 || wait_exit(children[i]) != 0;
    }
    failed |= rate_limiter_acquire_at(limiter, 1, FROZEN, NULL) != RATE_OK;
    rate_limiter_free(limiter);
    if (failed)
        rate_keyed_free(table);
    CHECK(!failed);
    /* a's former state holds its slot for the hour, b is live: a is a new key, refused. */
    CHECK_STATUS(acquire_key(table, "a", 1, FROZEN, NULL), RATE_E_TABLE_FULL);
    /* b live; a's former state is no key's; 2 + 2 + 1 refusals. */
    return check_stats(table, FROZEN, 1, 2, 1, 5);
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_a_reset_limiter_decides_as_a_new_one),
        TEST_CASE(test_a_reset_key_and_the_statistics),
        TEST_CASE(test_bad_input),
        TEST_CASE(test_shared_resets_and_refusals_across_processes),
    };
    return run_in_scratch("test_reset", cases, sizeof cases / sizeof cases[0]);
}
