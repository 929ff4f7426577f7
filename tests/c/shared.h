/* What the C tests of tables in shared files share (test_shared.c, test_shared_keyed.c):
 * a scratch directory of their own, whole files read, written and compared, children's
 * exit statuses, and the two kinds of table in a file (rate_limiter_open,
 * rate_keyed_open) behind one small interface, so that a test can run on both.
 *
 * The includer defines _POSIX_C_SOURCE 200809L and _DEFAULT_SOURCE before any include.
 */
#ifndef RATE_TESTS_SHARED_H
#define RATE_TESTS_SHARED_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define HOUR (UINT64_C(3600) * SECOND)
/* The frozen time every process decides at: 1000 s into the first hour-long window. */
#define FROZEN (UINT64_C(1000) * SECOND)
#define PROCESSES 4
#define THREADS 4

/* ---- the scratch directory and whole files ------------------------------------------- */

/* The directory every test works in (made by run_in_scratch, removed at the end). */
static char scratch[512];

/* `scratch/name` in `buf`; aborts if it does not fit (a test bug, not a library one). */
static inline const char *in_scratch(char *buf, size_t size, const char *name) {
    int written = snprintf(buf, size, "%s/%s", scratch, name);
    if (written < 0 || (size_t)written >= size)
        abort();
    return buf;
}

/* The whole file at `path` in a new buffer (the caller frees it), or NULL. */
static inline unsigned char *read_file(const char *path, size_t *len) {
    struct stat st;
    unsigned char *bytes;
    size_t got = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) != 0 || (bytes = malloc((size_t)st.st_size + 1)) == NULL) {
        close(fd);
        return NULL;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, bytes + got, (size_t)st.st_size - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (got != (size_t)st.st_size) {
        free(bytes);
        return NULL;
    }
    *len = got;
    return bytes;
}

/* Writes `len` bytes to a new file at `path` with exactly `mode`; 0 on success. */
static inline int write_file(const char *path, const unsigned char *bytes, size_t len,
                             mode_t mode) {
    size_t done = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
    if (fd < 0)
        return -1;
    while (done < len) {
        ssize_t n = write(fd, bytes + done, len - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    /* fchmod: the umask may have taken bits off `mode`. */
    if (fchmod(fd, mode) != 0 || done != len) {
        close(fd);
        return -1;
    }
    return close(fd);
}

/* Whether the file at `path` holds exactly `len` bytes equal to `bytes`. */
static inline int file_is(const char *path, const unsigned char *bytes, size_t len) {
    size_t found_len = 0;
    unsigned char *found = read_file(path, &found_len);
    int same = found != NULL && found_len == len && memcmp(found, bytes, len) == 0;
    free(found);
    return same;
}

/* Number of entries in the directory at `path` besides . and .., or -1. */
static inline long entries(const char *path) {
    long count = 0;
    struct dirent *entry;
    DIR *dir = opendir(path);
    if (dir == NULL)
        return -1;
    while ((entry = readdir(dir)) != NULL)
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0)
            count++;
    closedir(dir);
    return count;
}

/* Removes the file or directory tree at `path`; 0 on success. */
static inline int remove_tree(const char *path) {
    struct stat st;
    struct dirent *entry;
    DIR *dir;
    int failed = 0;
    if (lstat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    if ((dir = opendir(path)) == NULL)
        return -1;
    while ((entry = readdir(dir)) != NULL) {
        char child[1024];
        int written;
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        written = snprintf(child, sizeof child, "%s/%s", path, entry->d_name);
        if (written < 0 || (size_t)written >= sizeof child || remove_tree(child) != 0)
            failed = 1;
    }
    closedir(dir);
    return rmdir(path) != 0 || failed ? -1 : 0;
}

/* Waits for the child `pid`; its exit status, or -1 if it did not exit normally. */
static inline int wait_exit(pid_t pid) {
    int status;
    if (waitpid(pid, &status, 0) != pid) {
        fprintf(stderr, "waitpid(%ld) failed: %s\n", (long)pid, strerror(errno));
        return -1;
    }
    if (!WIFEXITED(status)) {
        fprintf(stderr, "child %ld did not exit (status 0x%x)\n", (long)pid, status);
        return -1;
    }
    return WEXITSTATUS(status);
}

/* Makes the scratch directory (named after `suite`, under $TMPDIR or /tmp), runs the
 * cases, and removes it: the program's exit status. */
static inline int run_in_scratch(const char *suite, const struct test_case *cases,
                                 size_t count) {
    const char *tmp = getenv("TMPDIR");
    int written = snprintf(scratch, sizeof scratch, "%s/librate-%s-XXXXXX",
                           tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", suite);
    int result;
    if (written < 0 || (size_t)written >= sizeof scratch || mkdtemp(scratch) == NULL) {
        fprintf(stderr, "cannot make a scratch directory: %s\n", strerror(errno));
        return 1;
    }
    result = run_tests(suite, cases, count);
    if (remove_tree(scratch) != 0) {
        fprintf(stderr, "cannot remove %s\n", scratch);
        return 1;
    }
    return result;
}

/* Whether two decisions agree in every field (for threads, which cannot CHECK). */
static inline int same_decision(const rate_decision *a, const rate_decision *b) {
    return a->allowed == b->allowed && a->limit == b->limit && a->remaining == b->remaining &&
           a->retry_after_ns == b->retry_after_ns && a->reset_after_ns == b->reset_after_ns &&
           a->wait_ns == b->wait_ns;
}

/* ---- the two kinds of table ---------------------------------------------------------- */

/* A kind of table in a file, and the limits its tests take units of: a limiter has one
 * (its key is ignored), a keyed table one per key, the empty key among them. */
struct kind {
    const char *name;
    uint64_t capacity; /* 0: a limiter (rate_limiter_open); else rate_keyed_open's */
    const char *const *keys;
    size_t key_count;
};

static const char *const limiter_keys[] = {""};
static const char *const keyed_keys[] = {"alice", "bob", ""};
static const struct kind kinds[] = {
    {"limiter", 0, limiter_keys, 1},
    {"keyed", 64, keyed_keys, 3},
};
#define KINDS (sizeof kinds / sizeof kinds[0])
#define KEYED (&kinds[1])
#define LIMITER (&kinds[0])

/* An open table of either kind: one of the two handles is set. */
struct table {
    rate_limiter *limiter;
    rate_keyed *keyed;
};

/* rate_limiter_open or rate_keyed_open into `*table` (zeroed first). */
static inline int32_t table_open(const struct kind *kind, const char *path,
                                 const rate_config *config, struct table *table) {
    table->limiter = NULL;
    table->keyed = NULL;
    if (kind->capacity == 0)
        return rate_limiter_open(path, config, &table->limiter);
    return rate_keyed_open(path, config, kind->capacity, &table->keyed);
}

/* Acquires `n` units of `key` (ignored by a limiter) at `now_ns`. A table that failed to
 * open has no handle: RATE_E_NULL. */
static inline int32_t table_acquire_at(const struct table *table, const char *key, uint64_t n,
                                       uint64_t now_ns, rate_decision *out) {
    if (table->keyed != NULL)
        return rate_keyed_acquire_at(table->keyed, (const uint8_t *)key, strlen(key), n, now_ns,
                                     out);
    return rate_limiter_acquire_at(table->limiter, n, now_ns, out);
}

static inline void table_free(struct table *table) {
    rate_limiter_free(table->limiter);
    rate_keyed_free(table->keyed);
    table->limiter = NULL;
    table->keyed = NULL;
}

/* Opens `path` as `kind` with an out-handle holding a sentinel: the status, with
 * `*untouched` saying whether the sentinel is still there, and errno as the open left it.
 * A handle the open made after all is freed. */
static inline int32_t open_with_sentinel(const struct kind *kind, const char *path,
                                         const rate_config *config, int *untouched) {
    int sentinel = 0;
    rate_limiter *limiter = (rate_limiter *)(void *)&sentinel;
    rate_keyed *keyed = (rate_keyed *)(void *)&sentinel;
    int32_t status = kind->capacity == 0 ? rate_limiter_open(path, config, &limiter)
                                         : rate_keyed_open(path, config, kind->capacity, &keyed);
    int saved = errno;
    *untouched = limiter == (rate_limiter *)(void *)&sentinel &&
                 keyed == (rate_keyed *)(void *)&sentinel;
    if (status == RATE_OK) {
        if (limiter != (rate_limiter *)(void *)&sentinel)
            rate_limiter_free(limiter);
        if (keyed != (rate_keyed *)(void *)&sentinel)
            rate_keyed_free(keyed);
    }
    errno = saved;
    return status;
}

/* Opening `path` as `kind` fails with `expected` and leaves the out-handle alone. */
#define CHECK_OPEN_FAILS(kind, path, config, expected)                                 \
    do {                                                                               \
        int untouched_ = 0;                                                            \
        CHECK_STATUS(open_with_sentinel((kind), (path), (config), &untouched_),        \
                     (expected));                                                      \
        CHECK(untouched_);                                                             \
    } while (0)

/* Opening `path` as `kind` fails with RATE_E_IO, errno `expected_errno`, and leaves the
 * out-handle alone. */
#define CHECK_OPEN_ERRNO(kind, path, config, expected_errno)                           \
    do {                                                                               \
        int untouched_ = 0, errno_;                                                    \
        int32_t status_;                                                               \
        errno = 0;                                                                     \
        status_ = open_with_sentinel((kind), (path), (config), &untouched_);           \
        errno_ = errno;                                                                \
        CHECK_STATUS(status_, RATE_E_IO);                                              \
        if (errno_ != (expected_errno)) {                                              \
            fprintf(stderr, "%s:%d: errno %d (%s), expected %d (%s)\n", __FILE__,      \
                    __LINE__, errno_, strerror(errno_), (expected_errno),              \
                    strerror(expected_errno));                                         \
            return 1;                                                                  \
        }                                                                              \
        CHECK(untouched_);                                                             \
    } while (0)

/* The configuration of the refusal tests' tables: L=10, P=1 s, B=0 meaning 10. */
static const rate_config GCRA_10 = {RATE_GCRA, 10, SECOND, 0};

/* Makes a GCRA_10 table of `kind` at `path` with 3 units of its first key taken at 1 s
 * (so the state is not all zero) and returns its bytes (the caller frees them), or NULL. */
static inline unsigned char *make_table(const struct kind *kind, const char *path,
                                        size_t *len) {
    struct table table;
    int32_t status = table_open(kind, path, &GCRA_10, &table);
    if (status == RATE_OK)
        status = table_acquire_at(&table, kind->keys[0], 3, SECOND, NULL);
    table_free(&table);
    return status == RATE_OK ? read_file(path, len) : NULL;
}

/* Room for any sentence rate_describe_file writes about a file in the scratch directory
 * (its paths are under 700 bytes; what follows a table's path fits RATE_REASON_LEN). */
#define DESCRIPTION_LEN (1024 + RATE_REASON_LEN)

/* `path`'s description in `out` (DESCRIPTION_LEN bytes); the status. */
static inline int32_t describe(const char *path, char *out) {
    return rate_describe_file(path, out, DESCRIPTION_LEN);
}

/* Fails the test unless `path` is described as `path` followed by `rest`. */
#define CHECK_DESCRIBED(path, rest)                                                     \
    do {                                                                                \
        char found_[DESCRIPTION_LEN], expected_[DESCRIPTION_LEN];                       \
        CHECK_STATUS(describe((path), found_), RATE_OK);                                \
        snprintf(expected_, sizeof expected_, "%s%s", (path), (rest));                  \
        CHECK_EQ_STR(found_, expected_);                                                \
    } while (0)

#endif /* RATE_TESTS_SHARED_H */
