/* C tests of a shared keyed table's and keyed policy's rules changing in their file
 * (docs/shared.md, changing the rule): rate_keyed_set_config_at and
 * rate_keyed_policy_set_rules_at in one process are every process's rules at its next
 * decision, each key's state and each global count carried over as in one process;
 * rate_keyed_open_replacing and rate_keyed_policy_open_replacing give the file the
 * opener's rules; a refused opener's file is described by rate_describe_file. Real
 * processes (fork) and real files in a directory of their own. Run by `cargo test`
 * (tests/c_api.rs) and by scripts/c-tests.sh under valgrind (which follows fork) and
 * ASan/UBSan.
 *
 * Every expected value is worked out by hand from the contract (docs/decision.md,
 * docs/live-changes.md, include/rate.h). GCRA with limit L, period P, burst B (0 means L):
 * T = P / L, tau = B*T; after a decision, debt = max(0, TAT - t), remaining =
 * floor((tau - debt) / T), reset_after = debt. A change at t keeps each key's tokens,
 * (tau - debt) / T, capped at the new burst: TAT' = t + tau' - min(tau', floor(tokens *
 * T')); a key whose tokens fill the new bucket is fresh and starts anew, as a new key. A
 * fixed window keeps its count in the new period's window holding t. Decisions are
 * written {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns}.
 *
 * Build: cc -std=c99 -Wall -Wextra -Wpedantic -Werror -pthread -Iinclude
 *        tests/c/test_shared_keyed_change.c -lrate
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include "shared.h"

static const rate_config GCRA_5 = {RATE_GCRA, 5, SECOND, 0};
/* Hour-long periods, for the tests on the real clock (an opener's change is made now):
 * T = 6 min (10 an hour) and 3 min (20 an hour), so no token refills while a test runs. */
static const rate_config GCRA_10_HOURLY = {RATE_GCRA, 10, HOUR, 0};
static const rate_config GCRA_20_HOURLY = {RATE_GCRA, 20, HOUR, 0};

/* A query (n = 0) of `key` at `now_ns`, or a take of `n`: the status. */
static int32_t keyed_at(rate_keyed *table, const char *key, uint64_t n, uint64_t now_ns,
                        rate_decision *out) {
    return rate_keyed_acquire_at(table, (const uint8_t *)key, strlen(key), n, now_ns, out);
}

/* The same on the real clock. */
static int32_t keyed_now(rate_keyed *table, const char *key, uint64_t n, rate_decision *out) {
    return rate_keyed_acquire(table, (const uint8_t *)key, strlen(key), n, out);
}

/* Opens `path` with rate_keyed_open, or rate_keyed_open_replacing if `replacing`, and an
 * out-handle holding a sentinel: the status, `*untouched` whether the sentinel is still
 * there; errno as the open left it. A handle the open made is freed. */
static int32_t keyed_with_sentinel(const char *path, const rate_config *config,
                                   uint64_t capacity, int replacing, int *untouched) {
    int sentinel = 0;
    rate_keyed *table = (rate_keyed *)(void *)&sentinel;
    int32_t status = replacing ? rate_keyed_open_replacing(path, config, capacity, &table)
                               : rate_keyed_open(path, config, capacity, &table);
    int saved = errno;
    *untouched = table == (rate_keyed *)(void *)&sentinel;
    if (status == RATE_OK && !*untouched)
        rate_keyed_free(table);
    errno = saved;
    return status;
}

/* Opening the keyed table at `path` fails with `expected`, the out-handle left alone. */
#define CHECK_KEYED_FAILS(path, config, capacity, replacing, expected)                      \
    do {                                                                                \
        int untouched_ = 0;                                                             \
        CHECK_STATUS(keyed_with_sentinel((path), (config), (capacity), (replacing),     \
                                         &untouched_),                                  \
                     (expected));                                                       \
        CHECK(untouched_);                                                              \
    } while (0)

/* As keyed_with_sentinel, for a keyed policy. */
static int32_t policy_with_sentinel(const char *path, const rate_keyed_rule *rules,
                                    size_t rules_len, uint64_t capacity, int replacing,
                                    int *untouched) {
    int sentinel = 0;
    rate_keyed_policy *policy = (rate_keyed_policy *)(void *)&sentinel;
    int32_t status =
        replacing ? rate_keyed_policy_open_replacing(path, rules, rules_len, capacity, &policy)
                  : rate_keyed_policy_open(path, rules, rules_len, capacity, &policy);
    int saved = errno;
    *untouched = policy == (rate_keyed_policy *)(void *)&sentinel;
    if (status == RATE_OK && !*untouched)
        rate_keyed_policy_free(policy);
    errno = saved;
    return status;
}

/* Opening the keyed policy at `path` fails with `expected`, the out-handle left alone. */
#define CHECK_POLICY_FAILS(path, rules, capacity, replacing, expected)                      \
    do {                                                                                \
        int untouched_ = 0;                                                             \
        CHECK_STATUS(policy_with_sentinel((path), (rules), 2, (capacity), (replacing),  \
                                          &untouched_),                                 \
                     (expected));                                                       \
        CHECK(untouched_);                                                              \
    } while (0)

/* Runs `child(path)` in a forked process, which first frees the handles it inherited
 * (`table`, `policy`, either NULL): its exit status, or -1. */
static int in_child(int (*child)(const char *), const char *path, rate_keyed *table,
                    rate_keyed_policy *policy) {
    pid_t pid;
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        rate_keyed_free(table);
        rate_keyed_policy_free(policy);
        exit(child(path));
    }
    return pid > 0 ? wait_exit(pid) : -1;
}

/* ---- a change in one process is every process's rule ---------------------------------- */

/* The child: attaches with the file's rule, 10 a second, and changes it to 5 a second at
 * 0. ann's 6 tokens are capped at the new burst, 5: a full bucket, {1, 5, 5, 0, 0, 0}.
 * Exit status 0 if so. */
static int change_table_to_five(const char *path) {
    rate_keyed *there = NULL;
    rate_decision d;
    int32_t set, query;
    CHECK_STATUS(rate_keyed_open(path, &GCRA_10, 100, &there), RATE_OK);
    set = rate_keyed_set_config_at(there, &GCRA_5, 0);
    query = keyed_at(there, "ann", 0, 0, &d);
    rate_keyed_free(there);
    CHECK_STATUS(set, RATE_OK);
    CHECK_STATUS(query, RATE_OK);
    CHECK_DECISION(d, 1, 5, 5, 0, 0, 0);
    return 0;
}

static int test_a_change_in_one_process_is_seen_by_every_process(void) {
    char path[600];
    rate_keyed *here = NULL, *again = NULL;
    rate_decision d[7];
    int32_t statuses[7];
    int child;
    in_scratch(path, sizeof path, "set-config");
    CHECK_STATUS(rate_keyed_open(path, &GCRA_10, 100, &here), RATE_OK);
    /* 10 a second, T = 100 ms, tau = 1 s: ann takes 4 at 0 (TAT 400 ms, 6 tokens), bob 9
     * (TAT 900 ms, 1 token). */
    statuses[0] = keyed_at(here, "ann", 4, 0, &d[0]);
    statuses[1] = keyed_at(here, "bob", 9, 0, &d[1]);
    child = in_child(change_table_to_five, path, here, NULL);
    /* Here at the next decision: 5 a second, T' = 200 ms, tau' = 1 s. ann's min(6, 5) = 5
     * tokens are a full bucket; bob keeps his 1 token, TAT' = 1 s - 200 ms = 800 ms; a
     * new key starts with the new burst. */
    statuses[2] = keyed_at(here, "ann", 0, 0, &d[2]);
    statuses[3] = keyed_at(here, "bob", 0, 0, &d[3]);
    statuses[4] = keyed_at(here, "cid", 0, 0, &d[4]);
    /* bob takes his token: TAT 1 s, none left; one more is due in TAT + T' - tau' - t =
     * 200 ms. */
    statuses[5] = keyed_at(here, "bob", 1, 0, &d[5]);
    statuses[6] = keyed_at(here, "bob", 1, 0, &d[6]);
    rate_keyed_free(here);
    CHECK_EQ_U64(child, 0);
    CHECK_STATUS(statuses[0], RATE_OK);
    CHECK_DECISION(d[0], 1, 10, 6, 0, 400 * MS, 0);
    CHECK_STATUS(statuses[1], RATE_OK);
    CHECK_DECISION(d[1], 1, 10, 1, 0, 900 * MS, 0);
    CHECK_STATUS(statuses[2], RATE_OK);
    CHECK_DECISION(d[2], 1, 5, 5, 0, 0, 0);
    CHECK_STATUS(statuses[3], RATE_OK);
    CHECK_DECISION(d[3], 1, 5, 1, 0, 800 * MS, 0);
    CHECK_STATUS(statuses[4], RATE_OK);
    CHECK_DECISION(d[4], 1, 5, 5, 0, 0, 0);
    CHECK_STATUS(statuses[5], RATE_OK);
    CHECK_DECISION(d[5], 1, 5, 0, 0, SECOND, 0);
    CHECK_STATUS(statuses[6], RATE_LIMITED);
    CHECK_DECISION(d[6], 0, 5, 0, 200 * MS, SECOND, 0);
    /* The file holds the new rule: the old one is refused, untouched, and told why. */
    CHECK_KEYED_FAILS(path, &GCRA_10, 100, 0, RATE_E_INCOMPATIBLE);
    CHECK_DESCRIBED(path, ": a librate keyed table of capacity 100 holding GCRA, limit 5, "
                          "period_ns 1000000000, burst 5 (its rule changed 1 time since it "
                          "was made)");
    /* The new rule opens, on the state the processes left: ann's 5 tokens, then none. */
    CHECK_STATUS(rate_keyed_open(path, &GCRA_5, 100, &again), RATE_OK);
    statuses[0] = keyed_at(again, "ann", 5, 0, &d[0]);
    statuses[1] = keyed_at(again, "bob", 1, 0, NULL);
    rate_keyed_free(again);
    CHECK_STATUS(statuses[0], RATE_OK);
    CHECK_DECISION(d[0], 1, 5, 0, 0, SECOND, 0);
    CHECK_STATUS(statuses[1], RATE_LIMITED);
    return 0;
}

/* The child of the window test: 10 a second becomes 8 per 2 s at 0.5 s. */
static int change_window(const char *path) {
    static const rate_config fixed_10 = {RATE_FIXED_WINDOW, 10, SECOND, 0};
    static const rate_config fixed_8 = {RATE_FIXED_WINDOW, 8, 2 * SECOND, 0};
    rate_keyed *there = NULL;
    int32_t set;
    CHECK_STATUS(rate_keyed_open(path, &fixed_10, 10, &there), RATE_OK);
    set = rate_keyed_set_config_at(there, &fixed_8, SECOND / 2);
    rate_keyed_free(there);
    CHECK_STATUS(set, RATE_OK);
    return 0;
}

static int test_a_window_change_carries_each_count(void) {
    static const rate_config fixed_10 = {RATE_FIXED_WINDOW, 10, SECOND, 0};
    const uint64_t at = SECOND + SECOND / 2;
    char path[600];
    rate_keyed *here = NULL;
    rate_decision d[5];
    int32_t statuses[6];
    int child;
    in_scratch(path, sizeof path, "window");
    CHECK_STATUS(rate_keyed_open(path, &fixed_10, 10, &here), RATE_OK);
    /* Counted in [0, 1 s): ann 7, bob 2. */
    statuses[0] = keyed_at(here, "ann", 7, SECOND / 2, NULL);
    statuses[1] = keyed_at(here, "bob", 2, SECOND / 2, NULL);
    child = in_child(change_window, path, here, NULL);
    /* The counts move to the new window holding 0.5 s, [0, 2 s): at 1.5 s ann has
     * 8 - 7 = 1 left, bob 8 - 2 = 6, a key that counted nothing 8; the window ends in
     * 500 ms. ann's 2 more are denied until then. */
    statuses[2] = keyed_at(here, "ann", 0, at, &d[0]);
    statuses[3] = keyed_at(here, "bob", 0, at, &d[1]);
    statuses[4] = keyed_at(here, "cid", 0, at, &d[2]);
    statuses[5] = keyed_at(here, "ann", 2, at, &d[3]);
    rate_keyed_free(here);
    CHECK_EQ_U64(child, 0);
    CHECK_STATUS(statuses[0], RATE_OK);
    CHECK_STATUS(statuses[1], RATE_OK);
    CHECK_STATUS(statuses[2], RATE_OK);
    CHECK_DECISION(d[0], 1, 8, 1, 0, 500 * MS, 0);
    CHECK_STATUS(statuses[3], RATE_OK);
    CHECK_DECISION(d[1], 1, 8, 6, 0, 500 * MS, 0);
    CHECK_STATUS(statuses[4], RATE_OK);
    CHECK_DECISION(d[2], 1, 8, 8, 0, 0, 0);
    CHECK_STATUS(statuses[5], RATE_LIMITED);
    CHECK_DECISION(d[3], 0, 8, 1, 500 * MS, 500 * MS, 0);
    return 0;
}

/* ---- an opener replaces the table's rule ------------------------------------------------- */

/* The child, a worker restarted with a new limit, 20 an hour: rate_keyed_open refuses the
 * file (it holds 10 an hour, which rate_describe_file says), rate_keyed_open_replacing
 * gives it the new rule. ann's 6 tokens fit the new burst of 20; bob's 0 stay 0; a new
 * key starts with 20. Exit status 0 if so. */
static int restart_table_with_twenty(const char *path) {
    rate_keyed *worker = NULL;
    rate_decision ann, bob, cid;
    int32_t statuses[3];
    CHECK_KEYED_FAILS(path, &GCRA_20_HOURLY, 10, 0, RATE_E_INCOMPATIBLE);
    CHECK_DESCRIBED(path, ": a librate keyed table of capacity 10 holding GCRA, limit 10, "
                          "period_ns 3600000000000, burst 10");
    CHECK_STATUS(rate_keyed_open_replacing(path, &GCRA_20_HOURLY, 10, &worker), RATE_OK);
    statuses[0] = keyed_now(worker, "ann", 0, &ann);
    statuses[1] = keyed_now(worker, "bob", 0, &bob);
    statuses[2] = keyed_now(worker, "cid", 0, &cid);
    rate_keyed_free(worker);
    CHECK_STATUS(statuses[0], RATE_OK);
    CHECK_EQ_U64(ann.limit, 20);
    CHECK_EQ_U64(ann.remaining, 6);
    CHECK_STATUS(statuses[1], RATE_OK);
    CHECK_EQ_U64(bob.remaining, 0);
    CHECK_STATUS(statuses[2], RATE_OK);
    CHECK_EQ_U64(cid.remaining, 20);
    return 0;
}

static int test_an_opener_replaces_the_tables_rule(void) {
    static const rate_config explicit_burst = {RATE_GCRA, 20, HOUR, 20};
    char path[600];
    rate_keyed *old = NULL, *same = NULL;
    rate_decision took, query, six;
    int32_t statuses[6];
    int child;
    in_scratch(path, sizeof path, "replacing");
    /* On the real clock, 10 an hour (T = 6 min): ann takes 4 (6 tokens), bob 10 (none). */
    CHECK_STATUS(rate_keyed_open(path, &GCRA_10_HOURLY, 10, &old), RATE_OK);
    statuses[0] = keyed_now(old, "ann", 4, &took);
    statuses[1] = keyed_now(old, "bob", 10, NULL);
    child = in_child(restart_table_with_twenty, path, old, NULL);
    /* The process still on the old rule follows at its next decision: ann's 6 tokens of
     * 20, all 6 taken, then a denial; bob has none. */
    statuses[2] = keyed_now(old, "ann", 0, &query);
    statuses[3] = keyed_now(old, "ann", 6, &six);
    statuses[4] = keyed_now(old, "ann", 1, NULL);
    statuses[5] = keyed_now(old, "bob", 1, NULL);
    rate_keyed_free(old);
    CHECK_EQ_U64(child, 0);
    CHECK_STATUS(statuses[0], RATE_OK);
    CHECK_EQ_U64(took.limit, 10);
    CHECK_EQ_U64(took.remaining, 6);
    CHECK_STATUS(statuses[1], RATE_OK);
    CHECK_STATUS(statuses[2], RATE_OK);
    CHECK_EQ_U64(query.limit, 20);
    CHECK_EQ_U64(query.remaining, 6);
    CHECK_STATUS(statuses[3], RATE_OK);
    CHECK_EQ_U64(six.remaining, 0);
    CHECK_STATUS(statuses[4], RATE_LIMITED);
    CHECK_STATUS(statuses[5], RATE_LIMITED);
    CHECK_DESCRIBED(path, ": a librate keyed table of capacity 10 holding GCRA, limit 20, "
                          "period_ns 3600000000000, burst 20 (its rule changed 1 time since "
                          "it was made)");
    /* Replacing with the rule the file holds changes nothing (burst 20 is what 0 means). */
    CHECK_STATUS(rate_keyed_open_replacing(path, &explicit_burst, 10, &same), RATE_OK);
    statuses[0] = keyed_now(same, "ann", 1, NULL);
    rate_keyed_free(same);
    CHECK_STATUS(statuses[0], RATE_LIMITED);
    CHECK_DESCRIBED(path, ": a librate keyed table of capacity 10 holding GCRA, limit 20, "
                          "period_ns 3600000000000, burst 20 (its rule changed 1 time since "
                          "it was made)");
    return 0;
}

/* A new file is made with the opener's rule, as rate_keyed_open makes it. */
static int test_open_replacing_makes_a_new_file(void) {
    char path[600];
    rate_keyed *table = NULL;
    rate_decision d;
    int32_t status;
    struct stat st;
    in_scratch(path, sizeof path, "new");
    CHECK_STATUS(rate_keyed_open_replacing(path, &GCRA_10, 64, &table), RATE_OK);
    /* 3 at 1 s: TAT = 1.3 s, debt 300 ms, remaining floor(700 ms / 100 ms) = 7. */
    status = keyed_at(table, "ann", 3, SECOND, &d);
    rate_keyed_free(table);
    CHECK_STATUS(status, RATE_OK);
    CHECK_DECISION(d, 1, 10, 7, 0, 300 * MS, 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ_U64(st.st_mode & 07777, 0600);
    CHECK_DESCRIBED(path, ": a librate keyed table of capacity 64 holding GCRA, limit 10, "
                          "period_ns 1000000000, burst 10");
    return 0;
}

/* What the state cannot be carried to is refused, and the file is left as it was: another
 * algorithm, a sliding log's rule. A table of another capacity, or a limiter's file, is no
 * keyed table the opener's can be. */
static int test_open_replacing_refuses_what_cannot_carry_over(void) {
    static const rate_config fixed = {RATE_FIXED_WINDOW, 10, SECOND, 0};
    static const rate_config log_10 = {RATE_SLIDING_LOG, 10, SECOND, 0};
    static const rate_config log_10_slower = {RATE_SLIDING_LOG, 10, 2 * SECOND, 0};
    char gcra[600], log[600], limiter_path[600];
    unsigned char *before;
    size_t len = 0;
    rate_keyed *table = NULL;
    rate_limiter *limiter = NULL;
    int same;
    in_scratch(gcra, sizeof gcra, "gcra");
    before = make_table(KEYED, gcra, &len); /* capacity 64, 3 of alice's units taken */
    CHECK(before != NULL);
    CHECK_KEYED_FAILS(gcra, &fixed, 64, 1, RATE_E_INVALID_CONFIG);
    CHECK_KEYED_FAILS(gcra, &GCRA_5, 65, 1, RATE_E_INCOMPATIBLE);
    same = file_is(gcra, before, len);
    free(before);
    CHECK(same);
    CHECK_DESCRIBED(gcra, ": a librate keyed table of capacity 64 holding GCRA, limit 10, "
                          "period_ns 1000000000, burst 10");

    in_scratch(log, sizeof log, "log");
    CHECK_STATUS(rate_keyed_open(log, &log_10, 8, &table), RATE_OK);
    rate_keyed_free(table);
    CHECK_KEYED_FAILS(log, &log_10_slower, 8, 1, RATE_E_INVALID_CONFIG);
    CHECK_DESCRIBED(log, ": a librate keyed table of capacity 8 holding sliding log, limit 10, "
                         "period_ns 1000000000");

    in_scratch(limiter_path, sizeof limiter_path, "limiter");
    CHECK_STATUS(rate_limiter_open(limiter_path, &GCRA_10, &limiter), RATE_OK);
    rate_limiter_free(limiter);
    CHECK_KEYED_FAILS(limiter_path, &GCRA_10, 64, 1, RATE_E_INCOMPATIBLE);
    CHECK_KEYED_FAILS(limiter_path, &GCRA_5, 64, 1, RATE_E_INCOMPATIBLE);
    CHECK_DESCRIBED(limiter_path,
                    ": a librate limiter holding GCRA, limit 10, period_ns 1000000000, burst 10");
    return 0;
}

static int test_open_replacing_null_and_io(void) {
    static const rate_config invalid = {RATE_GCRA, 0, SECOND, 0};
    char path[600], missing[700];
    rate_keyed *table = NULL;
    int untouched = 0, saved;
    int32_t status, changes[2];
    in_scratch(path, sizeof path, "null");
    CHECK_KEYED_FAILS(NULL, &GCRA_10, 64, 1, RATE_E_NULL);
    CHECK_KEYED_FAILS(path, NULL, 64, 1, RATE_E_NULL);
    CHECK_STATUS(rate_keyed_open_replacing(path, &GCRA_10, 64, NULL), RATE_E_NULL);
    CHECK(access(path, F_OK) != 0 && errno == ENOENT); /* nothing was created */
    /* An invalid rule (L = 0) or capacity creates nothing either. */
    CHECK_KEYED_FAILS(path, &invalid, 64, 1, RATE_E_INVALID_CONFIG);
    CHECK_KEYED_FAILS(path, &GCRA_10, 0, 1, RATE_E_INVALID_CONFIG);
    CHECK(access(path, F_OK) != 0 && errno == ENOENT);
    snprintf(missing, sizeof missing, "%s/no-such-directory/table", scratch);
    errno = 0;
    status = keyed_with_sentinel(missing, &GCRA_10, 64, 1, &untouched);
    saved = errno;
    CHECK_STATUS(status, RATE_E_IO);
    CHECK_EQ_U64(saved, ENOENT);
    CHECK(untouched);
    /* A change of a shared table checks its arguments as one in process. */
    CHECK_STATUS(rate_keyed_open(path, &GCRA_10, 64, &table), RATE_OK);
    changes[0] = rate_keyed_set_config_at(table, NULL, 0);
    changes[1] = rate_keyed_set_config_at(table, &invalid, 0);
    rate_keyed_free(table);
    CHECK_STATUS(changes[0], RATE_E_NULL);
    CHECK_STATUS(changes[1], RATE_E_INVALID_CONFIG);
    CHECK_STATUS(rate_keyed_set_config_at(NULL, &GCRA_5, 0), RATE_E_NULL);
    CHECK_DESCRIBED(path, ": a librate keyed table of capacity 64 holding GCRA, limit 10, "
                          "period_ns 1000000000, burst 10");
    return 0;
}

/* ---- keyed policies -------------------------------------------------------------------- */

/* The policy of the set_rules test, before and after: per customer 10 then 5 a second
 * (GCRA), everybody 100 then 1,000 a minute (fixed window). */
static const rate_keyed_rule PLAN[] = {
    {{RATE_GCRA, 10, SECOND, 0}, RATE_RULE_PER_KEY},
    {{RATE_FIXED_WINDOW, 100, 60 * SECOND, 0}, RATE_RULE_GLOBAL},
};
static const rate_keyed_rule UPGRADE[] = {
    {{RATE_GCRA, 5, SECOND, 0}, RATE_RULE_PER_KEY},
    {{RATE_FIXED_WINDOW, 1000, 60 * SECOND, 0}, RATE_RULE_GLOBAL},
};

/* A take of `n` of every rule for `key` at `now_ns`: the status. */
static int32_t policy_at(rate_keyed_policy *policy, const char *key, uint64_t n,
                         uint64_t now_ns, rate_policy_decision *out) {
    return rate_keyed_policy_acquire_at(policy, (const uint8_t *)key, strlen(key), n, now_ns,
                                        out);
}

/* The same on the real clock. */
static int32_t policy_now(rate_keyed_policy *policy, const char *key, uint64_t n,
                          rate_policy_decision *out) {
    return rate_keyed_policy_acquire(policy, (const uint8_t *)key, strlen(key), n, out);
}

/* The child of the set_rules test: attaches with the file's rules and sets UPGRADE at 0. */
static int change_policy(const char *path) {
    rate_keyed_policy *there = NULL;
    int32_t set;
    CHECK_STATUS(rate_keyed_policy_open(path, PLAN, 2, 10, &there), RATE_OK);
    set = rate_keyed_policy_set_rules_at(there, UPGRADE, 2, 0);
    rate_keyed_policy_free(there);
    CHECK_STATUS(set, RATE_OK);
    return 0;
}

static int test_set_rules_on_a_file_policy_carries_each_rule(void) {
    char path[600];
    rate_keyed_policy *here = NULL, *again = NULL;
    rate_policy_decision d[6];
    int32_t statuses[6];
    int child;
    in_scratch(path, sizeof path, "policy");
    CHECK_STATUS(rate_keyed_policy_open(path, PLAN, 2, 10, &here), RATE_OK);
    /* ann takes 4 at 0 (6 tokens), bob 9 (1 token); the window counts 13 of 100. */
    statuses[0] = policy_at(here, "ann", 4, 0, &d[0]);
    statuses[1] = policy_at(here, "bob", 9, 0, &d[1]);
    child = in_child(change_policy, path, NULL, here);
    /* The per-key rule carries each key as a table does (ann min(6, 5) = 5, a full
     * bucket; bob 1 token, TAT' = 1 s - 200 ms; cid new), the global rule its count:
     * 13 of 1,000 in [0, 60 s), which ends in 60 s. */
    statuses[2] = policy_at(here, "ann", 0, 0, &d[2]);
    statuses[3] = policy_at(here, "bob", 0, 0, &d[3]);
    statuses[4] = policy_at(here, "cid", 0, 0, &d[4]);
    /* bob takes his last token and 1 of the window's units (986 left); then the per-key
     * rule denies him, and the window gives its unit back. */
    statuses[5] = policy_at(here, "bob", 1, 0, NULL);
    rate_keyed_policy_free(here);
    CHECK_EQ_U64(child, 0);
    CHECK_STATUS(statuses[0], RATE_OK);
    CHECK_EQ_U64(d[0].rules[0].remaining, 6);
    CHECK_EQ_U64(d[0].rules[1].remaining, 96);
    CHECK_STATUS(statuses[1], RATE_OK);
    CHECK_EQ_U64(d[1].rules[0].remaining, 1);
    CHECK_EQ_U64(d[1].rules[1].remaining, 87);
    CHECK_STATUS(statuses[2], RATE_OK);
    CHECK_EQ_U64(d[2].rules_len, 2);
    CHECK_DECISION(d[2].rules[0], 1, 5, 5, 0, 0, 0);
    CHECK_DECISION(d[2].rules[1], 1, 1000, 987, 0, 60 * SECOND, 0);
    CHECK_STATUS(statuses[3], RATE_OK);
    CHECK_DECISION(d[3].rules[0], 1, 5, 1, 0, 800 * MS, 0);
    CHECK_STATUS(statuses[4], RATE_OK);
    CHECK_DECISION(d[4].rules[0], 1, 5, 5, 0, 0, 0);
    CHECK_STATUS(statuses[5], RATE_OK);
    /* The file holds the new rules: the old ones are refused, the new ones open on the
     * state the processes left. */
    CHECK_POLICY_FAILS(path, PLAN, 10, 0, RATE_E_INCOMPATIBLE);
    CHECK_STATUS(rate_keyed_policy_open(path, UPGRADE, 2, 10, &again), RATE_OK);
    statuses[0] = policy_at(again, "bob", 1, 0, &d[0]);
    rate_keyed_policy_free(again);
    CHECK_STATUS(statuses[0], RATE_LIMITED);
    CHECK_EQ_U64(d[0].denied_by, 0);
    CHECK_EQ_U64(d[0].rules[1].remaining, 986);
    return 0;
}

/* The rules of the replace test, on the real clock: per customer 10 then 20 an hour
 * (GCRA, T = 6 min then 3 min), everybody 100 then 10 (a window that never ends). */
static const rate_keyed_rule HOURLY[] = {
    {{RATE_GCRA, 10, HOUR, 0}, RATE_RULE_PER_KEY},
    {{RATE_FIXED_WINDOW, 100, RATE_FOREVER, 0}, RATE_RULE_GLOBAL},
};
static const rate_keyed_rule HOURLY_NEW[] = {
    {{RATE_GCRA, 20, HOUR, 0}, RATE_RULE_PER_KEY},
    {{RATE_FIXED_WINDOW, 10, RATE_FOREVER, 0}, RATE_RULE_GLOBAL},
};

/* The child, a worker restarted with HOURLY_NEW: refused by rate_keyed_policy_open,
 * given the file by rate_keyed_policy_open_replacing. */
static int restart_policy(const char *path) {
    rate_keyed_policy *worker = NULL;
    CHECK_POLICY_FAILS(path, HOURLY_NEW, 10, 0, RATE_E_INCOMPATIBLE);
    CHECK_STATUS(rate_keyed_policy_open_replacing(path, HOURLY_NEW, 2, 10, &worker), RATE_OK);
    rate_keyed_policy_free(worker);
    return 0;
}

static int test_an_opener_replaces_the_policys_rules(void) {
    /* Scopes swapped; another algorithm in the per-key rule's place. */
    static const rate_keyed_rule swapped[] = {
        {{RATE_FIXED_WINDOW, 10, RATE_FOREVER, 0}, RATE_RULE_GLOBAL},
        {{RATE_GCRA, 20, HOUR, 0}, RATE_RULE_PER_KEY},
    };
    static const rate_keyed_rule other_algorithm[] = {
        {{RATE_FIXED_WINDOW, 20, HOUR, 0}, RATE_RULE_PER_KEY},
        {{RATE_FIXED_WINDOW, 10, RATE_FOREVER, 0}, RATE_RULE_GLOBAL},
    };
    char path[600];
    rate_keyed_policy *here = NULL, *again = NULL;
    rate_policy_decision took, query, bob;
    int32_t statuses[5];
    int child;
    in_scratch(path, sizeof path, "policy-replacing");
    CHECK_STATUS(rate_keyed_policy_open_replacing(path, HOURLY, 2, 10, &here), RATE_OK);
    /* ann takes 4: 6 tokens, 96 units. */
    statuses[0] = policy_now(here, "ann", 4, &took);
    child = in_child(restart_policy, path, NULL, here);
    /* ann keeps her 6 tokens under a burst of 20; the window's 4 of now 10 leave 6; a new
     * key starts with 20. */
    statuses[1] = policy_now(here, "ann", 0, &query);
    statuses[2] = policy_now(here, "bob", 0, &bob);
    rate_keyed_policy_free(here);
    CHECK_EQ_U64(child, 0);
    CHECK_STATUS(statuses[0], RATE_OK);
    CHECK_EQ_U64(took.rules[0].remaining, 6);
    CHECK_EQ_U64(took.rules[1].remaining, 96);
    CHECK_STATUS(statuses[1], RATE_OK);
    CHECK_EQ_U64(query.rules[0].limit, 20);
    CHECK_EQ_U64(query.rules[0].remaining, 6);
    CHECK_EQ_U64(query.rules[1].limit, 10);
    CHECK_EQ_U64(query.rules[1].remaining, 6);
    CHECK_STATUS(statuses[2], RATE_OK);
    CHECK_EQ_U64(bob.rules[0].remaining, 20);
    /* Another scope in a rule's place is refused even when replacing, and another
     * algorithm cannot carry its state over; NULL arguments are RATE_E_NULL. */
    CHECK_POLICY_FAILS(path, swapped, 10, 1, RATE_E_INCOMPATIBLE);
    CHECK_POLICY_FAILS(path, other_algorithm, 10, 1, RATE_E_INVALID_CONFIG);
    CHECK_POLICY_FAILS(path, HOURLY_NEW, 11, 1, RATE_E_INCOMPATIBLE);
    CHECK_POLICY_FAILS(NULL, HOURLY_NEW, 10, 1, RATE_E_NULL);
    CHECK_POLICY_FAILS(path, NULL, 10, 1, RATE_E_NULL);
    CHECK_STATUS(rate_keyed_policy_open_replacing(path, HOURLY_NEW, 2, 10, NULL), RATE_E_NULL);
    /* The file kept HOURLY_NEW: it opens, on ann's state (6 of each rule left). */
    CHECK_STATUS(rate_keyed_policy_open(path, HOURLY_NEW, 2, 10, &again), RATE_OK);
    statuses[0] = policy_now(again, "ann", 6, NULL);
    statuses[1] = policy_now(again, "ann", 1, NULL);
    statuses[2] = rate_keyed_policy_set_rules_at(again, NULL, 2, 0);
    statuses[3] = rate_keyed_policy_set_rules_at(again, swapped, 2, 0);
    statuses[4] = rate_keyed_policy_set_rules_at(again, HOURLY_NEW, 1, 0);
    rate_keyed_policy_free(again);
    CHECK_STATUS(statuses[0], RATE_OK);
    CHECK_STATUS(statuses[1], RATE_LIMITED);
    CHECK_STATUS(statuses[2], RATE_E_NULL);
    CHECK_STATUS(statuses[3], RATE_E_INVALID_CONFIG);
    CHECK_STATUS(statuses[4], RATE_E_INVALID_CONFIG);
    CHECK_STATUS(rate_keyed_policy_set_rules_at(NULL, HOURLY_NEW, 2, 0), RATE_E_NULL);
    return 0;
}

/* A new file is made with the opener's rules, as rate_keyed_policy_open makes it. */
static int test_policy_open_replacing_makes_a_new_file(void) {
    char path[600], missing[700];
    int untouched = 0, saved;
    int32_t status;
    in_scratch(path, sizeof path, "new-policy");
    CHECK_POLICY_FAILS(path, PLAN, 0, 1, RATE_E_INVALID_CONFIG);
    CHECK(access(path, F_OK) != 0 && errno == ENOENT);
    CHECK_STATUS(policy_with_sentinel(path, PLAN, 2, 64, 1, &untouched), RATE_OK);
    CHECK(!untouched);
    CHECK_DESCRIBED(path, ": a librate keyed policy of capacity 64 holding 2 rules: GCRA, "
                          "limit 10, period_ns 1000000000, burst 10 (per key); fixed window, "
                          "limit 100, period_ns 60000000000 (global)");
    snprintf(missing, sizeof missing, "%s/no-such-directory/policy", scratch);
    errno = 0;
    status = policy_with_sentinel(missing, PLAN, 2, 64, 1, &untouched);
    saved = errno;
    CHECK_STATUS(status, RATE_E_IO);
    CHECK_EQ_U64(saved, ENOENT);
    CHECK(untouched);
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_a_change_in_one_process_is_seen_by_every_process),
        TEST_CASE(test_a_window_change_carries_each_count),
        TEST_CASE(test_an_opener_replaces_the_tables_rule),
        TEST_CASE(test_open_replacing_makes_a_new_file),
        TEST_CASE(test_open_replacing_refuses_what_cannot_carry_over),
        TEST_CASE(test_open_replacing_null_and_io),
        TEST_CASE(test_set_rules_on_a_file_policy_carries_each_rule),
        TEST_CASE(test_an_opener_replaces_the_policys_rules),
        TEST_CASE(test_policy_open_replacing_makes_a_new_file),
    };
    return run_in_scratch("test_shared_keyed_change", cases, sizeof cases / sizeof cases[0]);
}
