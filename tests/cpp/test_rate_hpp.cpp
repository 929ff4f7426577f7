/* Tests of include/rate.hpp's rate::Limiter, Result, Decision, Config, Clock and Status,
 * linked against librate.so. Run by `cargo test` (tests/cpp_api.rs): with exceptions,
 * without them (-fno-exceptions), and under ASan + UBSan.
 *
 * Expected values are worked out by hand from docs/decision.md, as in tests/c/test_limiter.c:
 * GCRA with limit L, period P, burst B: T = floor(P / L), tau = B*T; a request of n at t
 * (waiting at most W) sees tat = max(TAT, t), is admitted iff tat + n*T - t <= tau + W, then
 * TAT := tat + n*T and wait = max(0, tat + n*T - t - tau). With debt = max(0, TAT - t):
 * remaining = floor((tau - debt) / T) (0 when debt > tau), reset_after = debt, and a
 * denial's retry_after = TAT + n*T - t - tau - W.
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

#ifndef RATE_EXPECTED_VERSION
#error "compile with -DRATE_EXPECTED_VERSION='\"<Cargo.toml version>\"'"
#endif

using rate::Status;

static_assert(!std::is_copy_constructible_v<rate::Limiter>);
static_assert(!std::is_copy_assignable_v<rate::Limiter>);
static_assert(std::is_nothrow_move_constructible_v<rate::Limiter>);
static_assert(std::is_nothrow_move_assignable_v<rate::Limiter>);
static_assert(std::is_nothrow_default_constructible_v<rate::Limiter>);
static_assert(rate::Clock::is_steady);

/* A limiter from a config the test knows is valid, or an empty one (which the caller's
 * checks then fail on: every call returns Status::null). */
static rate::Limiter gcra(std::uint64_t limit, std::chrono::nanoseconds period,
                          std::uint64_t burst) {
    return rate::Limiter::create(rate::Config::gcra(limit, period, burst)).value_or({});
}

static int test_status_mirrors_the_c_codes(void) {
    static_assert(static_cast<std::int32_t>(Status::ok) == RATE_OK);
    static_assert(static_cast<std::int32_t>(Status::limited) == RATE_LIMITED);
    static_assert(static_cast<std::int32_t>(Status::null) == RATE_E_NULL);
    static_assert(static_cast<std::int32_t>(Status::invalid_config) == RATE_E_INVALID_CONFIG);
    static_assert(static_cast<std::int32_t>(Status::insufficient_capacity) ==
                  RATE_E_INSUFFICIENT_CAPACITY);
    static_assert(static_cast<std::int32_t>(Status::table_full) == RATE_E_TABLE_FULL);
    static_assert(static_cast<std::int32_t>(Status::unsupported) == RATE_E_UNSUPPORTED);
    static_assert(static_cast<std::int32_t>(Status::internal) == RATE_E_INTERNAL);
    static_assert(static_cast<std::int32_t>(Status::io) == RATE_E_IO);
    static_assert(static_cast<std::int32_t>(Status::incompatible) == RATE_E_INCOMPATIBLE);
    static_assert(!rate::is_error(Status::ok) && !rate::is_error(Status::limited));
    static_assert(rate::is_error(Status::null) && rate::is_error(Status::internal));
    for (std::int32_t code = RATE_E_INCOMPATIBLE - 1; code <= RATE_LIMITED + 1; code++) {
        const auto status = static_cast<Status>(code);
        CHECK_EQ_STR(std::string(rate::to_string(status)).c_str(), rate_status_str(code));
    }
    CHECK(rate::to_string(static_cast<Status>(42)) == "unknown status");
    CHECK(rate::to_string(Status::invalid_config) == "invalid configuration");
    return 0;
}

static int test_open_shares_a_file(void) {
    char path[] = "/tmp/librate-hpp-XXXXXX";
    CHECK(mkdtemp(path) != nullptr);
    const std::string file = std::string(path) + "/limit";
    const auto config = rate::Config::gcra(1, 3600s);
    auto first = rate::Limiter::open(file.c_str(), config);
    auto second = rate::Limiter::open(file.c_str(), config);
    CHECK(first.status() == Status::ok && second.status() == Status::ok);
    rate::Limiter a = std::move(first).value_or({});
    rate::Limiter b = std::move(second).value_or({});
    CHECK(a.acquire_at(1, rate::Clock::time_point{}).value_or({}).allowed);
    CHECK(!b.acquire_at(1, rate::Clock::time_point{}).value_or({}).allowed);
    CHECK(rate::Limiter::open(file.c_str(), rate::Config::gcra(2, 3600s)).status() ==
          Status::incompatible);
    const std::string missing = std::string(path) + "/none/limit";
    CHECK(rate::Limiter::open(missing.c_str(), config).status() == Status::io);
    CHECK(errno == ENOENT);
    CHECK(std::remove(file.c_str()) == 0 && rmdir(path) == 0);
    return 0;
}

/* open_replacing() gives the file its rule, the handles already open follow, and
 * describe_file() says so, whole however long the path (it outgrows RATE_REASON_LEN here).
 * On the real clock with hour-long periods, so no token refills during the test: 10 an
 * hour with 4 taken leaves 6 tokens, capped at 5 by the new rule, 5 an hour. */
static int test_open_replacing_and_describe_file(void) {
    char path[] = "/tmp/librate-hpp-XXXXXX";
    CHECK(mkdtemp(path) != nullptr);
    const std::string file = std::string(path) + "/" + std::string(200, 'x');
    auto first = rate::Limiter::open(file.c_str(), rate::Config::gcra(10, 3600s));
    CHECK(first.status() == Status::ok);
    rate::Limiter old = std::move(first).value_or({});
    const auto took = old.acquire(4).value_or({});
    CHECK(took.allowed && took.limit == 10 && took.remaining == 6);
    CHECK(rate::Limiter::open(file.c_str(), rate::Config::gcra(5, 3600s)).status() ==
          Status::incompatible);
    const auto held = rate::describe_file(file.c_str());
    CHECK(held.status() == Status::ok);
    CHECK(held.value_or("") == file + ": a librate limiter holding GCRA, limit 10, period_ns "
                                      "3600000000000, burst 10");
    auto second = rate::Limiter::open_replacing(file.c_str(), rate::Config::gcra(5, 3600s));
    CHECK(second.status() == Status::ok);
    rate::Limiter replaced = std::move(second).value_or({});
    const auto query = old.acquire(0).value_or({});
    CHECK(query.allowed && query.limit == 5 && query.remaining == 5);
    CHECK(replaced.try_acquire(5) == Status::ok);
    CHECK(old.try_acquire(1) == Status::limited);
    CHECK(rate::describe_file(file.c_str()).value_or("") ==
          file + ": a librate limiter holding GCRA, limit 5, period_ns 3600000000000, burst 5 "
                 "(its rule changed 1 time since it was made)");
    /* Another algorithm cannot carry the state over: refused, the file's rule kept. */
    CHECK(rate::Limiter::open_replacing(file.c_str(), rate::Config::fixed_window(5, 3600s))
              .status() == Status::invalid_config);
    CHECK(old.acquire(0).value_or({}).limit == 5);
    /* A missing file: Status::io, errno ENOENT; NULL: Status::null. */
    const std::string missing = std::string(path) + "/missing";
    errno = 0;
    CHECK(rate::describe_file(missing.c_str()).status() == Status::io);
    CHECK(errno == ENOENT);
    CHECK(rate::describe_file(nullptr).status() == Status::null);
    CHECK(std::remove(file.c_str()) == 0 && rmdir(path) == 0);
    return 0;
}

static int test_version_matches_cargo_toml(void) {
    CHECK(rate::version() == RATE_EXPECTED_VERSION);
    return 0;
}

static int test_config_maps_to_the_c_struct(void) {
    constexpr rate_config g = rate::Config::gcra(5, 1s, 7).to_c();
    static_assert(g.algorithm == RATE_GCRA && g.limit == 5 && g.period_ns == 1000000000 &&
                  g.burst == 7);
    constexpr rate_config b = rate::Config::gcra(5, 250ms).to_c(); /* burst defaults to 0 */
    static_assert(b.period_ns == 250000000 && b.burst == 0);
    constexpr rate_config f = rate::Config::fixed_window(3, 2min).to_c();
    static_assert(f.algorithm == RATE_FIXED_WINDOW && f.limit == 3 &&
                  f.period_ns == 120000000000 && f.burst == 0);
    constexpr rate_config s = rate::Config::sliding_window(4, 3ns).to_c();
    static_assert(s.algorithm == RATE_SLIDING_WINDOW && s.limit == 4 && s.period_ns == 3);
    constexpr rate_config l = rate::Config::sliding_log(9, 1h).to_c();
    static_assert(l.algorithm == RATE_SLIDING_LOG && l.period_ns == 3600000000000);
    /* A negative period becomes 0, which the library rejects (see the next test). */
    static_assert(rate::Config::gcra(1, -1s).to_c().period_ns == 0);
    return 0;
}

static int test_create_reports_bad_configs(void) {
    const rate::Config invalid[] = {
        rate::Config::gcra(0, 1s),                    /* L = 0 */
        rate::Config::gcra(1, 0s),                    /* P = 0 */
        rate::Config::gcra(1, -1s),                   /* P < 0 */
        rate::Config::gcra(10, 9ns),                  /* T = floor(9 / 10) = 0 */
        {static_cast<rate::Algorithm>(4), 1, 1s, 0},  /* no such algorithm */
        {static_cast<rate::Algorithm>(~0u), 1, 1s, 0}, /* nor this */
    };
    for (const rate::Config& config : invalid) {
        auto created = rate::Limiter::create(config);
        CHECK_IS(created.status(), Status::invalid_config);
        CHECK(!created.ok());
        CHECK(!created);
        /* value_or gives the fallback: here an empty handle. */
        CHECK(!std::move(created).value_or(rate::Limiter{}));
    }
    auto created = rate::Limiter::create(rate::Config::gcra(1, 1s));
    CHECK_IS(created.status(), Status::ok);
    CHECK(created.ok());
    CHECK(*created);
    CHECK(created->native_handle() != nullptr);
    return 0;
}

static int test_seed_bob(void) {
    /* L=1, P=2 s, B=1: T = tau = 2 s. */
    rate::Limiter bob = gcra(1, 2s, 1);
    /* t=0: 0 + 2 - 0 <= 2, admitted; TAT = 2 s, debt 2 s: remaining 0, reset 2 s. */
    CHECK_RESULT(bob.acquire_at(1, at(0ms)), Status::ok, 1, 1, 0, 0s, 2s, 0s);
    /* t=999 ms: 2 + 2 - 0.999 > 2, denied; retry 2 + 2 - 0.999 - 2 = 1.001 s = reset. */
    CHECK_RESULT(bob.acquire_at(1, at(999ms)), Status::limited, 0, 1, 0, 1001ms, 1001ms, 0s);
    /* t=1000 ms: denied, retry and reset 1 s. */
    CHECK_RESULT(bob.acquire_at(1, at(1000ms)), Status::limited, 0, 1, 0, 1s, 1s, 0s);
    /* t=2001 ms: tat = 2.001, 2.001 + 2 - 2.001 <= 2, admitted; TAT = 4.001 s, debt 2 s. */
    CHECK_RESULT(bob.acquire_at(1, at(2001ms)), Status::ok, 1, 1, 0, 0s, 2s, 0s);
    return 0;
}

static int test_reset_makes_bob_new(void) {
    /* L=1, P=2 s, B=1, as above: denied at 1 s, then reset, then admitted as new (TAT 3 s,
     * debt 2 s). An empty handle resets nothing. */
    rate::Limiter bob = gcra(1, 2s, 1);
    CHECK_RESULT(bob.acquire_at(1, at(0ms)), Status::ok, 1, 1, 0, 0s, 2s, 0s);
    CHECK_RESULT(bob.acquire_at(1, at(1s)), Status::limited, 0, 1, 0, 1s, 1s, 0s);
    CHECK_IS(bob.reset(), Status::ok);
    CHECK_RESULT(bob.acquire_at(1, at(1s)), Status::ok, 1, 1, 0, 0s, 2s, 0s);
    CHECK_IS(rate::Limiter{}.reset(), Status::null);
    return 0;
}

static int test_set_config_keeps_the_tokens(void) {
    /* L=5, P=1 s, B=5 (T = 200 ms): 3 taken at 0, 2 tokens. Changed to L=1, P=1 s, B=4
     * (T = 1 s, tau = 4 s): 2 tokens, TAT 2 s: remaining 2, reset 2 s. */
    rate::Limiter limiter = gcra(5, 1s, 5);
    CHECK_IS(limiter.acquire_at(3, at(0s)).status(), Status::ok);
    CHECK_IS(limiter.set_config_at(rate::Config::gcra(1, 1s, 4), at(0s)), Status::ok);
    CHECK_RESULT(limiter.acquire_at(0, at(0s)), Status::ok, 1, 4, 2, 0s, 2s, 0s);
    CHECK_IS(limiter.set_config(rate::Config::fixed_window(4, 1s)), Status::invalid_config);
    CHECK_IS(rate::Limiter{}.set_config(rate::Config::gcra(1, 1s)), Status::null);
    return 0;
}

static int test_queries_and_costs(void) {
    /* L=5, P=1 s, B=5: T = 200 ms, tau = 1 s. */
    rate::Limiter limiter = gcra(5, 1s, 5);
    /* 2 units at 0: TAT = 400 ms; remaining floor(600 / 200) = 3, reset 400 ms. */
    CHECK_RESULT(limiter.acquire_at(2, at(0s)), Status::ok, 1, 5, 3, 0s, 400ms, 0s);
    /* A query (n = 0) reports the same state and changes nothing. */
    CHECK_RESULT(limiter.acquire_at(0, at(0s)), Status::ok, 1, 5, 3, 0s, 400ms, 0s);
    /* 3 more: 400 + 600 - 0 <= 1000, admitted; TAT = 1 s: remaining 0, reset 1 s. */
    CHECK_RESULT(limiter.acquire_at(3, at(0s)), Status::ok, 1, 5, 0, 0s, 1s, 0s);
    /* 1 more: denied, retry 1000 + 200 - 0 - 1000 = 200 ms. */
    CHECK_RESULT(limiter.acquire_at(1, at(0s)), Status::limited, 0, 5, 0, 200ms, 1s, 0s);
    /* A query while exhausted is still admitted and still changes nothing. */
    CHECK_RESULT(limiter.acquire_at(0, at(0s)), Status::ok, 1, 5, 0, 0s, 1s, 0s);
    /* n = 6 > B = 5 can never be admitted: an error, not a denial, and no decision. */
    auto too_big = limiter.acquire_at(6, at(0s));
    CHECK_IS(too_big.status(), Status::insufficient_capacity);
    CHECK(!too_big.ok());
    CHECK(!too_big.value_or(rate::Decision{}).allowed);
    CHECK_IS(limiter.try_acquire(6), Status::insufficient_capacity);
    /* At 1 s the debt is gone: 1 unit admitted, TAT = 1.2 s, remaining 4, reset 200 ms. */
    CHECK_RESULT(limiter.acquire_at(1, at(1s)), Status::ok, 1, 5, 4, 0s, 200ms, 0s);
    return 0;
}

static int test_reserve_waits_in_line(void) {
    /* L=1000, P=1 s, B=1: T = tau = 1 ms; W = 1 ms, everything at t = 0. */
    rate::Limiter limiter = gcra(1000, 1s, 1);
    /* 1st: 0 + 1 - 0 <= 1 + 1; wait max(0, 1 - 1) = 0; TAT = 1 ms: debt 1 ms. */
    CHECK_RESULT(limiter.reserve_at(1, at(0s), 1ms), Status::ok, 1, 1, 0, 0s, 1ms, 0s);
    /* 2nd: 1 + 1 - 0 <= 2; wait 2 - 1 = 1 ms; TAT = 2 ms. */
    CHECK_RESULT(limiter.reserve_at(1, at(0s), 1ms), Status::ok, 1, 1, 0, 0s, 2ms, 1ms);
    /* 3rd: 2 + 1 > 2: denied; retry 2 + 1 - 0 - 1 - 1 = 1 ms. */
    CHECK_RESULT(limiter.reserve_at(1, at(0s), 1ms), Status::limited, 0, 1, 0, 1ms, 2ms, 0s);
    /* A negative max_wait counts as 0, i.e. a plain acquire: retry 2 + 1 - 0 - 1 = 2 ms. */
    CHECK_RESULT(limiter.reserve_at(1, at(0s), -5ms), Status::limited, 0, 1, 0, 2ms, 2ms, 0s);
    CHECK_RESULT(limiter.acquire_at(1, at(0s)), Status::limited, 0, 1, 0, 2ms, 2ms, 0s);
    /* On the library clock, a fresh limiter admits at once; TAT = now + 1 ms. */
    rate::Limiter fresh = gcra(1000, 1s, 1);
    CHECK_RESULT(fresh.reserve(1, 10ms), Status::ok, 1, 1, 0, 0s, 1ms, 0s);
    return 0;
}

static int test_time_before_zero_counts_as_zero(void) {
    /* L=1, P=2 s, B=1 as for Bob: -5 s acts as 0, so at 0 the limiter is spent. */
    rate::Limiter limiter = gcra(1, 2s, 1);
    CHECK_RESULT(limiter.acquire_at(1, at(-5s)), Status::ok, 1, 1, 0, 0s, 2s, 0s);
    CHECK_RESULT(limiter.acquire_at(1, at(0s)), Status::limited, 0, 1, 0, 2s, 2s, 0s);
    return 0;
}

static int test_library_clock(void) {
    /* rate::Clock is CLOCK_MONOTONIC, as is steady_clock in libstdc++ and libc++ on Linux,
     * give or take what rate.h allows a TSC reading: 1 us, 4 us in a rare case. */
    const auto bound = std::chrono::microseconds(4);
    const auto before = std::chrono::steady_clock::now().time_since_epoch();
    const auto now = rate::Clock::now().time_since_epoch();
    const auto after = std::chrono::steady_clock::now().time_since_epoch();
    CHECK(before <= now + bound);
    CHECK(now <= after + bound);
    /* L=5, P=1 s, B=5: T = 200 ms. acquire() reads the clock once, at t: TAT = t + 200 ms,
     * so debt = reset = 200 ms, remaining floor(800 / 200) = 4, whatever t is. */
    rate::Limiter limiter = gcra(5, 1s, 5);
    CHECK_RESULT(limiter.acquire(), Status::ok, 1, 5, 4, 0s, 200ms, 0s);
    /* L=1, P=1 h: one admission, then denials for an hour. */
    rate::Limiter hourly = gcra(1, 1h, 1);
    CHECK_IS(hourly.try_acquire(), Status::ok);
    CHECK_IS(hourly.try_acquire(), Status::limited);
    CHECK_IS(hourly.try_acquire(0), Status::ok); /* a query is always admitted */
    return 0;
}

static int test_moves_transfer_the_handle(void) {
    rate::Limiter empty;
    CHECK(!empty);
    CHECK(empty.native_handle() == nullptr);
    CHECK_IS(empty.acquire_at(1, at(0s)).status(), Status::null);
    CHECK_IS(empty.try_acquire(), Status::null);
    CHECK_IS(empty.reserve(1, 1s).status(), Status::null);

    rate::Limiter first = gcra(1, 2s, 1);
    rate_limiter* const raw = first.native_handle();
    CHECK(raw != nullptr);
    CHECK_RESULT(first.acquire_at(1, at(0s)), Status::ok, 1, 1, 0, 0s, 2s, 0s);
    rate::Limiter second = std::move(first);
    CHECK(!first); /* NOLINT(bugprone-use-after-move): moved-from is empty, by contract */
    CHECK_IS(first.acquire_at(1, at(0s)).status(), Status::null);
    CHECK(second.native_handle() == raw);
    /* The state moved too: TAT = 2 s, so at 1 s a request is denied with retry 1 s. */
    CHECK_RESULT(second.acquire_at(1, at(1s)), Status::limited, 0, 1, 0, 1s, 1s, 0s);

    /* Move assignment frees the target's old limiter (the sanitizer and valgrind runs
     * would report the leak) and takes the source's. */
    rate::Limiter third = gcra(5, 1s, 5);
    third = std::move(second);
    CHECK(!second);
    CHECK(third.native_handle() == raw);
    rate::Limiter& alias = third;
    third = std::move(alias); /* self-assignment keeps the handle */
    CHECK(third.native_handle() == raw);
    CHECK_RESULT(third.acquire_at(1, at(1s)), Status::limited, 0, 1, 0, 1s, 1s, 0s);
    return 0;
}

static int test_decision_durations(void) {
    const rate_decision plain = {1, 5, 4, 0, 123, 7};
    const rate::Decision d = rate::Decision::from_c(plain);
    CHECK(d.allowed);
    CHECK_EQ_U64(d.limit, 5);
    CHECK_EQ_U64(d.remaining, 4);
    CHECK(d.retry_after == 0ns && d.reset_after == 123ns && d.wait == 7ns);
    /* UINT64_MAX ("never") and anything from INT64_MAX up saturate at rate::never. */
    const rate_decision huge = {0, 1, 0, UINT64_MAX, UINT64_C(0x7FFFFFFFFFFFFFFF),
                                UINT64_C(0x8000000000000000)};
    const rate::Decision h = rate::Decision::from_c(huge);
    CHECK(!h.allowed);
    CHECK(h.retry_after == rate::never && h.reset_after == rate::never && h.wait == rate::never);
    const rate_decision below = {0, 1, 0, UINT64_C(0x7FFFFFFFFFFFFFFE), 0, 0};
    CHECK(rate::Decision::from_c(below).retry_after == rate::never - 1ns);
    return 0;
}

static int test_threads_share_one_limiter(void) {
    /* L=100, P=1 s, B=100: T = 10 ms, tau = 1 s. 4 threads try 50 each at a frozen
     * t = 42 s: exactly B = 100 are admitted, and then TAT = 42 s + 100 * 10 ms = 43 s. */
    rate::Limiter limiter = gcra(100, 1s, 100);
    std::atomic<int> admitted{0};
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
        threads.emplace_back([&] {
            for (int i = 0; i < 50; i++) {
                const auto result = limiter.acquire_at(1, at(42s));
                if (!result.ok())
                    failed++;
                else if (result->allowed)
                    admitted++;
            }
        });
    }
    for (std::thread& thread : threads)
        thread.join();
    CHECK_EQ_U64(failed.load(), 0);
    CHECK_EQ_U64(admitted.load(), 100);
    /* Denied: retry 43 + 0.01 - 42 - 1 = 10 ms; debt 1 s. */
    CHECK_RESULT(limiter.acquire_at(1, at(42s)), Status::limited, 0, 100, 0, 10ms, 1s, 0s);
    return 0;
}

#if RATE_HPP_EXCEPTIONS
static int test_exceptions_carry_the_status(void) {
    try {
        rate::Limiter limiter(rate::Config::gcra(0, 1s));
        CHECK(!"the constructor threw no rate::Error on a zero limit");
    } catch (const rate::Error& error) {
        CHECK_IS(error.status(), Status::invalid_config);
        CHECK_EQ_STR(error.what(), "librate: invalid configuration");
    }
    rate::Limiter limiter(rate::Config::gcra(1, 1s));
    CHECK(limiter);
    auto too_big = limiter.acquire_at(2, at(0s));
    try {
        (void)too_big.value();
        CHECK(!"value() threw no rate::Error on an error status");
    } catch (const rate::Error& error) {
        CHECK_IS(error.status(), Status::insufficient_capacity);
    }
    /* A denial is a decision, not an error: value() gives it. */
    CHECK(limiter.acquire_at(1, at(0s)).value().allowed);
    CHECK(!limiter.acquire_at(1, at(0s)).value().allowed);
    return 0;
}
#else
static int test_built_without_exceptions(void) {
    /* This build uses -fno-exceptions: rate.hpp compiled, and throws nothing. */
    static_assert(RATE_HPP_EXCEPTIONS == 0);
    return 0;
}
#endif

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_status_mirrors_the_c_codes),
        TEST_CASE(test_version_matches_cargo_toml),
        TEST_CASE(test_open_shares_a_file),
        TEST_CASE(test_open_replacing_and_describe_file),
        TEST_CASE(test_config_maps_to_the_c_struct),
        TEST_CASE(test_create_reports_bad_configs),
        TEST_CASE(test_seed_bob),
        TEST_CASE(test_reset_makes_bob_new),
        TEST_CASE(test_set_config_keeps_the_tokens),
        TEST_CASE(test_queries_and_costs),
        TEST_CASE(test_reserve_waits_in_line),
        TEST_CASE(test_time_before_zero_counts_as_zero),
        TEST_CASE(test_library_clock),
        TEST_CASE(test_moves_transfer_the_handle),
        TEST_CASE(test_decision_durations),
        TEST_CASE(test_threads_share_one_limiter),
#if RATE_HPP_EXCEPTIONS
        TEST_CASE(test_exceptions_carry_the_status),
#else
        TEST_CASE(test_built_without_exceptions),
#endif
    };
    return run_tests("test_rate_hpp", cases, sizeof cases / sizeof cases[0]);
}
