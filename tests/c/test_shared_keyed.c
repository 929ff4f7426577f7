/* C tests of what only a keyed table in a file has (test_shared.c runs the tests both
 * kinds share): its capacity and its kind are part of the file's identity, and processes
 * killed (SIGKILL) in the middle of inserting keys leave a table in which every key still
 * decides and every slot can be taken again. Real processes (fork) and real files in a
 * directory of their own. Run by `cargo test` (tests/c_api.rs) and by scripts/c-tests.sh
 * under valgrind and ASan/UBSan.
 *
 * Every expected value is worked out by hand from the contract (docs/decision.md,
 * docs/keyed.md, docs/shared.md, include/rate.h). Decisions are written
 * {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns}.
 *
 * Build: cc -std=c99 -Wall -Wextra -Wpedantic -Werror -pthread -Iinclude
 *        tests/c/test_shared_keyed.c -lrate
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>

#include "shared.h"

/* ---- the file's identity ------------------------------------------------------------- */

static int test_another_capacity_is_incompatible_and_untouched(void) {
    static const struct kind others[] = {
        {"capacity 1", 1, keyed_keys, 3},
        {"capacity 63", 63, keyed_keys, 3},
        {"capacity 65", 65, keyed_keys, 3},
        {"capacity 128", 128, keyed_keys, 3},
    };
    char path[600], none[600];
    unsigned char *before;
    size_t len = 0, i;
    int untouched = 0;
    int32_t status;
    before = make_table(KEYED, in_scratch(path, sizeof path, "capacity-64"), &len);
    CHECK(before != NULL);
    for (i = 0; i < sizeof others / sizeof others[0]; i++) {
        status = open_with_sentinel(&others[i], path, &GCRA_10, &untouched);
        if (status != RATE_E_INCOMPATIBLE || !untouched || !file_is(path, before, len)) {
            fprintf(stderr, "%s: status %" PRId32 " (%s), not refused untouched\n",
                    others[i].name, status, rate_status_str(status));
            free(before);
            return 1;
        }
    }
    free(before);
    /* Capacity 0 is no table: an invalid configuration, before any file is made. */
    in_scratch(none, sizeof none, "capacity-0");
    {
        rate_keyed *out = NULL;
        CHECK_STATUS(rate_keyed_open(none, &GCRA_10, 0, &out), RATE_E_INVALID_CONFIG);
        CHECK(out == NULL);
    }
    CHECK(access(none, F_OK) != 0 && errno == ENOENT);
    return 0;
}

/* A limiter's file opened as a keyed table of the same configuration, and a keyed
 * table's opened as a limiter: refused both ways, both files unchanged. */
static int test_a_limiter_and_a_keyed_table_are_not_each_other(void) {
    char limiter[600], keyed[600];
    unsigned char *limiter_bytes, *keyed_bytes;
    size_t limiter_len = 0, keyed_len = 0;
    int failed = 0;
    limiter_bytes = make_table(LIMITER, in_scratch(limiter, sizeof limiter, "limiter"),
                               &limiter_len);
    keyed_bytes = make_table(KEYED, in_scratch(keyed, sizeof keyed, "keyed"), &keyed_len);
    if (limiter_bytes != NULL && keyed_bytes != NULL) {
        int untouched = 0;
        failed |= open_with_sentinel(KEYED, limiter, &GCRA_10, &untouched) != RATE_E_INCOMPATIBLE;
        failed |= !untouched;
        failed |= open_with_sentinel(LIMITER, keyed, &GCRA_10, &untouched) != RATE_E_INCOMPATIBLE;
        failed |= !untouched;
        failed |= !file_is(limiter, limiter_bytes, limiter_len);
        failed |= !file_is(keyed, keyed_bytes, keyed_len);
    }
    CHECK(limiter_bytes != NULL && keyed_bytes != NULL);
    free(limiter_bytes);
    free(keyed_bytes);
    CHECK(!failed);
    return 0;
}

/* ---- processes killed while they insert ---------------------------------------------- */

/* The crash test's tables: 2 units a second per key, so that a key inserted at t is fresh
 * again (reclaimable) 1 s later, or 2 s for the sliding window; the inserters' times move
 * on by 1/8 s a key, so they keep reclaiming slots as well as filling them. */
#define KILL_LIMIT 2
#define CAPACITY 256
/* Slots of a table of CAPACITY: rate_keyed_open documents "capacity keys whose state is
 * not fresh, and up to twice that many". */
#define TABLE_KEYS (2 * CAPACITY)
/* Far enough after everything the inserters did (under an hour past FROZEN) that every
 * key is fresh, and a whole number of seconds: at the start of a window. */
#define LATER (FROZEN + UINT64_C(1000000) * SECOND)
/* Rounds of kills for GCRA. A process killed inside an insert leaves its entry in the
 * table's registry of claims (64 entries) taken: measured, 3 to 4 of the 4 processes of
 * a round. Over this many rounds the registry would fill (it did by round 16 in a library
 * built not to take entries over) unless later inserts take over the entries of dead
 * processes. The registry is the same for every algorithm; the others run ROUNDS_OTHERS,
 * for what a dead insert leaves in their state. */
#define ROUNDS_GCRA 40
#define ROUNDS_OTHERS 6
#define INSERTERS (PROCESSES * THREADS)

/* One algorithm's table, and the admission of a new key at LATER (L=2, P=1 s): remaining
 * 1 for all; reset_after: GCRA (B = L = 2, T = 500 ms) the debt T; the fixed window the
 * next window, 1 s away; the sliding window the start of window k+2, 2 s away (in window
 * k+1 the 1 of window k still weighs: floor((2P - (P - e)) / P) = 1 for e < P); the log
 * the moment its entry leaves (t - P, t]: 1 s. */
struct kill_case {
    const char *name;
    rate_config config;
    uint64_t reset_after_ns;
    unsigned rounds;
};

static const struct kill_case kill_cases[] = {
    {"gcra", {RATE_GCRA, KILL_LIMIT, SECOND, 0}, 500 * MS, ROUNDS_GCRA},
    {"fixed window", {RATE_FIXED_WINDOW, KILL_LIMIT, SECOND, 0}, SECOND, ROUNDS_OTHERS},
    {"sliding window", {RATE_SLIDING_WINDOW, KILL_LIMIT, SECOND, 0}, 2 * SECOND, ROUNDS_OTHERS},
    {"sliding log", {RATE_SLIDING_LOG, KILL_LIMIT, SECOND, 0}, SECOND, ROUNDS_OTHERS},
};

/* Memory the parent maps (anonymous, MAP_SHARED) before it forks: a process-shared
 * barrier that starts every inserter together, once all are made (so that none is kept
 * from starting by the others' work), and how many keys each inserter has begun. An
 * inserter writes its own count before each insert; the parent reads them once the
 * inserters are killed and reaped. */
struct progress {
    pthread_barrier_t start;
    volatile uint64_t begun[INSERTERS];
};

struct inserter {
    rate_keyed *table;
    unsigned round, index;
    struct progress *progress;
    int ready; /* the pipe's write end: a byte once this inserter is at the start */
};

/* The i-th key inserter `index` of round `round` begins. */
static void key_name(char *buf, size_t size, unsigned round, unsigned index, uint64_t i) {
    snprintf(buf, size, "%u-%u-%" PRIu64, round, index, i);
}

/* Inserts new keys without pause, the i-th at FROZEN + i/8 s, until the process is
 * killed; whatever a call returns (a table full of live keys included) is fine. */
static void *insert_until_killed(void *arg) {
    struct inserter *w = arg;
    uint64_t i;
    if (write(w->ready, "", 1) != 1 || close(w->ready) != 0)
        abort();
    pthread_barrier_wait(&w->progress->start);
    for (i = 0;; i++) {
        char key[64];
        key_name(key, sizeof key, w->round, w->index, i);
        w->progress->begun[w->index] = i + 1;
        (void)rate_keyed_acquire_at(w->table, (const uint8_t *)key, strlen(key), 1,
                                    FROZEN + i * (SECOND / 8), NULL);
    }
    return NULL;
}

/* A child process of round `round`: opens the table and runs THREADS inserters until it
 * is killed. It never returns. */
static void child_inserts(const struct kill_case *c, const char *path, unsigned round,
                          unsigned process, struct progress *progress, int ready) {
    struct inserter inserters[THREADS];
    pthread_t threads[THREADS];
    rate_keyed *table = NULL;
    unsigned i;
    alarm(60); /* a safety net: never outlive the test if it forgets this child */
    if (rate_keyed_open(path, &c->config, CAPACITY, &table) != RATE_OK)
        _exit(3);
    for (i = 0; i < THREADS; i++) {
        inserters[i].table = table;
        inserters[i].round = round;
        inserters[i].index = process * THREADS + i;
        inserters[i].progress = progress;
        /* Each its own descriptor: the first may close its own before the last starts. */
        if ((inserters[i].ready = dup(ready)) < 0)
            _exit(4);
    }
    close(ready);
    for (i = 0; i < THREADS; i++)
        if (pthread_create(&threads[i], NULL, insert_until_killed, &inserters[i]) != 0)
            _exit(4);
    pthread_join(threads[0], NULL); /* never returns: the inserters loop until killed */
    _exit(5);
}

static uint64_t rng_state;

/* xorshift64*: the kills' moments, from a seed printed with the case. */
static uint64_t next_random(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(0x2545F4914F6CDD1D);
}

/* One round: PROCESSES inserting processes, killed together at a random moment after
 * every inserter has started. Copies how many keys each inserter began into `begun`. */
static int kill_inserters(const struct kill_case *c, const char *path, unsigned round,
                          uint64_t begun[INSERTERS]) {
    struct progress *progress;
    pid_t pids[PROCESSES];
    int ready[2];
    unsigned forked, i, signalled = 0;
    char byte;
    int failed = 0;
    struct timespec pause = {0, 0};
    pthread_barrierattr_t shared;
    progress = mmap(NULL, sizeof *progress, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                    -1, 0);
    CHECK(progress != MAP_FAILED);
    if (pthread_barrierattr_init(&shared) != 0 ||
        pthread_barrierattr_setpshared(&shared, PTHREAD_PROCESS_SHARED) != 0 ||
        pthread_barrier_init(&progress->start, &shared, INSERTERS) != 0 || pipe(ready) != 0) {
        munmap(progress, sizeof *progress);
        CHECK(!"a process-shared barrier and a pipe");
    }
    pthread_barrierattr_destroy(&shared);
    fflush(NULL);
    for (forked = 0; forked < PROCESSES; forked++) {
        pids[forked] = fork();
        if (pids[forked] < 0)
            break;
        if (pids[forked] == 0) {
            close(ready[0]);
            child_inserts(c, path, round, forked, progress, ready[1]);
        }
    }
    close(ready[1]);
    /* A byte from every inserter at the start (EOF early: every child died); each
     * child's alarm bounds the wait. */
    for (i = 0; forked == PROCESSES && i < INSERTERS; i++)
        if (read(ready[0], &byte, 1) != 1)
            failed = 1;
    close(ready[0]);
    pause.tv_nsec = (long)(next_random() % (10 * MS));
    nanosleep(&pause, NULL);
    for (i = 0; i < forked; i++) {
        int status;
        kill(pids[i], SIGKILL);
        if (waitpid(pids[i], &status, 0) == pids[i] && WIFSIGNALED(status) &&
            WTERMSIG(status) == SIGKILL)
            signalled++;
        else
            fprintf(stderr, "inserter %ld: status 0x%x, not killed\n", (long)pids[i], status);
    }
    for (i = 0; i < INSERTERS; i++)
        begun[i] = progress->begun[i];
    /* Not pthread_barrier_destroy: glibc's waits until every waiter has left the barrier's
     * code, which a waiter killed on its way out never does. Unmapping is all it needs. */
    munmap(progress, sizeof *progress);
    CHECK_EQ_U64(forked, PROCESSES);
    CHECK(!failed);
    CHECK_EQ_U64(signalled, PROCESSES);
    return 0;
}

/* After the rounds: every key any inserter began still decides, at once (a query at LATER,
 * when each is fresh: admitted, 2 of 2 left, nothing to wait for), and the table takes
 * TABLE_KEYS new keys, each admitted as a new key is, then refuses one more: no slot is
 * left claimed for good by a killed process. A full table still answers queries. */
static int check_usable(const struct kill_case *c, const char *path,
                        uint64_t begun[][INSERTERS], unsigned rounds) {
    const rate_decision fresh = {1, KILL_LIMIT, KILL_LIMIT, 0, 0, 0};
    const rate_decision admitted = {1, KILL_LIMIT, 1, 0, c->reset_after_ns, 0};
    rate_keyed *table = NULL;
    char key[64];
    unsigned round, inserter;
    uint64_t i, keys = 0;
    rate_decision d = {0, 0, 0, 0, 0, 0};
    int32_t status = RATE_OK;
    CHECK_STATUS(rate_keyed_open(path, &c->config, CAPACITY, &table), RATE_OK);
    for (round = 0; round < rounds; round++) {
        for (inserter = 0; inserter < INSERTERS; inserter++) {
            for (i = 0; i < begun[round][inserter]; i++, keys++) {
                key_name(key, sizeof key, round, inserter, i);
                status = rate_keyed_acquire_at(table, (const uint8_t *)key, strlen(key), 0,
                                               LATER, &d);
                if (status != RATE_OK || !same_decision(&d, &fresh))
                    goto failed;
            }
        }
    }
    printf("  %s: %" PRIu64 " keys begun over %u rounds all decide\n", c->name, keys, rounds);
    for (i = 0; i < TABLE_KEYS; i++) {
        snprintf(key, sizeof key, "after-%" PRIu64, i);
        status = rate_keyed_acquire_at(table, (const uint8_t *)key, strlen(key), 1, LATER, &d);
        if (status != RATE_OK || !same_decision(&d, &admitted))
            goto failed;
    }
    status = rate_keyed_acquire_at(table, (const uint8_t *)"one too many", 12, 1, LATER, NULL);
    if (status != RATE_E_TABLE_FULL) {
        snprintf(key, sizeof key, "one too many");
        goto failed;
    }
    key_name(key, sizeof key, 0, 0, 0);
    status = rate_keyed_acquire_at(table, (const uint8_t *)key, strlen(key), 0, LATER, &d);
    rate_keyed_free(table);
    CHECK_STATUS(status, RATE_OK);
    CHECK_DECISION(d, 1, KILL_LIMIT, KILL_LIMIT, 0, 0, 0);
    return 0;
failed:
    rate_keyed_free(table);
    fprintf(stderr, "%s: key \"%s\": status %" PRId32 " (%s), {%u, %" PRIu64 ", %" PRIu64
            ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 "}\n", c->name, key, status,
            rate_status_str(status), (unsigned)d.allowed, d.limit, d.remaining,
            d.retry_after_ns, d.reset_after_ns, d.wait_ns);
    return 1;
}

static int test_killed_inserters_leave_a_usable_table(void) {
    static uint64_t begun[ROUNDS_GCRA][INSERTERS];
    char path[600];
    size_t k;
    unsigned round;
    uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
    printf("  seed %" PRIu64 "\n", seed);
    rng_state = seed | 1;
    /* A safety net, not a time limit: a table that makes a call wait for good (on a slot
     * or a registry entry no live process will free) ends the program with SIGALRM. */
    alarm(300);
    for (k = 0; k < sizeof kill_cases / sizeof kill_cases[0]; k++) {
        const struct kill_case *c = &kill_cases[k];
        rate_keyed *table = NULL;
        in_scratch(path, sizeof path, c->name);
        CHECK_STATUS(rate_keyed_open(path, &c->config, CAPACITY, &table), RATE_OK);
        rate_keyed_free(table);
        for (round = 0; round < c->rounds; round++)
            if (kill_inserters(c, path, round, begun[round]) != 0) {
                fprintf(stderr, "  ^ in %s, round %u\n", c->name, round);
                return 1;
            }
        if (check_usable(c, path, begun, c->rounds) != 0)
            return 1;
    }
    alarm(0);
    return 0;
}

/* A shared table's rule is the file's, which every process checks when it opens it: a
 * change is made in the file, after which openers must give the new rule. k takes 1 of
 * 10 at 0 (9 tokens); 1 a second (T = tau = 1 s) caps them at 1, a full bucket. */
static int test_a_change_of_rule_changes_the_file(void) {
    rate_config tighter = GCRA_10;
    rate_keyed *table = NULL;
    rate_decision d;
    int32_t statuses[2];
    char path[600];
    tighter.limit = 1;
    CHECK_STATUS(rate_keyed_open(in_scratch(path, sizeof path, "change"), &GCRA_10, 64, &table),
                 RATE_OK);
    CHECK_STATUS(rate_keyed_acquire_at(table, (const uint8_t *)"k", 1, 1, 0, NULL), RATE_OK);
    statuses[0] = rate_keyed_set_config_at(table, &tighter, 0);
    statuses[1] = rate_keyed_acquire_at(table, (const uint8_t *)"k", 1, 0, 0, &d);
    rate_keyed_free(table);
    CHECK_STATUS(statuses[0], RATE_OK);
    CHECK_STATUS(statuses[1], RATE_OK);
    CHECK_DECISION(d, 1, 1, 1, 0, 0, 0);
    CHECK_OPEN_FAILS(KEYED, path, &GCRA_10, RATE_E_INCOMPATIBLE);
    CHECK_STATUS(rate_keyed_open(path, &tighter, 64, &table), RATE_OK);
    statuses[0] = rate_keyed_acquire_at(table, (const uint8_t *)"k", 1, 1, 0, &d);
    rate_keyed_free(table);
    CHECK_STATUS(statuses[0], RATE_OK);
    CHECK_DECISION(d, 1, 1, 0, 0, SECOND, 0);
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_a_change_of_rule_changes_the_file),
        TEST_CASE(test_another_capacity_is_incompatible_and_untouched),
        TEST_CASE(test_a_limiter_and_a_keyed_table_are_not_each_other),
        TEST_CASE(test_killed_inserters_leave_a_usable_table),
    };
    return run_in_scratch("test_shared_keyed", cases, sizeof cases / sizeof cases[0]);
}
