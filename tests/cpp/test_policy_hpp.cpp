/* Tests of include/rate.hpp's rate::Policy and rate::PolicyDecision, linked against
 * librate.so. Run by `cargo test` (tests/cpp_api.rs) with exceptions, without them, and
 * under ASan + UBSan.
 *
 * The scenario is tests/c/test_policy.c's, worked out there from docs/decision.md and
 * docs/policies.md: 2 a second (GCRA, burst 2: T = 500 ms) and 3 a minute (a fixed window).
 */
#include <algorithm>
#include <atomic>
#include <thread>
#include <type_traits>
#include <vector>

#include "check.hpp"

using rate::Status;

static_assert(!std::is_copy_constructible_v<rate::Policy>);
static_assert(!std::is_copy_assignable_v<rate::Policy>);
static_assert(std::is_nothrow_move_constructible_v<rate::Policy>);
static_assert(std::is_nothrow_move_assignable_v<rate::Policy>);
static_assert(std::is_nothrow_default_constructible_v<rate::Policy>);
static_assert(rate::Policy::max_rules == RATE_POLICY_MAX_RULES);

/* Fails the current test case unless the rate::Decision `d` is {allowed, limit, remaining,
 * retry_after, reset_after} with wait 0, the durations given as std::chrono durations. */
#define CHECK_RULE(d, allowed, limit, remaining, retry_after, reset_after)                      \
    do {                                                                                    \
        const rate_decision actual_ = c_decision(d);                                        \
        CHECK_DECISION(actual_, (allowed), (limit), (remaining), ns(retry_after),           \
                       ns(reset_after), 0);                                                 \
    } while (0)

/* The two rules, or an empty policy (which the caller's checks then fail on). */
static rate::Policy two_rules(void) {
    return rate::Policy::create({rate::Config::gcra(2, 1s), rate::Config::fixed_window(3, 60s)})
        .value_or({});
}

static int test_all_or_nothing(void) {
    rate::Policy policy = two_rules();
    CHECK(policy);
    /* At 0 the first unit leaves the GCRA rule 1 of 2 (TAT 0.5 s), the window 2 of 3. */
    auto d = policy.acquire_at(1, at(0s));
    CHECK_IS(d.status(), Status::ok);
    CHECK(!d->denied_by && d->rules_len == 2);
    CHECK_RULE(d->decision, 1, 2, 1, 0s, 60s);
    CHECK_RULE(d->rules[0], 1, 2, 1, 0s, 500ms);
    CHECK_RULE(d->rules[1], 1, 3, 2, 0s, 60s);
    CHECK_IS(policy.acquire_at(1, at(0s)).status(), Status::ok);
    /* The GCRA rule is empty until 0.5 s; the window gives its unit back: 1 left. */
    d = policy.acquire_at(1, at(0s));
    CHECK_IS(d.status(), Status::limited);
    CHECK(d->denied_by == std::optional<std::size_t>(0));
    CHECK_RULE(d->decision, 0, 2, 0, 500ms, 60s);
    CHECK_RULE(d->rules[0], 0, 2, 0, 500ms, 1s);
    CHECK_RULE(d->rules[1], 1, 3, 1, 0s, 60s);
    /* At 1 s the third unit fits both; at 2 s the window denies until 1:00. */
    CHECK_IS(policy.acquire_at(1, at(1s)).status(), Status::ok);
    d = policy.acquire_at(1, at(2s));
    CHECK_IS(d.status(), Status::limited);
    CHECK(d->denied_by == std::optional<std::size_t>(1));
    CHECK_RULE(d->decision, 0, 2, 0, 58s, 58s);
    CHECK_RULE(d->rules[0], 1, 2, 2, 0s, 0s);
    /* A query: admitted, nothing taken. */
    d = policy.acquire_at(0, at(2s));
    CHECK_IS(d.status(), Status::ok);
    CHECK_RULE(d->rules[0], 1, 2, 2, 0s, 0s);
    CHECK_RULE(d->rules[1], 1, 3, 0, 0s, 58s);
    return 0;
}

static int test_real_clock(void) {
    /* 1 an hour and 5 a day: one unit now, then the hourly rule denies. */
    auto created =
        rate::Policy::create({rate::Config::gcra(1, 1h), rate::Config::sliding_log(5, 24h)});
    CHECK_IS(created.status(), Status::ok);
    rate::Policy policy = *std::move(created);
    CHECK_IS(policy.try_acquire(), Status::ok);
    CHECK_IS(policy.try_acquire(), Status::limited);
    const auto d = policy.acquire();
    CHECK_IS(d.status(), Status::limited);
    CHECK(d->denied_by == std::optional<std::size_t>(0));
    CHECK(d->decision.retry_after > 59min && d->decision.retry_after <= 1h);
    CHECK_EQ_U64(d->rules[1].remaining, 4);
    return 0;
}

static int test_bad_input(void) {
    std::vector<rate::Config> nine(9, rate::Config::sliding_log(3, 1s));
    CHECK_IS(rate::Policy::create(nine.data(), 9).status(), Status::invalid_config);
    CHECK_IS(rate::Policy::create(nine.data(), 0).status(), Status::invalid_config);
    CHECK_IS(rate::Policy::create({}).status(), Status::invalid_config);
    CHECK_IS(rate::Policy::create(nullptr, 0).status(), Status::invalid_config);
    CHECK_IS(rate::Policy::create(nullptr, 1).status(), Status::null);
    CHECK_IS(rate::Policy::create({rate::Config::gcra(1, 1s), rate::Config::gcra(0, 1s)}).status(),
             Status::invalid_config); /* L = 0 */
    CHECK_IS(rate::Policy::create({rate::Config::fixed_window(1, -1s)}).status(),
             Status::invalid_config); /* P < 0 */
    nine[1].limit = 1;
    auto created = rate::Policy::create(nine.data(), rate::Policy::max_rules);
    CHECK_IS(created.status(), Status::ok);
    rate::Policy policy = *std::move(created);
    /* Rule 1 allows 1: a cost of 2 can never be admitted. */
    CHECK_IS(policy.acquire_at(2, at(0s)).status(), Status::insufficient_capacity);
    CHECK(!policy.acquire_at(2, at(0s)).ok());
    CHECK_IS(policy.try_acquire(2), Status::insufficient_capacity);
    CHECK_IS(policy.try_acquire(), Status::ok);
    CHECK_IS(policy.try_acquire(), Status::limited);
    const auto eight = policy.acquire(0);
    CHECK_EQ_U64(eight->rules_len, 8);
    CHECK_EQ_U64(eight->rules[0].remaining, 2);
    CHECK_EQ_U64(eight->rules[1].remaining, 0);
    return 0;
}

static int test_empty_and_moved(void) {
    rate::Policy empty;
    CHECK(!empty);
    CHECK_IS(empty.acquire().status(), Status::null);
    CHECK_IS(empty.acquire_at(1, at(0s)).status(), Status::null);
    CHECK_IS(empty.try_acquire(), Status::null);
    rate::Policy first = two_rules();
    CHECK_IS(first.acquire_at(1, at(0s)).status(), Status::ok);
    rate::Policy second = std::move(first);
    CHECK(!first && second); /* NOLINT(bugprone-use-after-move) */
    CHECK_EQ_U64(second.acquire_at(0, at(0s))->rules[1].remaining, 2);
    second = two_rules(); /* frees the old policy, takes a fresh one */
    CHECK_EQ_U64(second.acquire_at(0, at(0s))->rules[1].remaining, 3);
    return 0;
}

static int test_threads_admit_exactly_the_tighter_limit(void) {
    /* 4 threads take one unit at a time at a frozen 1 s until each is denied: a denial
     * comes only from a full rule, and at most 4 units fail to be given back, never
     * enough to fill the looser rule first. So exactly the tighter limit is admitted,
     * whichever rule it is. */
    const rate::Config pairs[][2] = {
        {rate::Config::gcra(50, 1s), rate::Config::gcra(20, 1s)},
        {rate::Config::gcra(20, 1s), rate::Config::gcra(50, 1s)},
        {rate::Config::fixed_window(30, 1s), rate::Config::sliding_window(25, 1s)},
        {rate::Config::sliding_log(40, 1s), rate::Config::gcra(35, 1s)},
    };
    for (const auto& rules : pairs) {
        const std::uint64_t tighter = std::min(rules[0].limit, rules[1].limit);
        for (int round = 0; round < 20; round++) {
            rate::Policy policy = rate::Policy::create(rules, 2).value_or({});
            std::atomic<std::uint64_t> admitted{0};
            std::atomic<int> failed{0};
            std::vector<std::thread> threads;
            for (int t = 0; t < 4; t++) {
                threads.emplace_back([&] {
                    for (;;) {
                        const auto d = policy.acquire_at(1, at(1s));
                        if (!d.ok())
                            failed++;
                        if (!d.ok() || !d->decision.allowed)
                            return;
                        admitted++;
                    }
                });
            }
            for (std::thread& thread : threads)
                thread.join();
            CHECK_EQ_U64(failed.load(), 0);
            CHECK_EQ_U64(admitted.load(), tighter);
            const auto state = policy.acquire_at(0, at(1s));
            for (std::size_t i = 0; i < state->rules_len; i++)
                CHECK(state->rules[i].limit - state->rules[i].remaining >= tighter);
        }
    }
    return 0;
}

#if RATE_HPP_EXCEPTIONS
static int test_throwing_constructor(void) {
    try {
        rate::Policy policy({rate::Config::gcra(0, 1s)});
        CHECK(!"the constructor threw no rate::Error on a zero limit");
    } catch (const rate::Error& error) {
        CHECK_IS(error.status(), Status::invalid_config);
    }
    rate::Policy policy({rate::Config::gcra(1, 1s), rate::Config::sliding_window(5, 1min)});
    CHECK(policy.acquire_at(1, at(0s)).value().decision.allowed);
    try {
        (void)policy.acquire_at(2, at(0s)).value();
        CHECK(!"value() threw no rate::Error on a cost above the limit");
    } catch (const rate::Error& error) {
        CHECK_IS(error.status(), Status::insufficient_capacity);
    }
    return 0;
}
#endif

/* 2 a second enforced, 1 a second in shadow (tests/c/test_policy.c's test_shadow): the
 * second unit at 0 is admitted, and the shadow rule would have denied it until 1 s. */
static int test_shadow(void) {
    rate::Policy policy =
        rate::Policy::create({rate::Config::gcra(2, 1s), rate::Config::gcra(1, 1s)}).value_or({});
    CHECK(policy);
    CHECK_IS(policy.set_shadow(2), Status::ok);
    CHECK(policy.shadow().value_or(0) == 2);
    CHECK_IS(policy.acquire_at(1, at(0s)).status(), Status::ok);
    auto d = policy.acquire_at(1, at(0s));
    CHECK_IS(d.status(), Status::ok);
    CHECK(!d->denied_by);
    CHECK_RULE(d->decision, 1, 2, 0, 0s, 1s);
    CHECK_RULE(d->rules[1], 0, 1, 0, 1s, 1s);
    CHECK_IS(policy.set_shadow(4), Status::invalid_config);
    CHECK(policy.shadow().value_or(0) == 2);
    CHECK_IS(rate::Policy().set_shadow(0), Status::null);
    CHECK_IS(rate::Policy().shadow().status(), Status::null);
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_all_or_nothing),
        TEST_CASE(test_shadow),
        TEST_CASE(test_real_clock),
        TEST_CASE(test_bad_input),
        TEST_CASE(test_empty_and_moved),
        TEST_CASE(test_threads_admit_exactly_the_tighter_limit),
#if RATE_HPP_EXCEPTIONS
        TEST_CASE(test_throwing_constructor),
#endif
    };
    return run_tests("test_policy_hpp", cases, sizeof cases / sizeof cases[0]);
}
