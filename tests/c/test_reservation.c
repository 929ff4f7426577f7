/* rate_limiter_reserve_cancellable_at, rate_limiter_cancel and their keyed forms from C:
 * a cancelled reserve gives its place back, a reserve queued behind it keeps the units,
 * a reservation gives back once, only on its own handle, and every bad pointer is
 * RATE_E_NULL. Run by `cargo test` (tests/c_api.rs) and by scripts/c-tests.sh under
 * valgrind and ASan/UBSan.
 *
 * Every expected value is worked out by hand from the contract (docs/decision.md,
 * Reserve): GCRA L = 1, P = 1 s, B = 1, so T = tau = 1 s; a reserve of 1 at t with
 * max wait W is admitted iff max(TAT, t) + T - t <= tau + W and waits
 * max(TAT, t) + T - t - tau. Decisions are written {allowed, limit, remaining,
 * retry_after_ns, reset_after_ns, wait_ns}.
 *
 * Build: cc -std=c99 -Wall -Wextra -Wpedantic -Werror -Iinclude tests/c/test_reservation.c -lrate
 */
#include "check.h"

static rate_limiter *one_a_second(void) {
    rate_config config = make_config(RATE_GCRA, 1, SECOND, 1);
    rate_limiter *limiter = NULL;
    return rate_limiter_new(&config, &limiter) == RATE_OK ? limiter : NULL;
}

/* rate_keyed_reserve_cancellable_at of 1 unit for `key` at 0, waiting at most a second. */
static int32_t reserve_key(rate_keyed *table, const char *key, rate_decision *d,
                           rate_reservation *r) {
    return rate_keyed_reserve_cancellable_at(table, (const uint8_t *)key, strlen(key), 1, 0, SECOND, d,
                                             r);
}

static int test_a_cancel_gives_the_place_back(void) {
    rate_limiter *limiter = one_a_second();
    rate_reservation first, second, again;
    rate_decision d;
    CHECK(limiter != NULL);
    /* TAT 0 -> 1 s, wait 0; an acquire could take 0 more; full at TAT. */
    CHECK_STATUS(rate_limiter_reserve_cancellable_at(limiter, 1, 0, SECOND, &d, &first), RATE_OK);
    CHECK_DECISION(d, 1, 1, 0, 0, SECOND, 0);
    CHECK_STATUS(rate_limiter_cancel(limiter, &first), RATE_OK);
    /* TAT back at 0: the same reserve is decided as the first was. */
    CHECK_STATUS(rate_limiter_reserve_cancellable_at(limiter, 1, 0, SECOND, &d, &again), RATE_OK);
    CHECK_DECISION(d, 1, 1, 0, 0, SECOND, 0);
    /* Queued behind it: 1 + 1 - 0 <= 1 + 1, TAT 2 s, wait 1 s. */
    CHECK_STATUS(rate_limiter_reserve_cancellable_at(limiter, 1, 0, SECOND, &d, &second), RATE_OK);
    CHECK_DECISION(d, 1, 1, 0, 0, 2 * SECOND, SECOND);
    /* `again` is what `second` stands on: it keeps its units, and is emptied. */
    CHECK_STATUS(rate_limiter_cancel(limiter, &again), RATE_LIMITED);
    CHECK_STATUS(rate_limiter_cancel(limiter, &again), RATE_LIMITED);
    /* The last of the queue gives back: TAT 2 s -> 1 s, once. */
    CHECK_STATUS(rate_limiter_cancel(limiter, &second), RATE_OK);
    CHECK_STATUS(rate_limiter_cancel(limiter, &second), RATE_LIMITED);
    /* TAT 1 s: a reserve waits 1 + 1 - 0 - 1 = 1 s, full at 2 s. */
    CHECK_STATUS(rate_limiter_reserve_at(limiter, 1, 0, SECOND, &d), RATE_OK);
    CHECK_DECISION(d, 1, 1, 0, 0, 2 * SECOND, SECOND);
    rate_limiter_free(limiter);
    return 0;
}

static int test_a_denial_holds_nothing(void) {
    rate_limiter *limiter = one_a_second();
    rate_reservation denied;
    rate_decision d;
    CHECK(limiter != NULL);
    CHECK_STATUS(rate_limiter_acquire_at(limiter, 1, 0, NULL), RATE_OK);
    /* TAT 1 s, W = 0: 1 + 1 - 0 > 1 + 0, denied; retry after 1 + 1 - 0 - 1 - 0 = 1 s. */
    CHECK_STATUS(rate_limiter_reserve_cancellable_at(limiter, 1, 0, 0, &d, &denied), RATE_LIMITED);
    CHECK_DECISION(d, 0, 1, 0, SECOND, SECOND, 0);
    CHECK_STATUS(rate_limiter_cancel(limiter, &denied), RATE_LIMITED);
    /* The acquire's unit is still taken. */
    CHECK_STATUS(rate_limiter_acquire_at(limiter, 1, 0, NULL), RATE_LIMITED);
    rate_limiter_free(limiter);
    return 0;
}

static int test_only_its_own_handle_gives_back(void) {
    rate_limiter *mine = one_a_second();
    rate_limiter *other = one_a_second();
    rate_reservation held, theirs;
    CHECK(mine != NULL && other != NULL);
    /* Both TATs at 1 s, with the same words in their reservations but the handle's. */
    CHECK_STATUS(rate_limiter_reserve_cancellable_at(mine, 1, 0, SECOND, NULL, &held), RATE_OK);
    CHECK_STATUS(rate_limiter_reserve_cancellable_at(other, 1, 0, SECOND, NULL, &theirs), RATE_OK);
    CHECK_STATUS(rate_limiter_cancel(other, &held), RATE_LIMITED);
    /* `other` kept its unit; `held` was emptied, so even its own handle gets nothing. */
    CHECK_STATUS(rate_limiter_acquire_at(other, 1, 0, NULL), RATE_LIMITED);
    CHECK_STATUS(rate_limiter_cancel(mine, &held), RATE_LIMITED);
    CHECK_STATUS(rate_limiter_cancel(other, &theirs), RATE_OK);
    CHECK_STATUS(rate_limiter_acquire_at(other, 1, 0, NULL), RATE_OK);
    rate_limiter_free(mine);
    rate_limiter_free(other);
    return 0;
}

static int test_a_key_given_back(void) {
    rate_config config = make_config(RATE_GCRA, 1, SECOND, 1);
    rate_keyed *table = NULL;
    rate_limiter *limiter = one_a_second();
    rate_reservation held, queued, wrong;
    rate_keyed_stats stats;
    rate_decision d;
    CHECK(limiter != NULL);
    CHECK_STATUS(rate_keyed_new(&config, 4, &table), RATE_OK);
    /* A new key: inserted at TAT 1 s, given back, absent again. */
    CHECK_STATUS(reserve_key(table, "k", &d, &held), RATE_OK);
    CHECK_DECISION(d, 1, 1, 0, 0, SECOND, 0);
    CHECK_STATUS(rate_keyed_cancel(table, &held), RATE_OK);
    CHECK_STATUS(rate_keyed_read_stats_at(table, 0, &stats), RATE_OK);
    CHECK_EQ_U64(stats.live_keys, 0);
    /* Again, and one queued behind it (TAT 2 s, wait 1 s): the first keeps its unit. */
    CHECK_STATUS(reserve_key(table, "k", NULL, &held), RATE_OK);
    CHECK_STATUS(reserve_key(table, "k", &d, &queued), RATE_OK);
    CHECK_DECISION(d, 1, 1, 0, 0, 2 * SECOND, SECOND);
    CHECK_STATUS(rate_keyed_cancel(table, &held), RATE_LIMITED);
    /* The queued one gives back in place: TAT 1 s, so W = 0 is denied, retry after 1 s. */
    CHECK_STATUS(rate_keyed_cancel(table, &queued), RATE_OK);
    CHECK_STATUS(rate_keyed_reserve_at(table, (const uint8_t *)"k", 1, 1, 0, 0, &d), RATE_LIMITED);
    CHECK_DECISION(d, 0, 1, 0, SECOND, SECOND, 0);
    /* A limiter's reservation on a table, and a table's on a limiter, give nothing. */
    CHECK_STATUS(rate_limiter_reserve_cancellable_at(limiter, 1, 0, SECOND, NULL, &wrong), RATE_OK);
    CHECK_STATUS(rate_keyed_cancel(table, &wrong), RATE_LIMITED);
    CHECK_STATUS(reserve_key(table, "j", NULL, &wrong), RATE_OK);
    CHECK_STATUS(rate_limiter_cancel(limiter, &wrong), RATE_LIMITED);
    CHECK_STATUS(rate_limiter_acquire_at(limiter, 1, 0, NULL), RATE_LIMITED);
    rate_keyed_free(table);
    rate_limiter_free(limiter);
    return 0;
}

static int test_bad_input(void) {
    rate_config window = make_config(RATE_FIXED_WINDOW, 1, SECOND, 0);
    rate_limiter *limiter = one_a_second();
    rate_limiter *windowed = NULL;
    rate_keyed *table = NULL;
    rate_reservation untouched, zero;
    CHECK(limiter != NULL);
    CHECK_STATUS(rate_limiter_new(&window, &windowed), RATE_OK);
    CHECK_STATUS(rate_keyed_new(&window, 4, &table), RATE_OK);
    memset(&untouched, 0xAB, sizeof untouched);
    memset(&zero, 0, sizeof zero);
    CHECK_STATUS(rate_limiter_reserve_cancellable_at(NULL, 1, 0, 0, NULL, &untouched), RATE_E_NULL);
    CHECK_STATUS(rate_limiter_reserve_cancellable_at(limiter, 1, 0, 0, NULL, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_reserve_cancellable_at(table, (const uint8_t *)"k", 1, 1, 0, 0, NULL, NULL),
                 RATE_E_NULL);
    CHECK_STATUS(rate_keyed_reserve_cancellable_at(table, NULL, 1, 1, 0, 0, NULL, &untouched),
                 RATE_E_NULL);
    CHECK_STATUS(rate_limiter_cancel(NULL, &zero), RATE_E_NULL);
    CHECK_STATUS(rate_limiter_cancel(limiter, NULL), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_cancel(NULL, &zero), RATE_E_NULL);
    CHECK_STATUS(rate_keyed_cancel(table, NULL), RATE_E_NULL);
    /* The window algorithms have no queue: refused, the reservation untouched. */
    CHECK_STATUS(rate_limiter_reserve_cancellable_at(windowed, 1, 0, 0, NULL, &untouched),
                 RATE_E_UNSUPPORTED);
    CHECK_STATUS(rate_keyed_reserve_cancellable_at(table, (const uint8_t *)"k", 1, 1, 0, 0, NULL,
                                                   &untouched),
                 RATE_E_UNSUPPORTED);
    CHECK_EQ_U64(untouched.opaque[7], UINT64_C(0xABABABABABABABAB));
    /* All zero is empty; garbage names no word of the limiter: nothing either way. */
    CHECK_STATUS(rate_limiter_cancel(limiter, &zero), RATE_LIMITED);
    CHECK_STATUS(rate_limiter_cancel(limiter, &untouched), RATE_LIMITED);
    rate_keyed_free(table);
    rate_limiter_free(windowed);
    rate_limiter_free(limiter);
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_a_cancel_gives_the_place_back),
        TEST_CASE(test_a_denial_holds_nothing),
        TEST_CASE(test_only_its_own_handle_gives_back),
        TEST_CASE(test_a_key_given_back),
        TEST_CASE(test_bad_input),
    };
    return run_tests("test_reservation", cases, sizeof cases / sizeof cases[0]);
}
