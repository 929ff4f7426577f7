/* The README's C snippet, as a program: compiled and run by the tests like every
 * file here. scripts/check-docs.py checks that each line of the snippet is in this file. */
#include <stdio.h>

#include "rate.h"

int main(void) {
    rate_config config = {RATE_GCRA, 100, 1000000000, 0}; /* 100 per second */
    rate_limiter *limiter = NULL;
    if (rate_limiter_new(&config, &limiter) != RATE_OK) return 1;
    rate_decision d;
    if (rate_limiter_acquire(limiter, 1, &d) == RATE_LIMITED)
        printf("retry in %llu ms\n", (unsigned long long)(d.retry_after_ns / 1000000));
    rate_limiter_free(limiter);
    printf("first request: %s, %llu left\n", d.allowed ? "admitted" : "denied",
           (unsigned long long)d.remaining);
    return d.allowed && d.remaining == 99 ? 0 : 1;
}
