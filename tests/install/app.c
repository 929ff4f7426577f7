/* A C program as a user of an installed librate writes it: built by tests/install.rs with
 * nothing but `pkg-config --cflags --libs librate` (or `--static`), so <rate.h> must come
 * from the installed include directory. It prints the library's version and exits 0 if the
 * seed scenario of docs/decision.md holds: L=1, P=2 s, B=1 admits Bob at 0 ms, denies him at
 * 999 ms (retry in 2 + 2 - 0.999 - 2 = 1.001 s) and admits him again at 2001 ms. */
#include <stdio.h>

#include <rate.h>

int main(void) {
    rate_config config = {RATE_GCRA, 1, 2000000000, 1};
    rate_limiter *bob = NULL;
    rate_decision d;
    int seed_holds;
    if (rate_limiter_new(&config, &bob) != RATE_OK)
        return 1;
    seed_holds = rate_limiter_acquire_at(bob, 1, 0, &d) == RATE_OK &&
                 rate_limiter_acquire_at(bob, 1, 999000000, &d) == RATE_LIMITED &&
                 d.retry_after_ns == 1001000000 &&
                 rate_limiter_acquire_at(bob, 1, 2001000000, &d) == RATE_OK;
    rate_limiter_free(bob);
    printf("librate %s\n", rate_version());
    return seed_holds ? 0 : 1;
}
