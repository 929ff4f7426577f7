/* The keyed limiter's C ABI: the seed scenario, keys as bytes, queries, a full table,
 * reserve, and every error. Plain C99; each case returns 0 on success. Build and run:
 *   cargo build --release
 *   cc -std=c99 -Wall -Wextra -Wpedantic -Werror -Iinclude tests/c/test_keyed.c \
 *      -Ltarget/release -lrate -Wl,-rpath,$PWD/target/release -o target/test_keyed
 *   target/test_keyed
 */
#include "check.h"

/* Runs a check that may fail after a table was made, freeing the table either way. */
#define CHECK_FREE(table, cond)                                              \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__, __LINE__, \
              __func__, #cond);                                              \
      rate_keyed_free(table);                                                \
      return 1;                                                              \
    }                                                                        \
  } while (0)

static rate_config gcra(uint64_t limit, uint64_t period_ns, uint64_t burst) {
  return make_config(RATE_GCRA, limit, period_ns, burst);
}

static rate_keyed *make(uint64_t limit, uint64_t period_ns, uint64_t burst,
                        uint64_t capacity) {
  rate_config config = gcra(limit, period_ns, burst);
  rate_keyed *table = NULL;
  if (rate_keyed_new(&config, capacity, &table) != RATE_OK) {
    return NULL;
  }
  return table;
}

static int32_t acquire_str(rate_keyed *table, const char *key, uint64_t n,
                           uint64_t now_ns, rate_decision *out) {
  return rate_keyed_acquire_at(table, (const uint8_t *)key, strlen(key), n,
                               now_ns, out);
}

static int test_bob_and_alice(void) {
  /* One request per 2 s, bursts of 1. */
  rate_keyed *users = make(1, 2 * SECOND, 1, 16);
  rate_decision d;
  CHECK(users != NULL);
  CHECK_FREE(users, acquire_str(users, "bob", 1, 0, &d) == RATE_OK);
  CHECK_FREE(users, d.allowed == 1 && d.limit == 1 && d.remaining == 0);
  CHECK_FREE(users, d.reset_after_ns == 2 * SECOND && d.retry_after_ns == 0);
  CHECK_FREE(users, acquire_str(users, "bob", 1, 999 * MS, &d) == RATE_LIMITED);
  CHECK_FREE(users, d.allowed == 0 && d.retry_after_ns == 1001 * MS);
  CHECK_FREE(users, acquire_str(users, "alice", 1, 999 * MS, &d) == RATE_OK);
  CHECK_FREE(users, acquire_str(users, "bob", 1, 1000 * MS, &d) == RATE_LIMITED);
  CHECK_FREE(users, d.retry_after_ns == 1000 * MS);
  CHECK_FREE(users, acquire_str(users, "bob", 1, 2001 * MS, &d) == RATE_OK);
  /* Alice's own bucket: admitted at 999 ms, so denied until 2999 ms. */
  CHECK_FREE(users, acquire_str(users, "alice", 1, 2001 * MS, &d) == RATE_LIMITED);
  CHECK_FREE(users, d.retry_after_ns == 998 * MS);
  rate_keyed_free(users);
  return 0;
}

static int test_keys_are_bytes(void) {
  static const uint8_t nul[] = {0};
  static const uint8_t a_nul_b[] = {'a', 0, 'b'};
  rate_keyed *table = make(1, SECOND, 1, 8);
  CHECK(table != NULL);
  /* NULL with length 0 is the empty key; so is any pointer with length 0. */
  CHECK_FREE(table, rate_keyed_acquire_at(table, NULL, 0, 1, 0, NULL) == RATE_OK);
  CHECK_FREE(table, rate_keyed_acquire_at(table, nul, 0, 1, 0, NULL) == RATE_LIMITED);
  /* A lone NUL byte, and "a\0b" (not "a"), are keys of their own. */
  CHECK_FREE(table, rate_keyed_acquire_at(table, nul, 1, 1, 0, NULL) == RATE_OK);
  CHECK_FREE(table, rate_keyed_acquire_at(table, a_nul_b, 3, 1, 0, NULL) == RATE_OK);
  CHECK_FREE(table, rate_keyed_acquire_at(table, a_nul_b, 1, 1, 0, NULL) == RATE_OK);
  CHECK_FREE(table, rate_keyed_acquire_at(table, a_nul_b, 3, 1, 0, NULL) == RATE_LIMITED);
  CHECK_FREE(table, rate_keyed_acquire_at(table, nul, 1, 1, 0, NULL) == RATE_LIMITED);
  rate_keyed_free(table);
  return 0;
}

static int test_query_never_inserts(void) {
  /* Capacity 1: two slots, both filled with live keys. */
  rate_keyed *table = make(4, 4 * SECOND, 0, 1);
  rate_decision d;
  CHECK(table != NULL);
  CHECK_FREE(table, acquire_str(table, "a", 3, 0, NULL) == RATE_OK);
  CHECK_FREE(table, acquire_str(table, "b", 1, 0, NULL) == RATE_OK);
  CHECK_FREE(table, acquire_str(table, "nobody", 0, 0, &d) == RATE_OK);
  CHECK_FREE(table, d.allowed == 1 && d.limit == 4 && d.remaining == 4);
  CHECK_FREE(table, d.reset_after_ns == 0);
  CHECK_FREE(table, acquire_str(table, "a", 0, 0, &d) == RATE_OK);
  CHECK_FREE(table, d.remaining == 1 && d.reset_after_ns == 3 * SECOND);
  CHECK_FREE(table, acquire_str(table, "c", 1, 0, NULL) == RATE_E_TABLE_FULL);
  rate_keyed_free(table);
  return 0;
}

static int test_full_table_until_keys_expire(void) {
  /* Capacity 2: four slots. One per second, burst 1. */
  rate_keyed *table = make(1, SECOND, 1, 2);
  rate_decision d;
  uint8_t key;
  CHECK(table != NULL);
  for (key = 0; key < 4; key++) {
    CHECK_FREE(table, rate_keyed_acquire_at(table, &key, 1, 1, 0, NULL) == RATE_OK);
  }
  memset(&d, 0xAB, sizeof d);
  CHECK_FREE(table, acquire_str(table, "late", 1, SECOND - 1, &d) == RATE_E_TABLE_FULL);
  CHECK_FREE(table, d.allowed == 0xAB); /* out untouched on error */
  CHECK_FREE(table, rate_keyed_reserve_at(table, (const uint8_t *)"late", 4, 1,
                                          SECOND - 1, SECOND, NULL) == RATE_E_TABLE_FULL);
  for (key = 0; key < 4; key++) {
    CHECK_FREE(table, rate_keyed_acquire_at(table, &key, 1, 1, SECOND - 1, NULL) ==
                          RATE_LIMITED);
  }
  /* At 1 s the old keys are fresh again: their slots may be reused. */
  CHECK_FREE(table, acquire_str(table, "late", 1, SECOND, NULL) == RATE_OK);
  CHECK_FREE(table, acquire_str(table, "late", 1, SECOND, NULL) == RATE_LIMITED);
  rate_keyed_free(table);
  return 0;
}

/* One call of rate_keyed_acquire_at and the status it must return. */
struct keyed_outcome {
  int line;
  const char *key;
  uint64_t n, now_ns;
  int32_t status;
};

#define KEYED_OUTCOME(key, n, now, status) {__LINE__, (key), (n), (now), (status)}

static int test_out_null_gives_the_outcome_of_the_same_call_with_out(void) {
  /* GCRA, L=2, P=1 s, B=2: T = 500 ms, tau = 1 s. Capacity 1: two slots. */
  static const struct keyed_outcome calls[] = {
      KEYED_OUTCOME("a", 0, 0, RATE_OK), /* a query */
      KEYED_OUTCOME("a", 3, 0, RATE_E_INSUFFICIENT_CAPACITY), /* 3 > B */
      KEYED_OUTCOME("a", UINT64_MAX, 0, RATE_E_INSUFFICIENT_CAPACITY),
      /* 0 + 2*500 - 0 = 1000 <= 1000: TAT = 1 s; then 1000 + 500 - 0 = 1500 > 1000. */
      KEYED_OUTCOME("a", 2, 0, RATE_OK),
      KEYED_OUTCOME("a", 1, 0, RATE_LIMITED),
      KEYED_OUTCOME("a", 0, 0, RATE_OK), /* a query, even on an empty bucket */
      KEYED_OUTCOME("b", 1, 0, RATE_OK), /* b's own bucket: TAT = 500 ms */
      /* A query never inserts, even in a full table; a and b (TAT > 0) fill both slots. */
      KEYED_OUTCOME("c", 0, 0, RATE_OK),
      KEYED_OUTCOME("c", 1, 0, RATE_E_TABLE_FULL),
      /* At 500 ms: 1000 + 500 - 500 = 1000 <= 1000, TAT = 1.5 s. */
      KEYED_OUTCOME("a", 1, 500 * MS, RATE_OK),
      /* Back to 250 ms: 1500 + 500 - 250 = 1750 > 1000. */
      KEYED_OUTCOME("a", 1, 250 * MS, RATE_LIMITED),
      /* b back to 250 ms: 500 + 500 - 250 = 750 <= 1000, TAT = 1 s. */
      KEYED_OUTCOME("b", 1, 250 * MS, RATE_OK),
      KEYED_OUTCOME("c", 1, 900 * MS, RATE_E_TABLE_FULL), /* TATs 1.5 s, 1 s: live */
      /* Both fresh at 1.5 s: c's TAT = 2 s; 2000 + 1000 - 1500 = 1500 > 1000; then
       * 2000 + 500 - 1500 = 1000 <= 1000. */
      KEYED_OUTCOME("c", 1, 1500 * MS, RATE_OK),
      KEYED_OUTCOME("c", 2, 1500 * MS, RATE_LIMITED),
      KEYED_OUTCOME("c", 1, 1500 * MS, RATE_OK),
  };
  rate_keyed *with_out = make(2, SECOND, 2, 1);
  rate_keyed *without_out = make(2, SECOND, 2, 1);
  size_t i;
  int failed = with_out == NULL || without_out == NULL;
  for (i = 0; i < sizeof calls / sizeof calls[0] && !failed; i++) {
    const struct keyed_outcome *c = &calls[i];
    rate_decision d;
    int32_t status;
    memset(&d, 0xAB, sizeof d);
    status = acquire_str(with_out, c->key, c->n, c->now_ns, &d);
    failed |= check_status(__FILE__, c->line, "with an out", status, c->status);
    if (c->status < 0)
      failed |= check_eq_u64(__FILE__, c->line, "allowed untouched", d.allowed, 0xAB);
    else
      failed |= check_eq_u64(__FILE__, c->line, "allowed", d.allowed, c->status == RATE_OK);
    status = acquire_str(without_out, c->key, c->n, c->now_ns, NULL);
    failed |= check_status(__FILE__, c->line, "out NULL", status, c->status);
  }
  rate_keyed_free(with_out);
  rate_keyed_free(without_out);
  return failed;
}

static int test_reserve_shapes_per_key(void) {
  /* Ten per second, burst 1: a unit every 100 ms. */
  rate_keyed *table = make(10, SECOND, 1, 4);
  const uint8_t *key = (const uint8_t *)"k";
  rate_decision d;
  CHECK(table != NULL);
  CHECK_FREE(table, rate_keyed_reserve_at(table, key, 1, 1, 0, 250 * MS, &d) == RATE_OK);
  CHECK_FREE(table, d.wait_ns == 0);
  CHECK_FREE(table, rate_keyed_reserve_at(table, key, 1, 1, 0, 250 * MS, &d) == RATE_OK);
  CHECK_FREE(table, d.wait_ns == 100 * MS);
  CHECK_FREE(table, rate_keyed_reserve_at(table, key, 1, 1, 0, 250 * MS, &d) == RATE_OK);
  CHECK_FREE(table, d.wait_ns == 200 * MS);
  CHECK_FREE(table,
             rate_keyed_reserve_at(table, key, 1, 1, 0, 250 * MS, &d) == RATE_LIMITED);
  CHECK_FREE(table, d.retry_after_ns == 50 * MS);
  rate_keyed_free(table);
  return 0;
}

static int test_library_clock(void) {
  /* One per hour: the second request in a test run is always denied. */
  rate_keyed *table = make(1, 3600 * SECOND, 1, 4);
  const uint8_t *key = (const uint8_t *)"key";
  rate_decision d;
  CHECK(table != NULL);
  CHECK_FREE(table, rate_keyed_acquire(table, key, 3, 1, NULL) == RATE_OK);
  CHECK_FREE(table, rate_keyed_acquire(table, key, 3, 1, NULL) == RATE_LIMITED);
  CHECK_FREE(table, rate_keyed_acquire(table, key, 3, 1, &d) == RATE_LIMITED);
  CHECK_FREE(table, d.allowed == 0 && d.retry_after_ns > 3599 * SECOND);
  CHECK_FREE(table, rate_keyed_acquire(table, key, 2, 1, &d) == RATE_OK);
  rate_keyed_free(table);
  return 0;
}

static int test_bad_input(void) {
  rate_config config = gcra(1, SECOND, 1);
  rate_config unknown = gcra(1, SECOND, 1);
  rate_keyed *sentinel = (rate_keyed *)&config;
  rate_keyed *out = sentinel;
  rate_keyed *table = make(2, SECOND, 2, 4);
  rate_decision d;
  CHECK(table != NULL);
  unknown.algorithm = 99;
  CHECK_FREE(table, rate_keyed_new(NULL, 4, &out) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_new(&config, 4, NULL) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_new(&config, 0, &out) == RATE_E_INVALID_CONFIG);
  CHECK_FREE(table, rate_keyed_new(&config, UINT64_MAX, &out) == RATE_E_INVALID_CONFIG);
  /* Too big to address (an allocation that is merely too big for the machine is also
   * RATE_E_INVALID_CONFIG, but ASan aborts on those unless allocator_may_return_null=1;
   * tests/keyed.rs covers them). */
  CHECK_FREE(table, rate_keyed_new(&config, UINT64_C(1) << 62, &out) ==
                        RATE_E_INVALID_CONFIG);
  CHECK_FREE(table, rate_keyed_new(&unknown, 4, &out) == RATE_E_INVALID_CONFIG);
  CHECK_FREE(table, out == sentinel); /* untouched on every error */

  memset(&d, 0xAB, sizeof d);
  CHECK_FREE(table, rate_keyed_acquire_at(table, NULL, 3, 1, 0, &d) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_acquire(table, NULL, 1, 1, &d) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_reserve_at(table, NULL, 1, 1, 0, 0, &d) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_acquire_at(NULL, (const uint8_t *)"k", 1, 1, 0, &d) ==
                        RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_acquire(NULL, NULL, 0, 1, NULL) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_reserve_at(NULL, NULL, 0, 1, 0, 0, NULL) == RATE_E_NULL);
  CHECK_FREE(table, acquire_str(table, "k", 3, 0, &d) == RATE_E_INSUFFICIENT_CAPACITY);
  CHECK_FREE(table, rate_keyed_reserve_at(table, (const uint8_t *)"k", 1, 3, 0,
                                          UINT64_MAX, &d) == RATE_E_INSUFFICIENT_CAPACITY);
  CHECK_FREE(table, d.allowed == 0xAB); /* untouched on every error */
  CHECK_FREE(table, strcmp(rate_status_str(RATE_E_TABLE_FULL),
                           "keyed table is full of live keys") == 0);
  rate_keyed_free(NULL);
  rate_keyed_free(table);
  return 0;
}

/* The batch entry points: key after key at one instant, in groups across the 64-key
 * chunks the library hands to the table, with per-key statuses. */
static int test_batch(void) {
  rate_keyed *users = make(1, 2 * SECOND, 1, 16);
  static const uint8_t nul = 0;
  const uint8_t *keys[5] = {(const uint8_t *)"bob", (const uint8_t *)"alice",
                            (const uint8_t *)"bob", NULL, &nul};
  size_t lens[5] = {3, 5, 3, 0, 1};
  int32_t statuses[70];
  const uint8_t *many[70];
  size_t many_lens[70];
  uint8_t bytes[70];
  int ok = 0, full = 0;
  size_t i;
  CHECK(users != NULL);
  CHECK_FREE(users, rate_keyed_acquire_batch_at(users, keys, lens, 5, 1, 0, statuses) ==
                        RATE_OK);
  /* bob, alice, bob again (his unit is taken), the empty key, the NUL key. */
  CHECK_FREE(users, statuses[0] == RATE_OK && statuses[1] == RATE_OK);
  CHECK_FREE(users, statuses[2] == RATE_LIMITED);
  CHECK_FREE(users, statuses[3] == RATE_OK && statuses[4] == RATE_OK);
  CHECK_FREE(users, rate_keyed_acquire_batch_at(users, keys, lens, 2, 1, 999 * MS,
                                                statuses) == RATE_OK);
  CHECK_FREE(users, statuses[0] == RATE_LIMITED && statuses[1] == RATE_LIMITED);
  CHECK_FREE(users, rate_keyed_acquire_batch_at(users, keys, lens, 2, 1, 2001 * MS,
                                                statuses) == RATE_OK);
  CHECK_FREE(users, statuses[0] == RATE_OK && statuses[1] == RATE_OK);
  /* n == 0 queries: admitted, nothing charged. */
  CHECK_FREE(users, rate_keyed_acquire_batch(users, keys, lens, 3, 0, statuses) == RATE_OK);
  CHECK_FREE(users, statuses[0] == RATE_OK && statuses[2] == RATE_OK);
  rate_keyed_free(users);

  /* 70 new keys into a table of 4 slots (capacity 2): four fit, the rest find it full,
   * past the first 64-key chunk too. */
  users = make(1, SECOND, 1, 2);
  CHECK(users != NULL);
  for (i = 0; i < 70; i++) {
    bytes[i] = (uint8_t)i;
    many[i] = &bytes[i];
    many_lens[i] = 1;
    statuses[i] = 12345;
  }
  CHECK_FREE(users, rate_keyed_acquire_batch_at(users, many, many_lens, 70, 1, 0,
                                                statuses) == RATE_OK);
  for (i = 0; i < 70; i++) {
    ok += statuses[i] == RATE_OK;
    full += statuses[i] == RATE_E_TABLE_FULL;
  }
  CHECK_FREE(users, ok == 4 && full == 66);
  CHECK_FREE(users, statuses[69] == RATE_E_TABLE_FULL);
  rate_keyed_free(users);

  /* The library clock decides now: a fresh key is admitted once per hour. */
  users = make(1, 3600 * SECOND, 1, 4);
  CHECK(users != NULL);
  CHECK_FREE(users, rate_keyed_acquire_batch(users, keys, lens, 3, 1, statuses) == RATE_OK);
  CHECK_FREE(users, statuses[0] == RATE_OK && statuses[1] == RATE_OK);
  CHECK_FREE(users, statuses[2] == RATE_LIMITED);
  rate_keyed_free(users);
  return 0;
}

static int test_batch_bad_input(void) {
  rate_keyed *table = make(2, SECOND, 2, 4);
  const uint8_t *keys[2] = {(const uint8_t *)"k", NULL};
  size_t lens[2] = {1, 1};
  int32_t statuses[2] = {77, 77};
  CHECK(table != NULL);
  CHECK_FREE(table, rate_keyed_acquire_batch(NULL, keys, lens, 1, 1, statuses) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_acquire_batch(table, NULL, lens, 1, 1, statuses) ==
                        RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_acquire_batch(table, keys, NULL, 1, 1, statuses) ==
                        RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_acquire_batch(table, keys, lens, 1, 1, NULL) == RATE_E_NULL);
  /* keys[1] is NULL with a length: nothing is decided, not even keys[0]. */
  CHECK_FREE(table, rate_keyed_acquire_batch_at(table, keys, lens, 2, 1, 0, statuses) ==
                        RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_acquire_batch_at(table, keys, lens, 1, 3, 0, statuses) ==
                        RATE_E_INSUFFICIENT_CAPACITY);
  CHECK_FREE(table, statuses[0] == 77 && statuses[1] == 77); /* untouched on every error */
  CHECK_FREE(table, acquire_str(table, "k", 0, 0, NULL) == RATE_OK);
  {
    rate_decision d;
    CHECK_FREE(table, acquire_str(table, "k", 0, 0, &d) == RATE_OK);
    CHECK_FREE(table, d.remaining == 2); /* "k" was never charged */
  }
  /* No keys: the arrays may be NULL, and the cost is still checked. */
  CHECK_FREE(table, rate_keyed_acquire_batch(table, NULL, NULL, 0, 1, NULL) == RATE_OK);
  CHECK_FREE(table, rate_keyed_acquire_batch_at(table, NULL, NULL, 0, 3, 0, NULL) ==
                        RATE_E_INSUFFICIENT_CAPACITY);
  rate_keyed_free(table);
  return 0;
}

/* The packed form: keys back to back in one buffer, of different lengths, across the
 * 64-key chunks. Key i is i + 1 bytes of the letter 'a' + i % 26 (so every key is
 * distinct); each is admitted once per hour, and the same batch again is all denied. */
static int test_packed(void) {
  rate_keyed *table = make(1, 3600 * SECOND, 1, 100);
  static uint8_t packed[70 * 71 / 2];
  size_t lens[70], i, at = 0, j;
  int32_t statuses[70];
  CHECK(table != NULL);
  for (i = 0; i < 70; i++) {
    lens[i] = i + 1;
    for (j = 0; j <= i; j++) {
      packed[at++] = (uint8_t)('a' + i % 26);
    }
  }
  CHECK_FREE(table, rate_keyed_acquire_packed_at(table, packed, lens, 70, 1, 0, statuses) ==
                        RATE_OK);
  for (i = 0; i < 70; i++) {
    CHECK_FREE(table, statuses[i] == RATE_OK);
  }
  CHECK_FREE(table, rate_keyed_acquire_packed_at(table, packed, lens, 70, 1, SECOND,
                                                 statuses) == RATE_OK);
  for (i = 0; i < 70; i++) {
    CHECK_FREE(table, statuses[i] == RATE_LIMITED);
  }
  /* Key 69 alone, as a single call sees it: taken. Key "b" (1 byte) was never used. */
  CHECK_FREE(table, rate_keyed_acquire_at(table, packed + at - 70, 70, 1, 0, NULL) ==
                        RATE_LIMITED);
  CHECK_FREE(table, acquire_str(table, "b", 1, 0, NULL) == RATE_OK);
  rate_keyed_free(table);
  /* On the library clock, in a fresh table: all admitted, then all denied. */
  table = make(1, 3600 * SECOND, 1, 100);
  CHECK(table != NULL);
  CHECK_FREE(table, rate_keyed_acquire_packed(table, packed, lens, 70, 1, statuses) == RATE_OK);
  for (i = 0; i < 70; i++) {
    CHECK_FREE(table, statuses[i] == RATE_OK);
  }
  CHECK_FREE(table, rate_keyed_acquire_packed(table, packed, lens, 70, 1, statuses) == RATE_OK);
  for (i = 0; i < 70; i++) {
    CHECK_FREE(table, statuses[i] == RATE_LIMITED);
  }
  rate_keyed_free(table);
  return 0;
}

static int test_packed_bad_input(void) {
  rate_keyed *table = make(2, SECOND, 2, 4);
  size_t lens[2] = {0, 0};
  size_t huge[2] = {SIZE_MAX, 2};
  int32_t statuses[2] = {77, 77};
  CHECK(table != NULL);
  /* Two empty keys need no buffer: NULL is fine. */
  CHECK_FREE(table, rate_keyed_acquire_packed_at(table, NULL, lens, 2, 1, 0, statuses) ==
                        RATE_OK);
  CHECK_FREE(table, statuses[0] == RATE_OK && statuses[1] == RATE_OK);
  statuses[0] = statuses[1] = 77;
  lens[1] = 1;
  CHECK_FREE(table, rate_keyed_acquire_packed(table, NULL, lens, 2, 1, statuses) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_acquire_packed(table, (const uint8_t *)"k", huge, 2, 1,
                                              statuses) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_acquire_packed(NULL, (const uint8_t *)"k", lens, 2, 1,
                                              statuses) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_acquire_packed(table, (const uint8_t *)"k", NULL, 2, 1,
                                              statuses) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_acquire_packed(table, (const uint8_t *)"k", lens, 2, 1, NULL) ==
                        RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_acquire_packed_at(table, (const uint8_t *)"k", lens, 2, 3, 0,
                                                 statuses) == RATE_E_INSUFFICIENT_CAPACITY);
  CHECK_FREE(table, statuses[0] == 77 && statuses[1] == 77); /* untouched on every error */
  CHECK_FREE(table, rate_keyed_acquire_packed(table, NULL, NULL, 0, 1, NULL) == RATE_OK);
  rate_keyed_free(table);
  return 0;
}

/* 10 a second (T = 100 ms): ann takes 6 at 0 (4 tokens left), bob 1 (9). Tightened at 0
 * to 1 a second, burst 2: both keep 2 tokens (TAT 0), then 1 per second; a new key starts
 * with the new burst. */
static int test_set_config(void) {
  rate_keyed *table = make(10, SECOND, 0, 16);
  rate_config config = gcra(1, SECOND, 2);
  rate_decision d;
  CHECK(table != NULL);
  CHECK_FREE(table, acquire_str(table, "ann", 6, 0, NULL) == RATE_OK);
  CHECK_FREE(table, acquire_str(table, "bob", 1, 0, NULL) == RATE_OK);
  CHECK_FREE(table, rate_keyed_set_config_at(table, &config, 0) == RATE_OK);
  CHECK_FREE(table, acquire_str(table, "ann", 2, 0, &d) == RATE_OK);
  CHECK_FREE(table, d.limit == 2 && d.remaining == 0 && d.reset_after_ns == 2 * SECOND);
  CHECK_FREE(table, acquire_str(table, "ann", 1, 0, &d) == RATE_LIMITED);
  CHECK_FREE(table, d.retry_after_ns == SECOND);
  CHECK_FREE(table, acquire_str(table, "bob", 0, 0, &d) == RATE_OK && d.remaining == 2);
  CHECK_FREE(table, acquire_str(table, "cat", 0, 0, &d) == RATE_OK && d.remaining == 2);
  /* Refused, changing nothing: another algorithm, an invalid rule, NULL. */
  config = make_config(RATE_FIXED_WINDOW, 2, SECOND, 0);
  CHECK_FREE(table, rate_keyed_set_config(table, &config) == RATE_E_INVALID_CONFIG);
  config = gcra(0, SECOND, 0);
  CHECK_FREE(table, rate_keyed_set_config(table, &config) == RATE_E_INVALID_CONFIG);
  config.algorithm = 99;
  CHECK_FREE(table, rate_keyed_set_config(table, &config) == RATE_E_INVALID_CONFIG);
  CHECK_FREE(table, rate_keyed_set_config(table, NULL) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_set_config(NULL, &config) == RATE_E_NULL);
  CHECK_FREE(table, rate_keyed_set_config_at(NULL, NULL, 0) == RATE_E_NULL);
  /* Still 1 a second, burst 2: bob's TAT 0, so 2 tokens at 0. */
  CHECK_FREE(table, acquire_str(table, "bob", 0, 0, &d) == RATE_OK);
  CHECK_FREE(table, d.limit == 2 && d.remaining == 2);
  rate_keyed_free(table);
  return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_bob_and_alice),
        TEST_CASE(test_set_config),
        TEST_CASE(test_keys_are_bytes),
        TEST_CASE(test_query_never_inserts),
        TEST_CASE(test_full_table_until_keys_expire),
        TEST_CASE(test_out_null_gives_the_outcome_of_the_same_call_with_out),
        TEST_CASE(test_reserve_shapes_per_key),
        TEST_CASE(test_library_clock),
        TEST_CASE(test_bad_input),
        TEST_CASE(test_batch),
        TEST_CASE(test_batch_bad_input),
        TEST_CASE(test_packed),
        TEST_CASE(test_packed_bad_input),
    };
    return run_tests("test_keyed", cases, sizeof cases / sizeof cases[0]);
}
