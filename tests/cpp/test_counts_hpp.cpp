/* Tests of include/rate.hpp's counts (docs/metrics.md, counters): enable_counts() and
 * counts() on rate::Limiter, KeyedLimiter, Policy and KeyedPolicy, linked against
 * librate.so. Run by `cargo test` (tests/cpp_api.rs) with exceptions, without them, and
 * under ASan + UBSan.
 *
 * Every expected value is worked out by hand, as in tests/c/test_counts.c: fixed windows
 * of an hour or a minute from time 0, so a rule of L a window admits the first L units of
 * each window and denies the rest; GCRA of 1 an hour, burst 1, admits one unit at 0 and
 * holds its key live for the hour. A keyed table of capacity 1 holds two live keys
 * (KeyedStats::max_keys): a third new key is refused with Status::table_full.
 */
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unistd.h>
#include <utility>

#include "check.hpp"

using rate::Status;

static_assert(std::is_nothrow_move_constructible_v<rate::Policy>);
static_assert(std::is_nothrow_move_assignable_v<rate::Policy>);
static_assert(std::is_nothrow_move_constructible_v<rate::KeyedPolicy>);
static_assert(std::is_nothrow_move_assignable_v<rate::KeyedPolicy>);
static_assert(std::tuple_size_v<decltype(rate::Counts::rules)> == RATE_POLICY_MAX_RULES);

/* Fails the current test case unless `result` (a rate::Result<rate::Counts>) is Status::ok
 * with the counts {admitted, denied, table_full} and `rules_len` rules. */
#define CHECK_COUNTS(result, admitted_, denied_, table_full_, rules_len_) \
    do {                                                                  \
        const auto& counts_ = (result);                                   \
        CHECK_IS(counts_.status(), Status::ok);                           \
        CHECK_EQ_U64(counts_->admitted, (admitted_));                     \
        CHECK_EQ_U64(counts_->denied, (denied_));                         \
        CHECK_EQ_U64(counts_->table_full, (table_full_));                 \
        CHECK_EQ_U64(counts_->rules_len, (rules_len_));                   \
    } while (0)

/* Fails the current test case unless rule `i` of the rate::Counts `c` is {denied,
 * shadow_denied}. */
#define CHECK_RULE_COUNTS(c, i, denied_, shadow_denied_)              \
    do {                                                              \
        CHECK_EQ_U64((c).rules[(i)].denied, (denied_));               \
        CHECK_EQ_U64((c).rules[(i)].shadow_denied, (shadow_denied_)); \
    } while (0)

/* Three an hour: 5 requests at 0 are 3 admitted and 2 denied. */
static int test_a_limiter_counts_once_enabled(void) {
    rate::Limiter limiter = rate::Limiter::create(rate::Config::fixed_window(3, 1h)).value_or({});
    CHECK(limiter);
    /* Off: nothing to read. */
    CHECK_IS(limiter.counts().status(), Status::unsupported);
    CHECK(!limiter.counts().ok());
    CHECK(limiter.counts().value_or({}).admitted == 0);
    CHECK_IS(limiter.enable_counts(), Status::ok);
    CHECK_COUNTS(limiter.counts(), 0, 0, 0, 0);
    for (int i = 0; i < 5; i++)
        CHECK_IS(limiter.acquire_at(1, at(0s)).status(), i < 3 ? Status::ok : Status::limited);
    /* Not requests: a query, and a cost above the limit. */
    CHECK_IS(limiter.acquire_at(0, at(0s)).status(), Status::ok);
    CHECK_IS(limiter.acquire_at(4, at(0s)).status(), Status::insufficient_capacity);
    CHECK_IS(limiter.enable_counts(), Status::ok); /* on stays on, its counts kept */
    CHECK_COUNTS(limiter.counts(), 3, 2, 0, 0);
    /* A const handle reads, and the counts follow the handle when it moves. */
    const rate::Limiter moved = std::move(limiter);
    CHECK_COUNTS(moved.counts(), 3, 2, 0, 0);
    CHECK_IS(limiter.counts().status(), Status::null); /* NOLINT(bugprone-use-after-move) */
    return 0;
}

/* GCRA of 1 an hour, capacity 1: a admitted, a denied, b admitted, c refused for the full
 * table; a query of the new key d is answered without inserting it, and not counted. */
static int test_a_keyed_limiter_counts_the_full_table(void) {
    rate::KeyedLimiter table =
        rate::KeyedLimiter::create(rate::Config::gcra(1, 1h, 1), 1).value_or({});
    CHECK(table);
    CHECK_IS(table.counts().status(), Status::unsupported);
    CHECK_IS(table.enable_counts(), Status::ok);
    CHECK_IS(table.acquire_at("a", 1, at(0s)).status(), Status::ok);
    CHECK_IS(table.acquire_at("a", 1, at(0s)).status(), Status::limited);
    CHECK_IS(table.acquire_at("b", 1, at(0s)).status(), Status::ok);
    CHECK_IS(table.acquire_at("c", 1, at(0s)).status(), Status::table_full);
    CHECK_IS(table.acquire_at("d", 0, at(0s)).status(), Status::ok);
    CHECK_COUNTS(table.counts(), 2, 1, 1, 0);
    CHECK_EQ_U64(table.stats_at(at(0s))->max_keys, 2);
    CHECK_EQ_U64(table.stats_at(at(0s))->table_full, 1);
    return 0;
}

/* Three an hour and one a minute. At 0: the first admitted, the second denied by rule 1
 * (rule 0 has room). At 1 and 2 minutes: admitted, rule 0 then spent (3 of 3). At 3
 * minutes: denied by rule 0 (rule 1's new minute has room). */
static int test_a_policy_counts_the_rule_that_denied(void) {
    rate::Policy policy = rate::Policy::create({rate::Config::fixed_window(3, 1h),
                                                rate::Config::fixed_window(1, 1min)})
                              .value_or({});
    CHECK(policy);
    CHECK_IS(policy.counts().status(), Status::unsupported); /* off until enabled */
    policy.enable_counts(); // off until asked, on each handle
    CHECK_IS(policy.acquire_at(1, at(0s)).status(), Status::ok);
    CHECK(policy.acquire_at(1, at(0s))->denied_by == std::optional<std::size_t>(1));
    CHECK_IS(policy.acquire_at(1, at(1min)).status(), Status::ok);
    CHECK_IS(policy.acquire_at(1, at(2min)).status(), Status::ok);
    CHECK(policy.acquire_at(1, at(3min))->denied_by == std::optional<std::size_t>(0));
    const rate::Result<rate::Counts> counts = policy.counts(); // Status::unsupported while off
    CHECK_COUNTS(counts, 3, 2, 0, 2);
    CHECK_RULE_COUNTS(*counts, 0, 1, 0);
    CHECK_RULE_COUNTS(*counts, 1, 1, 0);
    CHECK_RULE_COUNTS(*counts, 2, 0, 0); /* past the rules: as constructed */
    CHECK(policy.acquire_at(1, at(3min))->denied_by == std::optional<std::size_t>(0));
    /* The rule count follows the handle when it moves, and a change of rules keeps it. */
    rate::Policy moved = std::move(policy);
    CHECK_IS(moved.set_rules_at({rate::Config::fixed_window(3, 1h),
                                 rate::Config::fixed_window(2, 1min)},
                                at(3min)),
             Status::ok);
    CHECK_COUNTS(moved.counts(), 3, 3, 0, 2);
    CHECK_RULE_COUNTS(*moved.counts(), 0, 2, 0);
    CHECK_RULE_COUNTS(*moved.counts(), 1, 1, 0);
    CHECK_IS(policy.counts().status(), Status::null); /* NOLINT(bugprone-use-after-move) */
    return 0;
}

/* Two a second enforced, one a second in shadow (test_policy_hpp.cpp's test_shadow): both
 * units at 0 admitted, the second a would-be denial of the shadow rule. */
static int test_a_policy_counts_shadow_denials(void) {
    rate::Policy policy =
        rate::Policy::create({rate::Config::gcra(2, 1s), rate::Config::gcra(1, 1s)}).value_or({});
    CHECK(policy);
    CHECK_IS(policy.set_shadow(2), Status::ok);
    CHECK_IS(policy.enable_counts(), Status::ok);
    CHECK_IS(policy.acquire_at(1, at(0s)).status(), Status::ok);
    CHECK_IS(policy.acquire_at(1, at(0s)).status(), Status::ok);
    const auto counts = policy.counts();
    CHECK_COUNTS(counts, 2, 0, 0, 2);
    CHECK_RULE_COUNTS(*counts, 0, 0, 0);
    CHECK_RULE_COUNTS(*counts, 1, 0, 1);
    return 0;
}

/* Two an hour per key, three an hour for everybody, capacity 1 (two live keys): a takes
 * its 2; its third is denied by its per-key rule; b takes the global rule's last unit; c,
 * asking the per-key rule alone, finds the table full; b again is denied by the global
 * rule. */
static int test_a_keyed_policy_counts_per_rule(void) {
    rate::KeyedPolicy policy =
        rate::KeyedPolicy::create({rate::KeyedRule::per_key(rate::Config::fixed_window(2, 1h)),
                                   rate::KeyedRule::global(rate::Config::fixed_window(3, 1h))},
                                  1)
            .value_or({});
    CHECK(policy);
    CHECK_IS(policy.counts().status(), Status::unsupported);
    CHECK_IS(policy.enable_counts(), Status::ok);
    CHECK_IS(policy.acquire_at("a", 2, at(0s)).status(), Status::ok);
    CHECK(policy.acquire_at("a", 1, at(0s))->denied_by == std::optional<std::size_t>(0));
    CHECK_IS(policy.acquire_at("b", 1, at(0s)).status(), Status::ok);
    const std::uint64_t per_key_only[2] = {1, 0};
    CHECK_IS(policy.acquire_costs_at("c", per_key_only, 2, at(0s)).status(), Status::table_full);
    CHECK(policy.acquire_at("b", 1, at(0s))->denied_by == std::optional<std::size_t>(1));
    const auto counts = policy.counts();
    CHECK_COUNTS(counts, 2, 2, 1, 2);
    CHECK_RULE_COUNTS(*counts, 0, 1, 0);
    CHECK_RULE_COUNTS(*counts, 1, 1, 0);
    /* A keyed policy from a shared file knows its rule count as well. */
    char dir[] = "/tmp/librate-hpp-counts-XXXXXX";
    CHECK(mkdtemp(dir) != nullptr);
    const std::string file = std::string(dir) + "/policy";
    rate::KeyedPolicy shared =
        rate::KeyedPolicy::open(file.c_str(),
                                {rate::KeyedRule::per_key(rate::Config::fixed_window(1, 1h)),
                                 rate::KeyedRule::global(rate::Config::fixed_window(5, 1h)),
                                 rate::KeyedRule::global(rate::Config::fixed_window(9, 1h))},
                                4)
            .value_or({});
    CHECK(shared);
    CHECK_IS(shared.enable_counts(), Status::ok);
    CHECK_IS(shared.acquire_at("a", 1, at(0s)).status(), Status::ok);
    CHECK_IS(shared.acquire_at("a", 1, at(0s)).status(), Status::limited);
    CHECK_COUNTS(shared.counts(), 1, 1, 0, 3);
    CHECK_RULE_COUNTS(*shared.counts(), 0, 1, 0);
    CHECK(unlink(file.c_str()) == 0 && rmdir(dir) == 0);
    return 0;
}

/* The fast paths count too, on the library's clock: 1 an hour, burst 1, admits the first
 * unit and denies the second whatever the time; a policy's try_acquire() then learns
 * which rule denied. */
static int test_try_acquire_is_counted(void) {
    rate::Limiter limiter = rate::Limiter::create(rate::Config::gcra(1, 1h, 1)).value_or({});
    rate::KeyedLimiter keyed =
        rate::KeyedLimiter::create(rate::Config::gcra(1, 1h, 1), 10).value_or({});
    rate::Policy policy =
        rate::Policy::create({rate::Config::gcra(5, 1h, 5), rate::Config::gcra(1, 1h, 1)})
            .value_or({});
    CHECK(limiter && keyed && policy);
    CHECK_IS(limiter.enable_counts(), Status::ok);
    CHECK_IS(keyed.enable_counts(), Status::ok);
    CHECK_IS(policy.enable_counts(), Status::ok);
    CHECK_IS(limiter.try_acquire(), Status::ok);
    CHECK_IS(limiter.try_acquire(), Status::limited);
    CHECK_IS(keyed.try_acquire("a"), Status::ok);
    CHECK_IS(keyed.try_acquire("a"), Status::limited);
    CHECK_IS(policy.try_acquire(), Status::ok);
    CHECK_IS(policy.try_acquire(), Status::limited);
    CHECK_COUNTS(limiter.counts(), 1, 1, 0, 0);
    CHECK_COUNTS(keyed.counts(), 1, 1, 0, 0);
    CHECK_COUNTS(policy.counts(), 1, 1, 0, 2);
    CHECK_RULE_COUNTS(*policy.counts(), 0, 0, 0);
    CHECK_RULE_COUNTS(*policy.counts(), 1, 1, 0);
    return 0;
}

/* An empty (default-constructed or moved-from) handle: Status::null, as every call. */
static int test_empty_handles(void) {
    const rate::Limiter limiter{};
    const rate::KeyedLimiter keyed{};
    const rate::Policy policy{};
    const rate::KeyedPolicy keyed_policy{};
    CHECK_IS(limiter.enable_counts(), Status::null);
    CHECK_IS(keyed.enable_counts(), Status::null);
    CHECK_IS(policy.enable_counts(), Status::null);
    CHECK_IS(keyed_policy.enable_counts(), Status::null);
    CHECK_IS(limiter.counts().status(), Status::null);
    CHECK_IS(keyed.counts().status(), Status::null);
    CHECK_IS(policy.counts().status(), Status::null);
    CHECK_IS(keyed_policy.counts().status(), Status::null);
    CHECK(rate::is_error(policy.counts().status()));
    CHECK(policy.counts().value_or({}).rules_len == 0);
    return 0;
}

#if RATE_HPP_EXCEPTIONS
/* value() of counts that are off throws rate::Error carrying Status::unsupported. */
static int test_value_throws_while_counting_is_off(void) {
    const rate::Limiter limiter(rate::Config::fixed_window(3, 1h));
    Status thrown = Status::ok;
    try {
        (void)limiter.counts().value();
    } catch (const rate::Error& error) {
        thrown = error.status();
    }
    CHECK_IS(thrown, Status::unsupported);
    return 0;
}
#endif

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_a_limiter_counts_once_enabled),
        TEST_CASE(test_a_keyed_limiter_counts_the_full_table),
        TEST_CASE(test_a_policy_counts_the_rule_that_denied),
        TEST_CASE(test_a_policy_counts_shadow_denials),
        TEST_CASE(test_a_keyed_policy_counts_per_rule),
        TEST_CASE(test_try_acquire_is_counted),
        TEST_CASE(test_empty_handles),
#if RATE_HPP_EXCEPTIONS
        TEST_CASE(test_value_throws_while_counting_is_off),
#endif
    };
    return run_tests("test_counts_hpp", cases, sizeof cases / sizeof cases[0]);
}
