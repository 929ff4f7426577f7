/* librate from C: a pool of worker threads draining a queue at a fixed rate.
 *
 * 4 workers share 20 jobs and one GCRA limiter of 200 job starts per second, one at a time
 * (burst 1): the leaky bucket as a queue. Before each job a worker reserves the next free
 * slot with rate_limiter_reserve_at, which says how long to wait (wait_ns); the worker
 * sleeps until then and runs the job. A worker that would wait more than MAX_WAIT is
 * denied instead (the line is long enough) and comes back after retry_after_ns.
 *
 * The program checks what the contract promises, not how fast the machine is: every job
 * ran exactly once, and no two jobs were given start slots closer than one interval.
 * It exits 0 when both hold.
 *
 * Build: cc -std=c99 -pthread -Iinclude worker_pool.c -Ltarget/release -lrate
 *        -Wl,-rpath,target/release
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "rate.h"

enum { WORKERS = 4, JOBS = 20 };
#define MS UINT64_C(1000000)
#define SECOND UINT64_C(1000000000)
#define JOBS_PER_SECOND 200 /* one start every 5 ms */
#define MAX_WAIT (15 * MS)  /* about three jobs' worth of queue */

struct pool {
    rate_limiter *limiter;
    pthread_mutex_t lock; /* guards everything below */
    int next_job;         /* the queue: jobs next_job..JOBS-1 are waiting */
    int runs[JOBS];       /* how often each job ran */
    uint64_t slot_ns[JOBS]; /* when each job was allowed to start (CLOCK_MONOTONIC) */
    uint64_t denials;     /* reserves denied because the line was too long */
    int failed;           /* a librate call returned an error */
};

/* Sleeps until `deadline_ns` on CLOCK_MONOTONIC, the clock rate_now_ns reads. */
static void sleep_until(uint64_t deadline_ns) {
    struct timespec deadline;
    deadline.tv_sec = (time_t)(deadline_ns / SECOND);
    deadline.tv_nsec = (long)(deadline_ns % SECOND);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR) {
    }
}

/* Takes the next job off the queue, or returns -1 when it is empty. */
static int take_job(struct pool *pool) {
    int job = -1;
    pthread_mutex_lock(&pool->lock);
    if (pool->next_job < JOBS)
        job = pool->next_job++;
    pthread_mutex_unlock(&pool->lock);
    return job;
}

/* Waits for a start slot; returns its time, or 0 after a librate error. */
static uint64_t reserve_slot(struct pool *pool) {
    for (;;) {
        uint64_t now = rate_now_ns();
        rate_decision d;
        int32_t status = rate_limiter_reserve_at(pool->limiter, 1, now, MAX_WAIT, &d);
        if (status == RATE_OK) {
            sleep_until(now + d.wait_ns);
            return now + d.wait_ns;
        }
        if (status != RATE_LIMITED) {
            fprintf(stderr, "rate_limiter_reserve_at: %s\n", rate_status_str(status));
            return 0;
        }
        pthread_mutex_lock(&pool->lock);
        pool->denials++;
        pthread_mutex_unlock(&pool->lock);
        sleep_until(now + d.retry_after_ns);
    }
}

static void *worker(void *arg) {
    struct pool *pool = arg;
    int job;
    while ((job = take_job(pool)) >= 0) {
        uint64_t slot = reserve_slot(pool);
        pthread_mutex_lock(&pool->lock);
        if (slot == 0) {
            pool->failed = 1;
        } else {
            /* The job itself: here, recording that it ran and when. */
            pool->runs[job]++;
            pool->slot_ns[job] = slot;
        }
        pthread_mutex_unlock(&pool->lock);
        if (slot == 0)
            break;
    }
    return NULL;
}

/* 0 if every job ran once and the start slots are at least `interval` apart. */
static int check_schedule(const struct pool *pool, uint64_t interval) {
    uint64_t sorted[JOBS];
    int i, j;
    for (i = 0; i < JOBS; i++) {
        if (pool->runs[i] != 1) {
            fprintf(stderr, "job %d ran %d times\n", i, pool->runs[i]);
            return 1;
        }
        /* insertion sort: 20 values */
        for (j = i; j > 0 && sorted[j - 1] > pool->slot_ns[i]; j--)
            sorted[j] = sorted[j - 1];
        sorted[j] = pool->slot_ns[i];
    }
    for (i = 1; i < JOBS; i++) {
        if (sorted[i] - sorted[i - 1] < interval) {
            fprintf(stderr, "slots %" PRIu64 " and %" PRIu64 " are closer than %" PRIu64 " ns\n",
                    sorted[i - 1], sorted[i], interval);
            return 1;
        }
    }
    printf("%d jobs by %d workers, one start every %" PRIu64 " ms: the last %" PRIu64
           " ms after the first\n",
           JOBS, WORKERS, interval / MS, (sorted[JOBS - 1] - sorted[0]) / MS);
    return 0;
}

int main(void) {
    rate_config config = {RATE_GCRA, JOBS_PER_SECOND, SECOND, 1}; /* burst 1: evenly spaced */
    struct pool pool = {0};
    pthread_t threads[WORKERS];
    int started = 0, i, failed;
    int32_t status = rate_limiter_new(&config, &pool.limiter);
    if (status != RATE_OK) {
        fprintf(stderr, "rate_limiter_new: %s\n", rate_status_str(status));
        return 1;
    }
    pthread_mutex_init(&pool.lock, NULL);
    for (i = 0; i < WORKERS; i++) {
        if (pthread_create(&threads[i], NULL, worker, &pool) != 0)
            break;
        started++;
    }
    for (i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    failed = started < WORKERS || pool.failed ||
             check_schedule(&pool, SECOND / JOBS_PER_SECOND) != 0;
    printf("%" PRIu64 " reserves were denied (line too long) and retried\n", pool.denials);
    pthread_mutex_destroy(&pool.lock);
    rate_limiter_free(pool.limiter);
    return failed ? 1 : 0;
}
