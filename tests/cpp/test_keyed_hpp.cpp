/* Tests of include/rate.hpp's rate::KeyedLimiter, linked against librate.so. Run by
 * `cargo test` (tests/cpp_api.rs) with exceptions, without them, and under ASan + UBSan.
 *
 * Expected values are worked out by hand from docs/decision.md and docs/keyed.md with the
 * GCRA notation of test_rate_hpp.cpp: T = floor(P / L), tau = B*T, admitted iff
 * tat + n*T - t <= tau + W, remaining = floor((tau - debt) / T), reset_after = debt,
 * retry_after = TAT + n*T - t - tau - W. Each key behaves as its own fresh limiter.
 */
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "check.hpp"

using rate::Status;

static_assert(!std::is_copy_constructible_v<rate::KeyedLimiter>);
static_assert(!std::is_copy_assignable_v<rate::KeyedLimiter>);
static_assert(std::is_nothrow_move_constructible_v<rate::KeyedLimiter>);
static_assert(std::is_nothrow_move_assignable_v<rate::KeyedLimiter>);

/* A table from a config the test knows is valid, or an empty one (which the caller's
 * checks then fail on: every call returns Status::null). */
static rate::KeyedLimiter keyed(std::uint64_t limit, std::chrono::nanoseconds period,
                                std::uint64_t burst, std::uint64_t capacity) {
    return rate::KeyedLimiter::create(rate::Config::gcra(limit, period, burst), capacity)
        .value_or({});
}

static int test_create_reports_bad_configs(void) {
    CHECK_IS(rate::KeyedLimiter::create(rate::Config::gcra(1, 1s), 0).status(),
             Status::invalid_config); /* capacity 0 */
    CHECK_IS(rate::KeyedLimiter::create(rate::Config::gcra(0, 1s), 16).status(),
             Status::invalid_config); /* L = 0 */
    CHECK_IS(rate::KeyedLimiter::create(rate::Config::gcra(1, -1s), 16).status(),
             Status::invalid_config); /* P < 0 */
    auto created = rate::KeyedLimiter::create(rate::Config::gcra(1, 1s), 16);
    CHECK_IS(created.status(), Status::ok);
    CHECK(created->native_handle() != nullptr);
    return 0;
}

static int test_open_shares_a_file(void) {
    char dir[] = "/tmp/librate-keyed-hpp-XXXXXX";
    CHECK(mkdtemp(dir) != nullptr);
    const std::string file = std::string(dir) + "/table";
    const auto config = rate::Config::gcra(1, 1h);
    auto first = rate::KeyedLimiter::open(file.c_str(), config, 8);
    auto second = rate::KeyedLimiter::open(file.c_str(), config, 8);
    CHECK_IS(first.status(), Status::ok);
    CHECK_IS(second.status(), Status::ok);
    rate::KeyedLimiter a = std::move(first).value_or({});
    rate::KeyedLimiter b = std::move(second).value_or({});
    /* L=1 per hour, B=1: T = tau = 1 h. Bob's unit taken through one handle is gone
     * through the other (denied: retry and reset TAT + T - t - tau = 1 h); Alice's is her
     * own. */
    CHECK_RESULT(a.acquire_at("bob", 1, at(0s)), Status::ok, 1, 1, 0, 0s, 1h, 0s);
    CHECK_RESULT(b.acquire_at("bob", 1, at(0s)), Status::limited, 0, 1, 0, 1h, 1h, 0s);
    CHECK_RESULT(b.acquire_at("alice", 1, at(0s)), Status::ok, 1, 1, 0, 0s, 1h, 0s);
    /* Another capacity or configuration: refused; a bad one: invalid before any file. */
    CHECK_IS(rate::KeyedLimiter::open(file.c_str(), config, 9).status(), Status::incompatible);
    CHECK_IS(rate::KeyedLimiter::open(file.c_str(), rate::Config::gcra(2, 1h), 8).status(),
             Status::incompatible);
    CHECK_IS(rate::KeyedLimiter::open(file.c_str(), config, 0).status(), Status::invalid_config);
    /* What the OS refuses: Status::io, errno set, and an empty handle. */
    const std::string missing = std::string(dir) + "/none/table";
    errno = 0;
    auto refused = rate::KeyedLimiter::open(missing.c_str(), config, 8);
    CHECK_IS(refused.status(), Status::io);
    CHECK(errno == ENOENT);
    CHECK(!std::move(refused).value_or({}));
    errno = 0;
    CHECK_IS(rate::KeyedLimiter::open(dir, config, 8).status(), Status::io);
    CHECK(errno == EISDIR);
    CHECK_IS(rate::KeyedLimiter::open(nullptr, config, 8).status(), Status::null);
    CHECK(std::remove(file.c_str()) == 0 && rmdir(dir) == 0);
    return 0;
}

static int test_seed_bob_and_alice(void) {
    /* L=1, P=2 s, B=1: T = tau = 2 s; Bob and Alice are independent keys. */
    rate::KeyedLimiter users = keyed(1, 2s, 1, 16);
    CHECK_RESULT(users.acquire_at("bob", 1, at(0ms)), Status::ok, 1, 1, 0, 0s, 2s, 0s);
    CHECK_RESULT(users.acquire_at("alice", 1, at(0ms)), Status::ok, 1, 1, 0, 0s, 2s, 0s);
    /* Bob at 999 ms: retry and reset 2 - 0.999 = 1.001 s. */
    CHECK_RESULT(users.acquire_at("bob", 1, at(999ms)), Status::limited, 0, 1, 0, 1001ms,
                 1001ms, 0s);
    CHECK_RESULT(users.acquire_at("bob", 1, at(1000ms)), Status::limited, 0, 1, 0, 1s, 1s, 0s);
    /* Alice at 1.5 s: retry 500 ms. */
    CHECK_RESULT(users.acquire_at("alice", 1, at(1500ms)), Status::limited, 0, 1, 0, 500ms,
                 500ms, 0s);
    /* Bob at 2.001 s: admitted; TAT = 4.001 s. */
    CHECK_RESULT(users.acquire_at("bob", 1, at(2001ms)), Status::ok, 1, 1, 0, 0s, 2s, 0s);
    return 0;
}

static int test_keys_are_bytes(void) {
    /* L=1, P=1 h, B=1: each key admits once, then is denied for T = 1 h. "a", "a\0b" (an
     * embedded NUL), "a\0c", the empty key and "A" are five different keys. */
    rate::KeyedLimiter table = keyed(1, 1h, 1, 16);
    const std::string_view keys[] = {"a", std::string_view("a\0b", 3),
                                     std::string_view("a\0c", 3), "", "A"};
    for (std::string_view key : keys)
        CHECK_RESULT(table.acquire_at(key, 1, at(0s)), Status::ok, 1, 1, 0, 0s, 1h, 0s);
    for (std::string_view key : keys)
        CHECK_RESULT(table.acquire_at(key, 1, at(0s)), Status::limited, 0, 1, 0, 1h, 1h, 0s);
    /* A std::string works as a key too, by its bytes (on the same virtual timeline: the
     * real clock may be hours past t = 0, when every key is fresh again). */
    const std::string owned("a\0b", 3);
    CHECK_IS(table.acquire_at(owned, 1, at(0s)).status(), Status::limited);
    CHECK_IS(table.try_acquire("new"), Status::ok);
    return 0;
}

static int test_queries_and_costs(void) {
    /* L=5, P=1 s, B=5: T = 200 ms, tau = 1 s. */
    rate::KeyedLimiter table = keyed(5, 1s, 5, 16);
    /* A query of an unknown key reports a fresh limiter. */
    CHECK_RESULT(table.acquire_at("k", 0, at(0s)), Status::ok, 1, 5, 5, 0s, 0s, 0s);
    /* 2 units: TAT = 400 ms; remaining 3, reset 400 ms; a query sees the same. */
    CHECK_RESULT(table.acquire_at("k", 2, at(0s)), Status::ok, 1, 5, 3, 0s, 400ms, 0s);
    CHECK_RESULT(table.acquire_at("k", 0, at(0s)), Status::ok, 1, 5, 3, 0s, 400ms, 0s);
    /* 6 > B: an error, not a denial. */
    auto too_big = table.acquire_at("k", 6, at(0s));
    CHECK_IS(too_big.status(), Status::insufficient_capacity);
    CHECK(!too_big.ok());
    CHECK_IS(table.try_acquire("k", 6), Status::insufficient_capacity);
    return 0;
}

static int test_reserve_waits_in_line(void) {
    /* L=1000, P=1 s, B=1: T = tau = 1 ms; W = 1 ms, all at t = 0 (as for rate::Limiter). */
    rate::KeyedLimiter table = keyed(1000, 1s, 1, 16);
    CHECK_RESULT(table.reserve_at("w", 1, at(0s), 1ms), Status::ok, 1, 1, 0, 0s, 1ms, 0s);
    CHECK_RESULT(table.reserve_at("w", 1, at(0s), 1ms), Status::ok, 1, 1, 0, 0s, 2ms, 1ms);
    CHECK_RESULT(table.reserve_at("w", 1, at(0s), 1ms), Status::limited, 0, 1, 0, 1ms, 2ms,
                 0s);
    /* Another key has its own line. */
    CHECK_RESULT(table.reserve_at("v", 1, at(0s), 1ms), Status::ok, 1, 1, 0, 0s, 1ms, 0s);
    /* On the library clock: a fresh key is admitted at once, TAT = now + 1 ms. */
    CHECK_RESULT(table.reserve("u", 1, 10ms), Status::ok, 1, 1, 0, 0s, 1ms, 0s);
    CHECK_RESULT(table.acquire("t"), Status::ok, 1, 1, 0, 0s, 1ms, 0s);
    return 0;
}

static int test_full_table(void) {
    /* Capacity 1, L=1 per hour: every key admitted at t = 0 stays live for an hour. The
     * table holds at least 1 such key, somewhat more by rounding, never unboundedly more:
     * some new key within the first 4096 must be refused with Status::table_full. */
    rate::KeyedLimiter table = keyed(1, 1h, 1, 1);
    int admitted = 0;
    Status refused = Status::ok;
    for (int i = 0; i < 4096 && refused == Status::ok; i++) {
        const auto result = table.acquire_at("key" + std::to_string(i), 1, at(0s));
        if (result.ok() && result->allowed)
            admitted++;
        else
            refused = result.status();
    }
    CHECK(admitted >= 1);
    CHECK_IS(refused, Status::table_full);
    /* A held key still works; a query of a new key is answered without inserting it. */
    CHECK_RESULT(table.acquire_at("key0", 1, at(0s)), Status::limited, 0, 1, 0, 1h, 1h, 0s);
    CHECK_RESULT(table.acquire_at("never seen", 0, at(0s)), Status::ok, 1, 1, 1, 0s, 0s, 0s);
    CHECK_IS(table.acquire_at("never seen", 1, at(0s)).status(), Status::table_full);
    return 0;
}

static int test_reset_and_stats(void) {
    /* Capacity 1 (two slots), L=1 per 10 s, B=1: T = tau = 10 s. a and b fill the table
     * at 0; c is refused; a reset a is new again, but its former state (TAT 10 s) keeps its
     * slot until 10 s, so a is refused until then too. */
    rate::KeyedLimiter table = keyed(1, 10s, 1, 1);
    CHECK_RESULT(table.acquire_at("a", 1, at(0s)), Status::ok, 1, 1, 0, 0s, 10s, 0s);
    CHECK_RESULT(table.acquire_at("b", 1, at(0s)), Status::ok, 1, 1, 0, 0s, 10s, 0s);
    CHECK_IS(table.acquire_at("c", 1, at(0s)).status(), Status::table_full);
    CHECK_IS(table.reset("c"), Status::ok); /* not in the table: stays out */
    CHECK_IS(table.reset("a"), Status::ok);
    CHECK_RESULT(table.acquire_at("a", 0, at(1s)), Status::ok, 1, 1, 1, 0s, 0s, 0s);
    CHECK_IS(table.acquire_at("a", 1, at(1s)).status(), Status::table_full);
    CHECK_RESULT(table.acquire_at("a", 1, at(10s)), Status::ok, 1, 1, 0, 0s, 10s, 0s);
    /* At 10 s: a live (TAT 20 s), b fresh; c and a refused once each. */
    const auto stats = table.stats_at(at(10s));
    CHECK_IS(stats.status(), Status::ok);
    CHECK_EQ_U64(stats->capacity, 1);
    CHECK_EQ_U64(stats->max_keys, 2);
    CHECK_EQ_U64(stats->live_keys, 1);
    CHECK_EQ_U64(stats->table_full, 2);
    CHECK_EQ_U64(table.stats()->table_full, 2);
    rate::KeyedLimiter empty;
    CHECK_IS(empty.reset("a"), Status::null);
    CHECK_IS(empty.stats().status(), Status::null);
    return 0;
}

static int test_batch(void) {
    /* One per hour: bob and alice admitted, bob's repeat denied, in order. */
    rate::KeyedLimiter users = keyed(1, 1h, 1, 16);
    const std::string_view names[] = {"bob", "alice", "bob", std::string_view("\0", 1), ""};
    Status statuses[5] = {};
    CHECK_IS(users.try_acquire_batch(names, 5, statuses), Status::ok);
    CHECK_IS(statuses[0], Status::ok);
    CHECK_IS(statuses[1], Status::ok);
    CHECK_IS(statuses[2], Status::limited);
    CHECK_IS(statuses[3], Status::ok); /* the NUL key and the empty key are keys too */
    CHECK_IS(statuses[4], Status::ok);
    CHECK_IS(users.try_acquire("alice"), Status::limited); /* the batch charged her */
    /* n above the limit: nothing decided, statuses untouched, even for no keys. */
    Status untouched[2] = {Status::internal, Status::internal};
    CHECK_IS(users.try_acquire_batch(names, 2, untouched, 2), Status::insufficient_capacity);
    CHECK_IS(untouched[0], Status::internal);
    CHECK_IS(users.try_acquire_batch(nullptr, 0, nullptr, 2), Status::insufficient_capacity);
    CHECK_IS(users.try_acquire_batch(nullptr, 0, nullptr, 1), Status::ok);

    /* 70 new keys, past the 64-key chunk, into a table of capacity 1 (2 slots): one or
     * two fit, the rest find it full. */
    rate::KeyedLimiter small = keyed(1, 1h, 1, 1);
    std::vector<std::string> owned;
    for (int i = 0; i < 70; i++)
        owned.push_back("key" + std::to_string(i));
    std::vector<std::string_view> views(owned.begin(), owned.end());
    std::vector<Status> results(70, Status::internal);
    CHECK_IS(small.try_acquire_batch(views.data(), views.size(), results.data()), Status::ok);
    int admitted = 0, full = 0;
    for (Status status : results) {
        admitted += status == Status::ok;
        full += status == Status::table_full;
    }
    CHECK(admitted >= 1 && admitted <= 2 && admitted + full == 70);
    CHECK_IS(results[69], Status::table_full);

    rate::KeyedLimiter empty;
    CHECK_IS(empty.try_acquire_batch(names, 1, statuses), Status::null);
    return 0;
}

static int test_moves_transfer_the_handle(void) {
    rate::KeyedLimiter empty;
    CHECK(!empty);
    CHECK_IS(empty.acquire_at("k", 1, at(0s)).status(), Status::null);
    CHECK_IS(empty.try_acquire("k"), Status::null);
    CHECK_IS(empty.reserve("k", 1, 1s).status(), Status::null);
    rate::KeyedLimiter first = keyed(1, 2s, 1, 16);
    CHECK_RESULT(first.acquire_at("bob", 1, at(0s)), Status::ok, 1, 1, 0, 0s, 2s, 0s);
    rate::KeyedLimiter second = keyed(5, 1s, 5, 16);
    second = std::move(first); /* frees second's table, takes first's */
    CHECK(!first);             /* NOLINT(bugprone-use-after-move) */
    CHECK_RESULT(second.acquire_at("bob", 1, at(1s)), Status::limited, 0, 1, 0, 1s, 1s, 0s);
    return 0;
}

static int test_threads_share_one_key(void) {
    /* L=100, P=1 s, B=100 (T = 10 ms): 4 threads try 50 each for one key at a frozen
     * t = 42 s, and 50 each for a key of their own. Exactly 100 are admitted for the shared
     * key, and 50 for each own key (within its burst). */
    rate::KeyedLimiter table = keyed(100, 1s, 100, 64);
    std::atomic<int> shared_admitted{0}, own_admitted{0}, failed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
        threads.emplace_back([&, t] {
            const std::string own = "thread " + std::to_string(t);
            for (int i = 0; i < 50; i++) {
                const auto shared = table.acquire_at("shared", 1, at(42s));
                const auto mine = table.acquire_at(own, 1, at(42s));
                if (!shared.ok() || !mine.ok())
                    failed++;
                else {
                    shared_admitted += shared->allowed;
                    own_admitted += mine->allowed;
                }
            }
        });
    }
    for (std::thread& thread : threads)
        thread.join();
    CHECK_EQ_U64(failed.load(), 0);
    CHECK_EQ_U64(shared_admitted.load(), 100);
    CHECK_EQ_U64(own_admitted.load(), 200);
    /* Shared key: TAT = 43 s, retry 10 ms. Own key: TAT = 42.5 s, remaining 50. */
    CHECK_RESULT(table.acquire_at("shared", 1, at(42s)), Status::limited, 0, 100, 0, 10ms, 1s,
                 0s);
    CHECK_RESULT(table.acquire_at("thread 0", 0, at(42s)), Status::ok, 1, 100, 50, 0s, 500ms,
                 0s);
    return 0;
}

#if RATE_HPP_EXCEPTIONS
static int test_throwing_constructor(void) {
    try {
        rate::KeyedLimiter table(rate::Config::gcra(1, 1s), 0);
        CHECK(!"the constructor threw no rate::Error on capacity 0");
    } catch (const rate::Error& error) {
        CHECK_IS(error.status(), Status::invalid_config);
    }
    rate::KeyedLimiter table(rate::Config::gcra(1, 1s), 8);
    CHECK(table.acquire_at("k", 1, at(0s)).value().allowed);
    /* value() of a failed open throws its status. */
    try {
        const auto config = rate::Config::gcra(1, 1s);
        (void)rate::KeyedLimiter::open("/nonexistent-librate-dir/table", config, 8).value();
        CHECK(!"value() threw no rate::Error on a failed open");
    } catch (const rate::Error& error) {
        CHECK_IS(error.status(), Status::io);
    }
    return 0;
}
#endif

static int test_set_config_keeps_each_keys_tokens(void) {
    /* L=5, P=1 s, B=5 (T = 200 ms): bob takes 3 at 0 (2 tokens), ann 1 (4). Changed to
     * L=1, P=1 s, B=4 (T = 1 s, tau = 4 s): bob's 2 tokens are TAT 2 s (reset 2 s), ann's
     * 4 are a full bucket, which starts anew as a new key's: remaining 4, reset 0. */
    rate::KeyedLimiter users = keyed(5, 1s, 5, 16);
    CHECK_IS(users.acquire_at("bob", 3, at(0s)).status(), Status::ok);
    CHECK_IS(users.acquire_at("ann", 1, at(0s)).status(), Status::ok);
    CHECK_IS(users.set_config_at(rate::Config::gcra(1, 1s, 4), at(0s)), Status::ok);
    CHECK_RESULT(users.acquire_at("bob", 0, at(0s)), Status::ok, 1, 4, 2, 0s, 2s, 0s);
    CHECK_RESULT(users.acquire_at("ann", 0, at(0s)), Status::ok, 1, 4, 4, 0s, 0s, 0s);
    CHECK_IS(users.set_config(rate::Config::fixed_window(4, 1s)), Status::invalid_config);
    CHECK_RESULT(users.acquire_at("bob", 0, at(0s)), Status::ok, 1, 4, 2, 0s, 2s, 0s);
    CHECK_IS(rate::KeyedLimiter{}.set_config(rate::Config::gcra(1, 1s)), Status::null);
    return 0;
}

/* A shared table's rule changes in its file: open_replacing() gives it the opener's rule,
 * the handles already open follow, and set_config() through any handle changes it for
 * all. On the real clock (an opener's change is made now) with hour-long periods, so no
 * token refills during the test: 10 an hour with 4 taken leaves ann 6 tokens, which fit
 * the new burst of 20. */
static int test_open_replacing_changes_the_file(void) {
    char dir[] = "/tmp/librate-keyed-hpp-XXXXXX";
    CHECK(mkdtemp(dir) != nullptr);
    const std::string file = std::string(dir) + "/table";
    auto first = rate::KeyedLimiter::open(file.c_str(), rate::Config::gcra(10, 1h), 8);
    CHECK_IS(first.status(), Status::ok);
    rate::KeyedLimiter old = std::move(first).value_or({});
    const auto took = old.acquire("ann", 4).value_or({});
    CHECK(took.allowed && took.limit == 10 && took.remaining == 6);
    CHECK_IS(rate::KeyedLimiter::open(file.c_str(), rate::Config::gcra(20, 1h), 8).status(),
             Status::incompatible);
    CHECK(rate::describe_file(file.c_str()).value_or("") ==
          file + ": a librate keyed table of capacity 8 holding GCRA, limit 10, period_ns "
                 "3600000000000, burst 10");
    /* What cannot be carried over, or is another table, is refused; the file is kept. */
    CHECK_IS(rate::KeyedLimiter::open_replacing(file.c_str(), rate::Config::fixed_window(20, 1h),
                                                8)
                 .status(),
             Status::invalid_config);
    CHECK_IS(rate::KeyedLimiter::open_replacing(file.c_str(), rate::Config::gcra(20, 1h), 9)
                 .status(),
             Status::incompatible);
    CHECK_IS(rate::KeyedLimiter::open_replacing(nullptr, rate::Config::gcra(20, 1h), 8).status(),
             Status::null);
    auto second = rate::KeyedLimiter::open_replacing(file.c_str(), rate::Config::gcra(20, 1h), 8);
    CHECK_IS(second.status(), Status::ok);
    rate::KeyedLimiter replaced = std::move(second).value_or({});
    const auto query = old.acquire("ann", 0).value_or({});
    CHECK(query.allowed && query.limit == 20 && query.remaining == 6);
    CHECK_EQ_U64(replaced.acquire("bob", 0).value_or({}).remaining, 20);
    CHECK(rate::describe_file(file.c_str()).value_or("") ==
          file + ": a librate keyed table of capacity 8 holding GCRA, limit 20, period_ns "
                 "3600000000000, burst 20 (its rule changed 1 time since it was made)");
    /* set_config() through the old handle changes it again, for both: ann's 6 tokens are
     * capped at 3, a full bucket. */
    CHECK_IS(old.set_config(rate::Config::gcra(3, 1h)), Status::ok);
    const auto capped = replaced.acquire("ann", 0).value_or({});
    CHECK(capped.limit == 3 && capped.remaining == 3);
    CHECK(rate::describe_file(file.c_str()).value_or("") ==
          file + ": a librate keyed table of capacity 8 holding GCRA, limit 3, period_ns "
                 "3600000000000, burst 3 (its rule changed 2 times since it was made)");
    CHECK(std::remove(file.c_str()) == 0 && rmdir(dir) == 0);
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_set_config_keeps_each_keys_tokens),
        TEST_CASE(test_open_replacing_changes_the_file),
        TEST_CASE(test_create_reports_bad_configs),
        TEST_CASE(test_open_shares_a_file),
        TEST_CASE(test_seed_bob_and_alice),
        TEST_CASE(test_keys_are_bytes),
        TEST_CASE(test_queries_and_costs),
        TEST_CASE(test_reserve_waits_in_line),
        TEST_CASE(test_full_table),
        TEST_CASE(test_reset_and_stats),
        TEST_CASE(test_batch),
        TEST_CASE(test_moves_transfer_the_handle),
        TEST_CASE(test_threads_share_one_key),
#if RATE_HPP_EXCEPTIONS
        TEST_CASE(test_throwing_constructor),
#endif
    };
    return run_tests("test_keyed_hpp", cases, sizeof cases / sizeof cases[0]);
}
