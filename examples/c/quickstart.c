/* librate from C: 5 requests per second, in bursts of up to 5.
 * Build: cc -std=c99 -Iinclude quickstart.c -Ltarget/release -lrate -Wl,-rpath,target/release */
#include <inttypes.h>
#include <stdio.h>

#include "rate.h"

int main(void) {
    rate_config config = {RATE_GCRA, 5, 1000000000, 5}; /* algorithm, limit, period_ns, burst */
    rate_limiter *limiter = NULL;
    int32_t status = rate_limiter_new(&config, &limiter);
    if (status != RATE_OK) {
        fprintf(stderr, "rate_limiter_new: %s\n", rate_status_str(status));
        return 1;
    }
    /* Seven requests at one instant. In a server, call rate_limiter_acquire(limiter, 1, &d),
     * which reads the clock itself; here the time is fixed so the output is too. */
    uint64_t now = rate_now_ns();
    for (int i = 1; i <= 7; i++) {
        rate_decision d;
        status = rate_limiter_acquire_at(limiter, 1, now, &d);
        if (status == RATE_OK) {
            printf("request %d: allowed, %" PRIu64 " left\n", i, d.remaining);
        } else if (status == RATE_LIMITED) {
            printf("request %d: denied, retry in %" PRIu64 " ms\n", i, d.retry_after_ns / 1000000);
        } else {
            fprintf(stderr, "rate_limiter_acquire_at: %s\n", rate_status_str(status));
            rate_limiter_free(limiter);
            return 1;
        }
    }
    rate_limiter_free(limiter);
    return 0;
}
