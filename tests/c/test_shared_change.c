/* C tests of a shared limiter's rule changing in its file (docs/shared.md, changing the
 * rule): rate_limiter_set_config_at in one process is every process's rule at its next
 * decision, rate_limiter_open_replacing gives the file the opener's rule, and
 * rate_describe_file says what a file holds, in the caller's buffer. Real processes (fork)
 * and real files in a directory of their own. Run by `cargo test` (tests/c_api.rs) and by
 * scripts/c-tests.sh under valgrind (which follows fork) and ASan/UBSan.
 *
 * Every expected value is worked out by hand from the contract (docs/decision.md,
 * docs/live-changes.md, include/rate.h). GCRA with limit L, period P, burst B (0 means L):
 * T = P / L, tau = B*T; after a decision, debt = max(0, TAT - t), remaining =
 * floor((tau - debt) / T), reset_after = debt; a change keeps the tokens, floor((tau -
 * debt) / T) and its fraction, capped at the new burst. Decisions are written
 * {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns}.
 *
 * Build: cc -std=c99 -Wall -Wextra -Wpedantic -Werror -pthread -Iinclude
 *        tests/c/test_shared_change.c -lrate
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include "shared.h"

static const rate_config GCRA_5 = {RATE_GCRA, 5, SECOND, 0};
/* Hour-long periods, for the tests on the real clock: T = 6 min (10 an hour) and 12 min
 * (5 an hour), so no token refills while a test runs. */
static const rate_config GCRA_10_HOURLY = {RATE_GCRA, 10, HOUR, 0};
static const rate_config GCRA_5_HOURLY = {RATE_GCRA, 5, HOUR, 0};

/* ---- a change in one process is every process's rule ---------------------------------- */

/* The child: attaches with the file's rule, 10 a second, and changes it to 5 a second at
 * 0. The 6 tokens left at 0 are capped at the new burst, 5: a query at 0 sees a full
 * bucket of 5, {1, 5, 5, 0, 0, 0}. Exit status 0 if so. */
static int change_to_five(const char *path) {
    rate_limiter *there = NULL;
    rate_decision d;
    int32_t set, query;
    CHECK_STATUS(rate_limiter_open(path, &GCRA_10, &there), RATE_OK);
    set = rate_limiter_set_config_at(there, &GCRA_5, 0);
    query = rate_limiter_acquire_at(there, 0, 0, &d);
    rate_limiter_free(there);
    CHECK_STATUS(set, RATE_OK);
    CHECK_STATUS(query, RATE_OK);
    CHECK_DECISION(d, 1, 5, 5, 0, 0, 0);
    return 0;
}

static int test_a_change_in_one_process_is_seen_by_every_process(void) {
    char path[600];
    rate_limiter *here = NULL, *again = NULL;
    rate_decision query, take, denied, fresh;
    int32_t statuses[4];
    pid_t pid;
    in_scratch(path, sizeof path, "set-config");
    CHECK_STATUS(rate_limiter_open(path, &GCRA_10, &here), RATE_OK);
    /* 10 a second, T = 100 ms, tau = 1 s: 4 at 0 leave TAT = 400 ms, debt 400 ms,
     * remaining floor(600 ms / 100 ms) = 6, reset_after 400 ms. */
    statuses[0] = rate_limiter_acquire_at(here, 4, 0, &take);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        rate_limiter_free(here);
        exit(change_to_five(path));
    }
    CHECK(pid > 0);
    CHECK_EQ_U64(wait_exit(pid), 0);
    /* This process reads the file's rule in force: 5 a second, burst 0 as given. */
    {
        rate_config held = {RATE_SLIDING_LOG, 0, 0, 0};
        CHECK_STATUS(rate_limiter_get_config(here, &held), RATE_OK);
        CHECK_EQ_U64(held.algorithm, RATE_GCRA);
        CHECK_EQ_U64(held.limit, 5);
        CHECK_EQ_U64(held.period_ns, SECOND);
        CHECK_EQ_U64(held.burst, 0);
        CHECK_STATUS(rate_limiter_get_config(NULL, &held), RATE_E_NULL);
        CHECK_STATUS(rate_limiter_get_config(here, NULL), RATE_E_NULL);
    }
    /* It decides under the new rule at its next decision: 5 a second, T = 200 ms, tau =
     * 1 s, the 5 tokens carried over a full bucket at 0 (debt 0). */
    statuses[1] = rate_limiter_acquire_at(here, 0, 0, &query);
    /* 5 at 0: TAT = 1 s, debt 1 s, remaining floor(0 / 200 ms) = 0, reset_after 1 s. */
    statuses[2] = rate_limiter_acquire_at(here, 5, 0, &fresh);
    /* 1 more at 0: retry_after = TAT + T - t - tau = 1 s + 200 ms - 1 s = 200 ms. */
    statuses[3] = rate_limiter_acquire_at(here, 1, 0, &denied);
    rate_limiter_free(here);
    CHECK_STATUS(statuses[0], RATE_OK);
    CHECK_DECISION(take, 1, 10, 6, 0, 400 * MS, 0);
    CHECK_STATUS(statuses[1], RATE_OK);
    CHECK_DECISION(query, 1, 5, 5, 0, 0, 0);
    CHECK_STATUS(statuses[2], RATE_OK);
    CHECK_DECISION(fresh, 1, 5, 0, 0, SECOND, 0);
    CHECK_STATUS(statuses[3], RATE_LIMITED);
    CHECK_DECISION(denied, 0, 5, 0, 200 * MS, SECOND, 0);
    /* The file holds the new rule: the old one is refused, untouched, and told why. */
    CHECK_OPEN_FAILS(LIMITER, path, &GCRA_10, RATE_E_INCOMPATIBLE);
    CHECK_DESCRIBED(path, ": a librate limiter holding GCRA, limit 5, period_ns 1000000000, "
                          "burst 5 (its rule changed 1 time since it was made)");
    /* The new rule opens, on the state the processes left: 5 taken at 0, none left. */
    CHECK_STATUS(rate_limiter_open(path, &GCRA_5, &again), RATE_OK);
    statuses[0] = rate_limiter_acquire_at(again, 1, 0, NULL);
    rate_limiter_free(again);
    CHECK_STATUS(statuses[0], RATE_LIMITED);
    return 0;
}

/* ---- an opener replaces the file's rule ------------------------------------------------- */

/* The child, a worker restarted with a new limit, 5 an hour: rate_limiter_open refuses the
 * file (it holds 10 an hour), rate_limiter_open_replacing gives it the new rule. The 6
 * tokens left are capped at the new burst, 5; a query now sees limit 5, remaining 5. Exit
 * status 0 if so. */
static int restart_with_five(const char *path) {
    rate_limiter *refused = NULL, *worker = NULL;
    rate_decision d;
    int32_t query;
    CHECK_STATUS(rate_limiter_open(path, &GCRA_5_HOURLY, &refused), RATE_E_INCOMPATIBLE);
    CHECK(refused == NULL);
    CHECK_STATUS(rate_limiter_open_replacing(path, &GCRA_5_HOURLY, &worker), RATE_OK);
    query = rate_limiter_acquire(worker, 0, &d);
    rate_limiter_free(worker);
    CHECK_STATUS(query, RATE_OK);
    CHECK_EQ_U64(d.limit, 5);
    CHECK_EQ_U64(d.remaining, 5);
    return 0;
}

static int test_an_opener_replaces_the_files_rule(void) {
    char path[600];
    rate_limiter *old = NULL, *same = NULL;
    rate_decision took, query, five, denied;
    int32_t statuses[4];
    pid_t pid;
    in_scratch(path, sizeof path, "replacing");
    /* On the real clock, 10 an hour (T = 6 min): 4 now leave 6 tokens, and none refills
     * while the test runs. */
    CHECK_STATUS(rate_limiter_open(path, &GCRA_10_HOURLY, &old), RATE_OK);
    statuses[0] = rate_limiter_acquire(old, 4, &took);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        rate_limiter_free(old);
        exit(restart_with_five(path));
    }
    CHECK(pid > 0);
    CHECK_EQ_U64(wait_exit(pid), 0);
    /* The process still running on the old rule follows at its next decision: 5 tokens
     * of 5, all 5 admitted, then a denial. */
    statuses[1] = rate_limiter_acquire(old, 0, &query);
    statuses[2] = rate_limiter_acquire(old, 5, &five);
    statuses[3] = rate_limiter_acquire(old, 1, &denied);
    rate_limiter_free(old);
    CHECK_STATUS(statuses[0], RATE_OK);
    CHECK_EQ_U64(took.limit, 10);
    CHECK_EQ_U64(took.remaining, 6);
    CHECK_STATUS(statuses[1], RATE_OK);
    CHECK_EQ_U64(query.limit, 5);
    CHECK_EQ_U64(query.remaining, 5);
    CHECK_STATUS(statuses[2], RATE_OK);
    CHECK_EQ_U64(five.remaining, 0);
    CHECK_STATUS(statuses[3], RATE_LIMITED);
    CHECK_EQ_U64(denied.limit, 5);
    CHECK_DESCRIBED(path, ": a librate limiter holding GCRA, limit 5, period_ns 3600000000000, "
                          "burst 5 (its rule changed 1 time since it was made)");
    /* Replacing with the rule the file holds changes nothing (burst 5 is what 0 means). */
    {
        const rate_config explicit_burst = {RATE_GCRA, 5, HOUR, 5};
        CHECK_STATUS(rate_limiter_open_replacing(path, &explicit_burst, &same), RATE_OK);
        statuses[0] = rate_limiter_acquire(same, 1, NULL);
        rate_limiter_free(same);
        CHECK_STATUS(statuses[0], RATE_LIMITED);
    }
    CHECK_DESCRIBED(path, ": a librate limiter holding GCRA, limit 5, period_ns 3600000000000, "
                          "burst 5 (its rule changed 1 time since it was made)");
    return 0;
}

/* A new file is made with the opener's rule, as rate_limiter_open makes it. */
static int test_open_replacing_makes_a_new_file(void) {
    char path[600];
    rate_limiter *limiter = NULL;
    rate_decision d;
    int32_t status;
    struct stat st;
    in_scratch(path, sizeof path, "new");
    CHECK_STATUS(rate_limiter_open_replacing(path, &GCRA_10, &limiter), RATE_OK);
    /* 3 at 1 s: TAT = 1.3 s, debt 300 ms, remaining floor(700 ms / 100 ms) = 7. */
    status = rate_limiter_acquire_at(limiter, 3, SECOND, &d);
    rate_limiter_free(limiter);
    CHECK_STATUS(status, RATE_OK);
    CHECK_DECISION(d, 1, 10, 7, 0, 300 * MS, 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ_U64(st.st_mode & 07777, 0600);
    CHECK_DESCRIBED(path,
                    ": a librate limiter holding GCRA, limit 10, period_ns 1000000000, burst 10");
    return 0;
}

/* Opens `path` with rate_limiter_open_replacing and an out-handle holding a sentinel: the
 * status, `*untouched` whether the sentinel is still there; errno as the open left it. */
static int32_t replacing_with_sentinel(const char *path, const rate_config *config,
                                       int *untouched) {
    int sentinel = 0;
    rate_limiter *limiter = (rate_limiter *)(void *)&sentinel;
    int32_t status = rate_limiter_open_replacing(path, config, &limiter);
    int saved = errno;
    *untouched = limiter == (rate_limiter *)(void *)&sentinel;
    if (status == RATE_OK && !*untouched)
        rate_limiter_free(limiter);
    errno = saved;
    return status;
}

/* What the state cannot be carried to is refused, and the file keeps its rule: another
 * algorithm, a sliding log's rule. A file of another size, or a keyed table's, is no
 * limiter of the opener's rule. */
static int test_open_replacing_refuses_what_cannot_carry_over(void) {
    static const rate_config fixed = {RATE_FIXED_WINDOW, 10, SECOND, 0};
    static const rate_config log_10 = {RATE_SLIDING_LOG, 10, SECOND, 0};
    static const rate_config log_10_slower = {RATE_SLIDING_LOG, 10, 2 * SECOND, 0};
    static const rate_config log_20 = {RATE_SLIDING_LOG, 20, SECOND, 0};
    char gcra[600], log[600], keyed[600];
    rate_limiter *limiter = NULL;
    rate_keyed *table = NULL;
    int untouched = 0;
    in_scratch(gcra, sizeof gcra, "gcra");
    CHECK_STATUS(rate_limiter_open(gcra, &GCRA_10, &limiter), RATE_OK);
    rate_limiter_free(limiter);
    CHECK_STATUS(replacing_with_sentinel(gcra, &fixed, &untouched), RATE_E_INVALID_CONFIG);
    CHECK(untouched);
    CHECK_DESCRIBED(gcra,
                    ": a librate limiter holding GCRA, limit 10, period_ns 1000000000, burst 10");

    in_scratch(log, sizeof log, "log");
    CHECK_STATUS(rate_limiter_open(log, &log_10, &limiter), RATE_OK);
    rate_limiter_free(limiter);
    CHECK_STATUS(replacing_with_sentinel(log, &log_10_slower, &untouched),
                 RATE_E_INVALID_CONFIG);
    CHECK(untouched);
    /* A sliding log's state grows with its limit (16 bytes a unit): a file of another
     * limit is of another size, no file this rule's limiter can be. */
    CHECK_STATUS(replacing_with_sentinel(log, &log_20, &untouched), RATE_E_INCOMPATIBLE);
    CHECK(untouched);
    CHECK_DESCRIBED(log, ": a librate limiter holding sliding log, limit 10, period_ns 1000000000");

    in_scratch(keyed, sizeof keyed, "keyed");
    CHECK_STATUS(rate_keyed_open(keyed, &GCRA_10, 64, &table), RATE_OK);
    rate_keyed_free(table);
    CHECK_STATUS(replacing_with_sentinel(keyed, &GCRA_10, &untouched), RATE_E_INCOMPATIBLE);
    CHECK(untouched);
    CHECK_STATUS(replacing_with_sentinel(keyed, &GCRA_5, &untouched), RATE_E_INCOMPATIBLE);
    CHECK(untouched);
    CHECK_DESCRIBED(keyed, ": a librate keyed table of capacity 64 holding GCRA, limit 10, "
                           "period_ns 1000000000, burst 10");
    return 0;
}

static int test_open_replacing_null_and_io(void) {
    char path[600], missing[700];
    int untouched = 0, saved;
    int32_t status;
    in_scratch(path, sizeof path, "null");
    CHECK_STATUS(replacing_with_sentinel(NULL, &GCRA_10, &untouched), RATE_E_NULL);
    CHECK(untouched);
    CHECK_STATUS(replacing_with_sentinel(path, NULL, &untouched), RATE_E_NULL);
    CHECK(untouched);
    CHECK_STATUS(rate_limiter_open_replacing(path, &GCRA_10, NULL), RATE_E_NULL);
    CHECK(access(path, F_OK) != 0 && errno == ENOENT); /* nothing was created */
    /* An invalid rule (L = 0) creates nothing either. */
    {
        static const rate_config invalid = {RATE_GCRA, 0, SECOND, 0};
        CHECK_STATUS(replacing_with_sentinel(path, &invalid, &untouched),
                     RATE_E_INVALID_CONFIG);
        CHECK(untouched);
        CHECK(access(path, F_OK) != 0 && errno == ENOENT);
    }
    snprintf(missing, sizeof missing, "%s/no-such-directory/limit", scratch);
    errno = 0;
    status = replacing_with_sentinel(missing, &GCRA_10, &untouched);
    saved = errno;
    CHECK_STATUS(status, RATE_E_IO);
    CHECK_EQ_U64(saved, ENOENT);
    CHECK(untouched);
    return 0;
}

/* ---- rate_describe_file ------------------------------------------------------------------ */

static int test_describe_file_names_kind_and_rule(void) {
    static const rate_config fixed = {RATE_FIXED_WINDOW, 100, 60 * SECOND, 0};
    static const rate_keyed_rule rules[] = {
        {{RATE_GCRA, 1, SECOND, 0}, RATE_RULE_PER_KEY},
        {{RATE_FIXED_WINDOW, 100, 60 * SECOND, 0}, RATE_RULE_GLOBAL},
    };
    char limiter_path[600], keyed_path[600], policy_path[600], zeros_path[600];
    rate_limiter *limiter = NULL;
    rate_keyed *keyed = NULL;
    rate_keyed_policy *policy = NULL;
    unsigned char zeros[128];
    CHECK_STATUS(rate_limiter_open(in_scratch(limiter_path, sizeof limiter_path, "fixed"),
                                   &fixed, &limiter),
                 RATE_OK);
    rate_limiter_free(limiter);
    CHECK_DESCRIBED(limiter_path,
                    ": a librate limiter holding fixed window, limit 100, period_ns 60000000000");
    CHECK_STATUS(rate_keyed_open(in_scratch(keyed_path, sizeof keyed_path, "keyed"), &GCRA_10,
                                 64, &keyed),
                 RATE_OK);
    rate_keyed_free(keyed);
    CHECK_DESCRIBED(keyed_path, ": a librate keyed table of capacity 64 holding GCRA, limit 10, "
                                "period_ns 1000000000, burst 10");
    CHECK_STATUS(rate_keyed_policy_open(in_scratch(policy_path, sizeof policy_path, "policy"),
                                        rules, 2, 64, &policy),
                 RATE_OK);
    rate_keyed_policy_free(policy);
    CHECK_DESCRIBED(policy_path,
                    ": a librate keyed policy of capacity 64 holding 2 rules: GCRA, limit 1, "
                    "period_ns 1000000000, burst 1 (per key); fixed window, limit 100, "
                    "period_ns 60000000000 (global)");
    /* 128 bytes (a header's worth) that do not start with librate's magic bytes. */
    memset(zeros, 0, sizeof zeros);
    CHECK(write_file(in_scratch(zeros_path, sizeof zeros_path, "zeros"), zeros, sizeof zeros,
                     0600) == 0);
    CHECK_DESCRIBED(zeros_path,
                    ": not a librate table (it does not start with librate's magic bytes)");
    return 0;
}

/* The buffer contract of rate_limiter_explain_config: cut to reason_len - 1 bytes, always
 * NUL-terminated when reason_len > 0; NULL or 0 bytes write nothing. */
static int test_describe_file_fills_the_callers_buffer(void) {
    char path[600], whole[DESCRIPTION_LEN], buffer[DESCRIPTION_LEN];
    rate_limiter *limiter = NULL;
    size_t len;
    CHECK_STATUS(rate_limiter_open(in_scratch(path, sizeof path, "buffer"), &GCRA_10, &limiter),
                 RATE_OK);
    rate_limiter_free(limiter);
    CHECK_STATUS(describe(path, whole), RATE_OK);
    len = strlen(whole);
    CHECK(len > 10);
    /* 10 bytes: the first 9 and a NUL; the rest of the buffer untouched. */
    memset(buffer, 'x', sizeof buffer);
    CHECK_STATUS(rate_describe_file(path, buffer, 10), RATE_OK);
    CHECK_EQ_U64(strlen(buffer), 9);
    CHECK(memcmp(buffer, whole, 9) == 0);
    CHECK(buffer[10] == 'x');
    /* Exactly the sentence and its NUL: whole. One byte less: cut by one. */
    CHECK_STATUS(rate_describe_file(path, buffer, len + 1), RATE_OK);
    CHECK_EQ_STR(buffer, whole);
    CHECK_STATUS(rate_describe_file(path, buffer, len), RATE_OK);
    CHECK_EQ_U64(strlen(buffer), len - 1);
    /* 1 byte: the empty string. 0 bytes, or no buffer: nothing written, the status only. */
    memset(buffer, 'x', sizeof buffer);
    CHECK_STATUS(rate_describe_file(path, buffer, 1), RATE_OK);
    CHECK(buffer[0] == '\0' && buffer[1] == 'x');
    buffer[0] = 'x';
    CHECK_STATUS(rate_describe_file(path, buffer, 0), RATE_OK);
    CHECK(buffer[0] == 'x');
    CHECK_STATUS(rate_describe_file(path, NULL, 0), RATE_OK);
    CHECK_STATUS(rate_describe_file(path, NULL, sizeof buffer), RATE_OK);
    return 0;
}

static int test_describe_file_null_and_missing(void) {
    char path[600], buffer[DESCRIPTION_LEN];
    int saved;
    int32_t status;
    /* NULL path: RATE_E_NULL, the buffer untouched. */
    memset(buffer, 'x', sizeof buffer);
    CHECK_STATUS(rate_describe_file(NULL, buffer, sizeof buffer), RATE_E_NULL);
    CHECK(buffer[0] == 'x');
    /* A missing file: RATE_E_IO with errno ENOENT, the empty string; nothing created. */
    in_scratch(path, sizeof path, "missing");
    errno = 0;
    status = rate_describe_file(path, buffer, sizeof buffer);
    saved = errno;
    CHECK_STATUS(status, RATE_E_IO);
    CHECK_EQ_U64(saved, ENOENT);
    CHECK_EQ_STR(buffer, "");
    CHECK(access(path, F_OK) != 0 && errno == ENOENT);
    /* A directory opens but cannot be read: EISDIR. */
    errno = 0;
    status = rate_describe_file(scratch, NULL, 0);
    saved = errno;
    CHECK_STATUS(status, RATE_E_IO);
    CHECK_EQ_U64(saved, EISDIR);
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_a_change_in_one_process_is_seen_by_every_process),
        TEST_CASE(test_an_opener_replaces_the_files_rule),
        TEST_CASE(test_open_replacing_makes_a_new_file),
        TEST_CASE(test_open_replacing_refuses_what_cannot_carry_over),
        TEST_CASE(test_open_replacing_null_and_io),
        TEST_CASE(test_describe_file_names_kind_and_rule),
        TEST_CASE(test_describe_file_fills_the_callers_buffer),
        TEST_CASE(test_describe_file_null_and_missing),
    };
    return run_in_scratch("test_shared_change", cases, sizeof cases / sizeof cases[0]);
}
