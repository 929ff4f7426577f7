/* C tests of tables shared between processes through a file, limiters
 * (rate_limiter_open) and keyed tables (rate_keyed_open) alike: every test runs on both
 * kinds (test_shared_keyed.c has what only a keyed table has). Real processes (fork) and
 * real files in a directory of their own (mkdtemp, removed at the end). Run by `cargo
 * test` (tests/c_api.rs) and by scripts/c-tests.sh under valgrind (which follows fork:
 * each child is checked for errors and leaks as it exits) and ASan/UBSan.
 *
 * Every expected value is worked out by hand from the contract (docs/decision.md,
 * docs/shared.md, include/rate.h), with the arithmetic in a comment. Decisions are written
 * {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns}.
 *
 * Run as root (as CI often is), the mode bits do not stop the test itself (root passes
 * every permission check), so "another user cannot attach" forks a child that becomes
 * the user nobody (65534) and tries; run as another user, a file made unreadable (mode
 * 000) is refused instead.
 *
 * Build: cc -std=c99 -Wall -Wextra -Wpedantic -Werror -pthread -Iinclude
 *        tests/c/test_shared.c -lrate
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* setgroups (grp.h), MAP_ANONYMOUS */

#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include "shared.h"

/* Units every shared limit below admits at one instant. */
#define LIMIT 10000
/* The most keys a kind takes units of (shared.h's `kinds`). */
#define MAX_KEYS 3
/* The user nobody, who owns none of the files made here. */
#define NOBODY 65534

/* ---- 4 processes x 4 threads on one file ----------------------------------------------- */

/* One algorithm's shared limiter, and what its decisions at FROZEN must be. Every config
 * admits LIMIT units at one instant (worked out in `shared_cases`), the k-th admission
 * leaving remaining = LIMIT - k. */
struct shared_case {
    const char *name;
    rate_config config;
    rate_decision denied;    /* every denial once the LIMIT units are taken */
    uint64_t reset_base;     /* an admission's reset_after_ns is reset_base plus */
    uint64_t reset_per_unit; /* this for each of the LIMIT units taken so far */
};

static const struct shared_case shared_cases[] = {
    /* GCRA L=10, P=1 h, B=10000: T = 360 s, tau = 10000*T. At a frozen t the k-th
     * admission leaves TAT = t + k*T; the next is admitted iff (k+1)*T <= 10000*T: exactly
     * 10000 (the burst, not the limit). Admitted: debt k*T, remaining
     * floor((10000*T - k*T)/T) = 10000 - k, reset = debt = (10000 - remaining)*T. Denied:
     * debt 10000*T = 3,600,000 s, retry = T. */
    {"gcra",
     {RATE_GCRA, 10, HOUR, LIMIT},
     {0, LIMIT, 0, 360 * SECOND, LIMIT * 360 * SECOND, 0},
     0,
     360 * SECOND},
    /* Fixed window L=10000, P=1 h: t = 1000 s is in window [0, 3600 s): 10000 admitted,
     * each leaving 10000 - count. Retry and reset: the next window, 3600 - 1000 = 2600 s
     * away. */
    {"fixed window",
     {RATE_FIXED_WINDOW, LIMIT, HOUR, 0},
     {0, LIMIT, 0, 2600 * SECOND, 2600 * SECOND, 0},
     2600 * SECOND,
     0},
    /* Sliding window L=10000, P=1 h: k = 0, e = 1000 s, prev = 0: admitted iff
     * (cur + 1)*P <= 10000*P: 10000 admitted, each leaving 10000 - cur. Denied at
     * cur = 10000: in window 1 (prev = 10000, e' = t + d - P) one unit is admitted iff
     * 10000*(P - e') + P <= 10000*P iff e' >= P/10000 = 360 ms: retry = 2600 s + 360 ms.
     * remaining == 10000 needs the weight of prev to be 0: window 2, 7200 - 1000 = 6200 s
     * away, for denials and admissions alike. */
    {"sliding window",
     {RATE_SLIDING_WINDOW, LIMIT, HOUR, 0},
     {0, LIMIT, 0, 2600 * SECOND + 360 * MS, 6200 * SECOND, 0},
     6200 * SECOND,
     0},
    /* Sliding log L=10000, P=1 h: 10000 timestamps at t, each admission leaving
     * 10000 - count. They all leave the window (t' - P, t'] at t' = t + P: retry = reset
     * = 3600 s. */
    {"sliding log",
     {RATE_SLIDING_LOG, LIMIT, HOUR, 0},
     {0, LIMIT, 0, HOUR, HOUR, 0},
     HOUR,
     0},
};

/* What one thread of one child counts. */
struct tally {
    uint32_t admitted;
    uint32_t failures; /* statuses or decisions that broke the rules */
    uint8_t seen[MAX_KEYS][LIMIT]; /* admissions of each key by the `remaining` they left
                                      (saturating) */
};

/* Memory the parent maps (anonymous, MAP_SHARED) before it forks, so every child sees it:
 * a process-shared barrier that starts all PROCESSES x THREADS threads together, once each
 * has its process's mapping of the file, and a tally per thread. Each thread writes only
 * its own tally; the parent reads them once waitpid has reaped every child. */
struct run {
    pthread_barrier_t start;
    struct tally tallies[PROCESSES * THREADS];
};

struct worker {
    const struct shared_case *c;
    const struct kind *kind;
    const struct table *table;
    size_t first_key; /* the key this thread starts at */
    pthread_barrier_t *start;
    struct tally *tally;
};

/* The decision an admission leaving `remaining` must carry. */
static rate_decision admitted_decision(const struct shared_case *c, uint64_t remaining) {
    rate_decision d = {1, LIMIT, 0, 0, 0, 0};
    d.remaining = remaining;
    d.reset_after_ns = c->reset_base + (LIMIT - remaining) * c->reset_per_unit;
    return d;
}

/* Counts a failure, describing the first of each thread on stderr. */
static void fail(struct tally *t, const char *what, int32_t status, const rate_decision *d) {
    if (t->failures++ == 0)
        fprintf(stderr,
                "%s: status %" PRId32 " (%s), {%u, %" PRIu64 ", %" PRIu64 ", %" PRIu64
                ", %" PRIu64 ", %" PRIu64 "}\n",
                what, status, rate_status_str(status), (unsigned)d->allowed, d->limit,
                d->remaining, d->retry_after_ns, d->reset_after_ns, d->wait_ns);
}

/* One thread: 1 unit of each key in turn at FROZEN, until each key has been denied once
 * (at a frozen time nothing is admitted after a denial: the state only fills). */
static void *take_until_denied(void *arg) {
    struct worker *w = arg;
    struct tally *t = w->tally;
    int denied[MAX_KEYS] = {0};
    size_t pending = w->kind->key_count, turn;
    pthread_barrier_wait(w->start);
    for (turn = w->first_key; pending > 0; turn++) {
        size_t key = turn % w->kind->key_count;
        rate_decision d;
        int32_t status;
        if (denied[key])
            continue;
        status = table_acquire_at(w->table, w->kind->keys[key], 1, FROZEN, &d);
        if (status == RATE_OK && d.remaining < LIMIT) {
            rate_decision expected = admitted_decision(w->c, d.remaining);
            if (!same_decision(&d, &expected))
                fail(t, "admitted", status, &d);
            if (t->seen[key][d.remaining] < UINT8_MAX)
                t->seen[key][d.remaining]++;
            t->admitted++;
            /* With fewer cores than threads, a thread could take all LIMIT units in one
             * time slice; yielding now and then makes the processes interleave. */
            if (t->admitted % 16 == 0)
                sched_yield();
        } else {
            if (status != RATE_LIMITED || !same_decision(&d, &w->c->denied))
                fail(t, "denied", status, &d);
            if (status != RATE_LIMITED)
                return NULL; /* an error would repeat for ever */
            denied[key] = 1;
            pending--;
        }
    }
    return NULL;
}

/* A child process: opens `path` as `kind` (racing its siblings to create it) and runs
 * THREADS threads, which start with every other child's on `run->start` and count into
 * `tallies`. Exit status 0 unless something failed. If the open fails, the threads still
 * meet the others at the barrier (then fail on the missing handle), so no process waits
 * forever. */
static int child_takes(const struct kind *kind, const struct shared_case *c, const char *path,
                       struct run *run, struct tally *tallies) {
    struct worker workers[THREADS];
    pthread_t threads[THREADS];
    struct table table;
    int failed = 0;
    int32_t status;
    size_t i;
    /* A safety net, not a time limit: a child stuck for a minute (the whole program takes
     * well under a second, a few under valgrind) is killed and the parent reports it. */
    alarm(60);
    status = table_open(kind, path, &c->config, &table);
    if (status != RATE_OK) {
        fprintf(stderr, "open returned %" PRId32 " (%s), errno %d\n", status,
                rate_status_str(status), errno);
        failed = 1;
    }
    for (i = 0; i < THREADS; i++) {
        workers[i].c = c;
        workers[i].kind = kind;
        workers[i].table = &table;
        workers[i].first_key = i;
        workers[i].start = &run->start;
        workers[i].tally = &tallies[i];
        if (pthread_create(&threads[i], NULL, take_until_denied, &workers[i]) != 0)
            abort(); /* the barrier would never open: let the parent see a signal */
    }
    for (i = 0; i < THREADS; i++)
        failed |= pthread_join(threads[i], NULL) != 0;
    table_free(&table);
    return failed;
}

/* Runs PROCESSES children of THREADS threads on a fresh `path` of `kind` for case `c` and
 * checks their tallies: LIMIT units of each key admitted between them, and each
 * `remaining` from LIMIT-1 down to 0 left by exactly one admission of the key, so every
 * admission saw a state of its own: one limit per key, not one per process. */
static int run_processes(const struct kind *kind, const struct shared_case *c,
                         const char *path) {
    struct run *run;
    pthread_barrierattr_t shared;
    pid_t pids[PROCESSES];
    uint64_t per_process[PROCESSES] = {0};
    int failed = 0;
    size_t forked, i, j, key;
    run = mmap(NULL, sizeof *run, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(run != MAP_FAILED); /* zero-filled */
    if (pthread_barrierattr_init(&shared) != 0 ||
        pthread_barrierattr_setpshared(&shared, PTHREAD_PROCESS_SHARED) != 0 ||
        pthread_barrier_init(&run->start, &shared, PROCESSES * THREADS) != 0) {
        munmap(run, sizeof *run);
        CHECK(!"a process-shared barrier");
    }
    pthread_barrierattr_destroy(&shared);
    fflush(NULL); /* nothing buffered is written twice */
    for (forked = 0; forked < PROCESSES; forked++) {
        pids[forked] = fork();
        if (pids[forked] < 0) {
            /* The children already forked wait at the barrier until their alarm. */
            fprintf(stderr, "fork failed: %s\n", strerror(errno));
            failed = 1;
            break;
        }
        if (pids[forked] == 0) {
            /* exit, not _exit: valgrind and LeakSanitizer check the child's leaks. */
            exit(child_takes(kind, c, path, run, &run->tallies[forked * THREADS]));
        }
    }
    for (i = 0; i < forked; i++)
        failed |= wait_exit(pids[i]) != 0;
    for (i = 0; i < PROCESSES * THREADS; i++) {
        failed |= run->tallies[i].failures != 0;
        per_process[i / THREADS] += run->tallies[i].admitted;
    }
    for (key = 0; key < kind->key_count; key++) {
        for (j = 0; j < LIMIT && !failed; j++) {
            unsigned times = 0;
            for (i = 0; i < PROCESSES * THREADS; i++)
                times += run->tallies[i].seen[key][j];
            if (times != 1) {
                fprintf(stderr, "key \"%s\": %u admissions left remaining = %zu, expected 1\n",
                        kind->keys[key], times, j);
                failed = 1;
            }
        }
    }
    pthread_barrier_destroy(&run->start);
    munmap(run, sizeof *run);
    /* Not a requirement, but worth seeing that the processes did interleave. */
    printf("  %s, %s: admitted per process", kind->name, c->name);
    for (i = 0; i < PROCESSES; i++)
        printf(" %" PRIu64, per_process[i]);
    printf("\n");
    CHECK(!failed);
    CHECK_EQ_U64(per_process[0] + per_process[1] + per_process[2] + per_process[3],
                 LIMIT * kind->key_count);
    return 0;
}

/* After run_processes: one file and no temporary one, mode 0600, and the state outlives
 * the processes: a later opener finds every key used up. A query (n = 0) is admitted,
 * changes nothing, and reports the denials' state. */
static int check_used_up(const struct kind *kind, const struct shared_case *c, const char *dir,
                         const char *path) {
    struct table later;
    struct stat st;
    rate_decision queries[MAX_KEYS];
    int32_t statuses[MAX_KEYS], denials[MAX_KEYS];
    size_t key;
    CHECK_EQ_U64(entries(dir), 1);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ_U64(st.st_mode & 07777, 0600);
    CHECK_STATUS(table_open(kind, path, &c->config, &later), RATE_OK);
    for (key = 0; key < kind->key_count; key++) {
        statuses[key] = table_acquire_at(&later, kind->keys[key], 0, FROZEN, &queries[key]);
        denials[key] = table_acquire_at(&later, kind->keys[key], 1, FROZEN, NULL);
    }
    table_free(&later);
    for (key = 0; key < kind->key_count; key++) {
        CHECK_STATUS(statuses[key], RATE_OK);
        CHECK_DECISION(queries[key], 1, LIMIT, 0, 0, c->denied.reset_after_ns, 0);
        CHECK_STATUS(denials[key], RATE_LIMITED);
    }
    return 0;
}

static int test_processes_and_threads_share_one_limit(void) {
    char name[64], dir[600], path[700];
    size_t i, k;
    for (k = 0; k < KINDS; k++) {
        for (i = 0; i < sizeof shared_cases / sizeof shared_cases[0]; i++) {
            const struct shared_case *c = &shared_cases[i];
            snprintf(name, sizeof name, "%s %s", kinds[k].name, c->name);
            snprintf(path, sizeof path, "%s/table", in_scratch(dir, sizeof dir, name));
            CHECK(mkdir(dir, 0700) == 0);
            if (run_processes(&kinds[k], c, path) != 0 ||
                check_used_up(&kinds[k], c, dir, path) != 0) {
                fprintf(stderr, "  ^ in case %s\n", name);
                return 1;
            }
            CHECK(remove_tree(dir) == 0);
        }
    }
    return 0;
}

/* ---- files that are not this table ------------------------------------------------------ */

/* Runs `test` on each kind of table: 0 if it passed on every one. */
static int on_every_kind(int (*test)(const struct kind *)) {
    size_t k;
    for (k = 0; k < KINDS; k++) {
        if (test(&kinds[k]) != 0) {
            fprintf(stderr, "  ^ on a %s\n", kinds[k].name);
            return 1;
        }
    }
    return 0;
}

static int test_null_arguments_are_e_null(void) {
    char path[600];
    size_t k;
    struct table table;
    in_scratch(path, sizeof path, "null");
    for (k = 0; k < KINDS; k++) {
        CHECK_OPEN_FAILS(&kinds[k], NULL, &GCRA_10, RATE_E_NULL);
        CHECK_OPEN_FAILS(&kinds[k], path, NULL, RATE_E_NULL);
    }
    CHECK_STATUS(rate_limiter_open(path, &GCRA_10, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_open(path, &GCRA_10, 64, NULL), RATE_E_NULL);
    /* Nothing was created on the way, and a handle from no file is none. */
    CHECK(access(path, F_OK) != 0 && errno == ENOENT);
    CHECK_STATUS(table_open(KEYED, NULL, &GCRA_10, &table), RATE_E_NULL);
    CHECK(table.keyed == NULL && table.limiter == NULL);
    return 0;
}

static int test_invalid_config_creates_nothing(void) {
    static const rate_config invalid = {RATE_GCRA, 0, SECOND, 0}; /* L = 0 */
    char path[600];
    size_t k;
    in_scratch(path, sizeof path, "invalid");
    for (k = 0; k < KINDS; k++)
        CHECK_OPEN_FAILS(&kinds[k], path, &invalid, RATE_E_INVALID_CONFIG);
    CHECK(access(path, F_OK) != 0 && errno == ENOENT);
    return 0;
}

/* A GCRA_10 table of `kind` (made by make_table), then every configuration that differs
 * in one field the file records: refused, the file unchanged. */
static int another_config_is_refused(const struct kind *kind) {
    static const rate_config others[] = {
        {RATE_GCRA, 11, SECOND, 0},           /* limit */
        {RATE_GCRA, 10, 2 * SECOND, 0},       /* period */
        {RATE_GCRA, 10, SECOND, 5},           /* burst */
        {RATE_GCRA, 10, SECOND, 11},          /* burst */
        {RATE_FIXED_WINDOW, 10, SECOND, 0},   /* algorithm */
        {RATE_SLIDING_WINDOW, 10, SECOND, 0}, /* algorithm */
        {RATE_SLIDING_LOG, 10, SECOND, 0},    /* algorithm */
    };
    static const rate_config same = {RATE_GCRA, 10, SECOND, 10}; /* B = 10 is B = 0 */
    unsigned char *before;
    size_t len = 0, i;
    struct table table;
    rate_decision d;
    int32_t status;
    int unchanged;
    char path[600];
    before = make_table(kind, in_scratch(path, sizeof path, kind->name), &len);
    CHECK(before != NULL);
    for (i = 0; i < sizeof others / sizeof others[0]; i++) {
        int untouched = 0;
        status = open_with_sentinel(kind, path, &others[i], &untouched);
        if (status != RATE_E_INCOMPATIBLE || !untouched || !file_is(path, before, len)) {
            fprintf(stderr, "%s, other config %zu: status %" PRId32 ", file %s\n", kind->name,
                    i, status, file_is(path, before, len) ? "unchanged" : "CHANGED");
            free(before);
            return 1;
        }
    }
    /* Burst 10 is what burst 0 means for L = 10: the same table, with the 3 units taken at
     * 1 s: T = 100 ms, TAT = 1.3 s, remaining floor((1 s - 0.3 s) / 100 ms) = 7. */
    status = table_open(kind, path, &same, &table);
    if (status == RATE_OK)
        status = table_acquire_at(&table, kind->keys[0], 0, SECOND, &d);
    table_free(&table);
    unchanged = file_is(path, before, len);
    free(before);
    CHECK_STATUS(status, RATE_OK);
    CHECK(unchanged);
    CHECK_DECISION(d, 1, 10, 7, 0, 300 * MS, 0);
    return 0;
}

static int test_another_config_is_incompatible_and_untouched(void) {
    return on_every_kind(another_config_is_refused);
}

/* Writes `len` bytes to a new file at `path`, opens it as a GCRA_10 table of `kind`, and
 * removes it: 0 if the open returned RATE_E_INCOMPATIBLE, left the out-handle alone and
 * the bytes as they were. */
static int refused_untouched(const struct kind *kind, const char *path,
                             const unsigned char *bytes, size_t len) {
    int untouched = 0;
    int32_t status = RATE_E_IO;
    int failed = write_file(path, bytes, len, 0600) != 0;
    if (!failed) {
        status = open_with_sentinel(kind, path, &GCRA_10, &untouched);
        failed = status != RATE_E_INCOMPATIBLE || !untouched || !file_is(path, bytes, len);
    }
    if (failed)
        fprintf(stderr, "%s: a file of %zu bytes: status %" PRId32 " (%s), not refused "
                "untouched\n", kind->name, len, status, rate_status_str(status));
    unlink(path);
    return failed;
}

/* The table's own bytes cut short or run long (the header is right, the size not), then
 * pseudo-random bytes and zeros (what a creator that wrote nothing yet would leave) of the
 * very size a table of this configuration has: each refused, untouched. */
static int garbage_is_refused(const struct kind *kind) {
    char model[600], path[600];
    size_t len = 0, i;
    int failed = 0;
    unsigned char *bytes, *table = make_table(kind, in_scratch(model, sizeof model, "model"),
                                              &len);
    CHECK(table != NULL);
    unlink(model);
    /* Room for the table twice over. */
    if ((bytes = realloc(table, 2 * len)) == NULL)
        free(table);
    CHECK(bytes != NULL);
    CHECK(len > 8); /* a header at least */
    in_scratch(path, sizeof path, "not-a-table");
    {
        const size_t sizes[] = {0, 1, len / 2, len - 8, len - 1, len + 1, len + 8, 2 * len};
        memcpy(bytes + len, bytes, len);
        for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            failed |= refused_untouched(kind, path, bytes, sizes[i]);
    }
    for (i = 0; i < len; i++)
        bytes[i] = (unsigned char)(i * 131 % 251);
    failed |= refused_untouched(kind, path, bytes, len);
    memset(bytes, 0, len);
    failed |= refused_untouched(kind, path, bytes, len);
    free(bytes);
    CHECK(!failed);
    return 0;
}

static int test_garbage_or_wrong_size_is_incompatible_and_untouched(void) {
    return on_every_kind(garbage_is_refused);
}

/* ---- what the operating system refuses: RATE_E_IO and errno ---------------------------- */

static int test_directory_is_e_io_eisdir(void) {
    char dir[600], slash[700], plain[600], under_file[700];
    unsigned char *table;
    size_t len = 0, k;
    in_scratch(dir, sizeof dir, "a-directory");
    CHECK(mkdir(dir, 0700) == 0);
    snprintf(slash, sizeof slash, "%s/", dir);
    in_scratch(plain, sizeof plain, "plain");
    table = make_table(LIMITER, plain, &len);
    CHECK(table != NULL);
    free(table);
    snprintf(under_file, sizeof under_file, "%s/table", plain);
    for (k = 0; k < KINDS; k++) {
        /* open(2) for reading and writing refuses a directory: EISDIR. */
        CHECK_OPEN_ERRNO(&kinds[k], dir, &GCRA_10, EISDIR);
        CHECK_OPEN_ERRNO(&kinds[k], slash, &GCRA_10, EISDIR);
        /* A path through a regular file: ENOTDIR. */
        CHECK_OPEN_ERRNO(&kinds[k], under_file, &GCRA_10, ENOTDIR);
    }
    CHECK_EQ_U64(entries(dir), 0); /* nothing made inside it either */
    return 0;
}

static int test_missing_directory_is_e_io_enoent(void) {
    char missing[600], path[700];
    size_t k;
    in_scratch(missing, sizeof missing, "no-such-directory");
    snprintf(path, sizeof path, "%s/table", missing);
    for (k = 0; k < KINDS; k++)
        CHECK_OPEN_ERRNO(&kinds[k], path, &GCRA_10, ENOENT);
    CHECK(access(missing, F_OK) != 0 && errno == ENOENT); /* not created */
    return 0;
}

/* A new file is mode 0600 exactly, whatever the umask, and owned by its creator. */
static int test_new_file_is_mode_0600(void) {
    static const mode_t umasks[] = {0, 022, 0777};
    size_t i, k;
    for (k = 0; k < KINDS; k++) {
        for (i = 0; i < sizeof umasks / sizeof umasks[0]; i++) {
            char name[64], path[600];
            struct table table;
            struct stat st;
            mode_t old;
            int32_t status;
            snprintf(name, sizeof name, "%s-mode-%03o", kinds[k].name, (unsigned)umasks[i]);
            in_scratch(path, sizeof path, name);
            old = umask(umasks[i]);
            status = table_open(&kinds[k], path, &GCRA_10, &table);
            umask(old);
            table_free(&table);
            CHECK_STATUS(status, RATE_OK);
            CHECK(stat(path, &st) == 0);
            CHECK(S_ISREG(st.st_mode));
            CHECK_EQ_U64(st.st_mode & 07777, 0600);
            CHECK_EQ_U64(st.st_uid, geteuid());
        }
    }
    return 0;
}

/* In a child that has become the user nobody: `table` (0600, root's) is refused with
 * EACCES, and `open_copy` (the same bytes, mode 0666) is attached, so it is the mode that
 * refuses, not the directory. Exit status 0 if so, 2 if nobody cannot reach the directory
 * at all (the test cannot tell then), else 1. */
static int as_nobody(const struct kind *kind, const char *table_path, const char *open_copy) {
    struct table table;
    struct stat st;
    int32_t status;
    if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0 ||
        geteuid() != NOBODY) {
        fprintf(stderr, "cannot become nobody: %s\n", strerror(errno));
        return 1;
    }
    if (stat(open_copy, &st) != 0) {
        fprintf(stderr, "nobody cannot reach %s: %s\n", open_copy, strerror(errno));
        return 2;
    }
    errno = 0;
    status = table_open(kind, table_path, &GCRA_10, &table);
    if (status != RATE_E_IO || errno != EACCES) {
        fprintf(stderr, "nobody opening root's 0600 %s: %" PRId32 " (%s), errno %d (%s)\n",
                kind->name, status, rate_status_str(status), errno, strerror(errno));
        table_free(&table);
        return 1;
    }
    status = table_open(kind, open_copy, &GCRA_10, &table);
    if (status != RATE_OK) {
        fprintf(stderr, "nobody opening a 0666 copy: %" PRId32 " (%s), errno %d (%s)\n",
                status, rate_status_str(status), errno, strerror(errno));
        return 1;
    }
    /* The copy's state came along: 3 units taken at 1 s, so 7 left (see make_table). */
    status = table_acquire_at(&table, kind->keys[0], 8, SECOND, NULL);
    table_free(&table);
    if (status != RATE_LIMITED) {
        fprintf(stderr, "8 of the copy's 7 units: %" PRId32 "\n", status);
        return 1;
    }
    return 0;
}

static int another_user_cannot_attach(const struct kind *kind) {
    char table[600], copy[600], name[64];
    unsigned char *bytes;
    size_t len = 0;
    snprintf(name, sizeof name, "%s-private", kind->name);
    in_scratch(table, sizeof table, name);
    snprintf(name, sizeof name, "%s-open-to-all", kind->name);
    in_scratch(copy, sizeof copy, name);
    bytes = make_table(kind, table, &len);
    CHECK(bytes != NULL);
    CHECK(write_file(copy, bytes, len, 0666) == 0);
    free(bytes);
    if (geteuid() != 0) {
        /* Not root: the mode bits stop this very process. Unreadable: EACCES. (As root
         * this check would pass any mode: root is exempt from permission checks.) */
        CHECK(chmod(table, 0) == 0);
        CHECK_OPEN_ERRNO(kind, table, &GCRA_10, EACCES);
        CHECK(chmod(table, 0600) == 0);
        printf("note: not root, so another user's attach was not tried\n");
    } else {
        /* Root: a child that becomes nobody tries. Nobody must be able to search the
         * scratch directory (mkdtemp made it 0700) to reach the files at all. */
        pid_t pid;
        int code;
        CHECK(chmod(scratch, 0711) == 0);
        fflush(NULL);
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0)
            exit(as_nobody(kind, table, copy));
        code = wait_exit(pid);
        CHECK(chmod(scratch, 0700) == 0);
        if (code == 2) {
            printf("note: nobody cannot reach %s (set TMPDIR to a directory anyone may "
                   "search), so another user's attach was not tried\n", scratch);
            return 0;
        }
        CHECK_EQ_U64(code, 0);
    }
    return 0;
}

static int test_another_user_cannot_attach(void) {
    return on_every_kind(another_user_cannot_attach);
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_processes_and_threads_share_one_limit),
        TEST_CASE(test_null_arguments_are_e_null),
        TEST_CASE(test_invalid_config_creates_nothing),
        TEST_CASE(test_another_config_is_incompatible_and_untouched),
        TEST_CASE(test_garbage_or_wrong_size_is_incompatible_and_untouched),
        TEST_CASE(test_directory_is_e_io_eisdir),
        TEST_CASE(test_missing_directory_is_e_io_enoent),
        TEST_CASE(test_new_file_is_mode_0600),
        TEST_CASE(test_another_user_cannot_attach),
    };
    return run_in_scratch("test_shared", cases, sizeof cases / sizeof cases[0]);
}
