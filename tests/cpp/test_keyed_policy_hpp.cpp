/* Tests of include/rate.hpp's rate::KeyedPolicy and rate::KeyedRule, linked against
 * librate.so. Run by `cargo test` (tests/cpp_api.rs) with exceptions, without them, and
 * under ASan + UBSan.
 *
 * The scenario is tests/c/test_keyed_policy.c's: per customer 1 post and 5 likes a second
 * (GCRA), everybody 3 a second (a fixed window).
 */
#include <string>
#include <type_traits>
#include <unistd.h>

#include "check.hpp"

using rate::KeyedRule;
using rate::Status;

static_assert(!std::is_copy_constructible_v<rate::KeyedPolicy>);
static_assert(std::is_nothrow_move_constructible_v<rate::KeyedPolicy>);
static_assert(rate::KeyedPolicy::max_rules == RATE_POLICY_MAX_RULES);

static const std::initializer_list<KeyedRule> site_rules = {
    KeyedRule::per_key(rate::Config::gcra(1, 1s)),
    KeyedRule::per_key(rate::Config::gcra(5, 1s)),
    KeyedRule::global(rate::Config::fixed_window(3, 1s)),
};
static const std::uint64_t post[3] = {1, 0, 1};

static int test_posts_and_likes(void) {
    auto created = rate::KeyedPolicy::create(site_rules, 100);
    CHECK_IS(created.status(), Status::ok);
    rate::KeyedPolicy site = *std::move(created);
    auto d = site.acquire_costs_at("alice", post, 3, at(0s));
    CHECK_IS(d.status(), Status::ok);
    /* Combined over the post and global rules: limit 1, remaining 0. */
    CHECK_EQ_U64(d->decision.limit, 1);
    CHECK_EQ_U64(d->decision.remaining, 0);
    CHECK_EQ_U64(d->rules[1].remaining, 5);
    CHECK_EQ_U64(d->rules[2].remaining, 2);
    /* Her second post: her post rule denies for 1 s; the global unit is given back. */
    d = site.acquire_costs_at("alice", post, 3, at(0s));
    CHECK_IS(d.status(), Status::limited);
    CHECK(d->denied_by == std::optional<std::size_t>(0));
    CHECK(d->decision.retry_after == 1s);
    CHECK_EQ_U64(d->rules[2].remaining, 2);
    /* n of every rule for bob at 1 s; reset alice, whose post rule is new at once. */
    CHECK_IS(site.acquire_at("bob", 1, at(1s)).status(), Status::ok);
    CHECK_IS(site.reset("alice"), Status::ok);
    d = site.acquire_costs_at("alice", post, 3, at(1s));
    CHECK_IS(d.status(), Status::ok);
    CHECK_EQ_U64(d->rules[2].remaining, 1);
    /* Now, on the library's clock: carol's first like, then her state. */
    CHECK_IS(site.acquire_costs("carol", {0, 1, 1}).status(), Status::ok);
    CHECK_IS(site.try_acquire("carol", 0), Status::ok);
    const auto stats = site.stats_at(at(1s));
    CHECK_IS(stats.status(), Status::ok);
    CHECK_EQ_U64(stats->capacity, 100);
    CHECK_EQ_U64(stats->table_full, 0);
    CHECK_IS(site.stats().status(), Status::ok);
    return 0;
}

static int test_a_shared_file(void) {
    const std::string path = "/tmp/librate-cpp-keyed-policy-" + std::to_string(getpid());
    unlink(path.c_str());
    auto first = rate::KeyedPolicy::open(path.c_str(), site_rules, 100);
    auto second = rate::KeyedPolicy::open(path.c_str(), site_rules, 100);
    CHECK_IS(first.status(), Status::ok);
    CHECK_IS(second.status(), Status::ok);
    CHECK_IS(first->acquire_costs_at("alice", post, 3, at(0s)).status(), Status::ok);
    const auto d = second->acquire_costs_at("alice", post, 3, at(0s));
    CHECK(d->denied_by == std::optional<std::size_t>(0));
    CHECK_IS(rate::KeyedPolicy::open(path.c_str(), site_rules, 99).status(), Status::incompatible);
    unlink(path.c_str());
    return 0;
}

static int test_bad_input(void) {
    CHECK_IS(rate::KeyedPolicy::create({}, 1).status(), Status::invalid_config);
    CHECK_IS(rate::KeyedPolicy::create(nullptr, 1, 1).status(), Status::null);
    CHECK_IS(rate::KeyedPolicy::create(site_rules, 0).status(), Status::invalid_config);
    const KeyedRule bad_scope{rate::Config::gcra(1, 1s), static_cast<KeyedRule::Scope>(7)};
    CHECK_IS(rate::KeyedPolicy::create(&bad_scope, 1, 1).status(), Status::invalid_config);
    rate::KeyedPolicy site = rate::KeyedPolicy::create(site_rules, 1).value_or({});
    CHECK(site);
    CHECK_IS(site.acquire_costs("k", {1, 1}).status(), Status::invalid_config);
    CHECK_IS(site.acquire_at("k", 2, at(0s)).status(), Status::insufficient_capacity);
    rate::KeyedPolicy empty;
    CHECK_IS(empty.acquire("k").status(), Status::null);
    CHECK_IS(empty.try_acquire("k"), Status::null);
    CHECK_IS(empty.reset("k"), Status::null);
    return 0;
}

/* The site doubles its limits at 0, after alice's post: her empty post bucket stays empty
 * (a token every 500 ms now), the window keeps its 1 of 6. */
static int test_set_rules(void) {
    rate::KeyedPolicy site = rate::KeyedPolicy::create(site_rules, 100).value_or({});
    CHECK_IS(site.acquire_costs_at("alice", post, 3, at(0s)).status(), Status::ok);
    const std::initializer_list<KeyedRule> doubled = {
        KeyedRule::per_key(rate::Config::gcra(2, 1s)),
        KeyedRule::per_key(rate::Config::gcra(10, 1s)),
        KeyedRule::global(rate::Config::fixed_window(6, 1s)),
    };
    CHECK_IS(site.set_rules_at(doubled, at(0s)), Status::ok);
    auto d = site.acquire_at("alice", 0, at(0s));
    CHECK_EQ_U64(d->rules[0].remaining, 0);
    CHECK_EQ_U64(d->rules[1].remaining, 10);
    CHECK_EQ_U64(d->rules[2].remaining, 5);
    CHECK_IS(site.acquire_costs_at("alice", post, 3, at(500ms)).status(), Status::ok);
    /* Refused, changing nothing: fewer rules; an empty handle. */
    CHECK_IS(site.set_rules_at({KeyedRule::global(rate::Config::gcra(1, 1s))}, at(0s)),
             Status::invalid_config);
    CHECK_IS(rate::KeyedPolicy().set_rules_at(doubled, at(0s)), Status::null);
    CHECK_EQ_U64(site.acquire_at("bob", 0, at(500ms))->rules[2].remaining, 4);
    return 0;
}

/* A shared policy's rules change in its file: open_replacing() gives it the opener's
 * rules and the handles already open follow; set_rules_at() through any handle changes
 * them for all. On the real clock (an opener's change is made now): per customer 10 an
 * hour (nothing refills during the test), everybody 100 in a window that never ends. ann
 * takes 4: 6 tokens, 96 units. */
static int test_open_replacing_changes_the_file(void) {
    const std::string path = "/tmp/librate-cpp-keyed-policy-replacing-" + std::to_string(getpid());
    unlink(path.c_str());
    const std::initializer_list<KeyedRule> hourly = {
        KeyedRule::per_key(rate::Config::gcra(10, 1h)),
        KeyedRule::global(rate::Config::fixed_window(100, rate::never)),
    };
    const std::initializer_list<KeyedRule> raised = {
        KeyedRule::per_key(rate::Config::gcra(20, 1h)),
        KeyedRule::global(rate::Config::fixed_window(10, rate::never)),
    };
    const std::initializer_list<KeyedRule> swapped = {
        KeyedRule::global(rate::Config::fixed_window(10, rate::never)),
        KeyedRule::per_key(rate::Config::gcra(20, 1h)),
    };
    rate::KeyedPolicy old = rate::KeyedPolicy::open(path.c_str(), hourly, 10).value_or({});
    CHECK(old);
    auto d = old.acquire("ann", 4);
    CHECK_IS(d.status(), Status::ok);
    CHECK_EQ_U64(d->rules[0].remaining, 6);
    CHECK_EQ_U64(d->rules[1].remaining, 96);
    CHECK_IS(rate::KeyedPolicy::open(path.c_str(), raised, 10).status(), Status::incompatible);
    /* Another scope in a rule's place is refused even when replacing. */
    CHECK_IS(rate::KeyedPolicy::open_replacing(path.c_str(), swapped, 10).status(),
             Status::incompatible);
    auto second = rate::KeyedPolicy::open_replacing(path.c_str(), raised, 10);
    CHECK_IS(second.status(), Status::ok);
    /* ann keeps her 6 tokens under a burst of 20; the window's 4 of now 10 leave 6. */
    d = old.acquire("ann", 0);
    CHECK_EQ_U64(d->rules[0].limit, 20);
    CHECK_EQ_U64(d->rules[0].remaining, 6);
    CHECK_EQ_U64(d->rules[1].limit, 10);
    CHECK_EQ_U64(d->rules[1].remaining, 6);
    /* Back to the first rules through the old handle, for both: ann keeps her 6 tokens
     * under a burst of 10; the window's 4 of 100 leave 96. */
    CHECK_IS(old.set_rules_at(hourly, rate::Clock::now()), Status::ok);
    d = second->acquire("ann", 0);
    CHECK_EQ_U64(d->rules[0].limit, 10);
    CHECK_EQ_U64(d->rules[0].remaining, 6);
    CHECK_EQ_U64(d->rules[1].remaining, 96);
    CHECK_IS(rate::KeyedPolicy::open(path.c_str(), hourly, 10).status(), Status::ok);
    unlink(path.c_str());
    return 0;
}

int main(void) {
    static const struct test_case cases[] = {
        TEST_CASE(test_posts_and_likes),
        TEST_CASE(test_a_shared_file),
        TEST_CASE(test_open_replacing_changes_the_file),
        TEST_CASE(test_bad_input),
        TEST_CASE(test_set_rules),
    };
    return run_tests("test_keyed_policy_hpp", cases, sizeof cases / sizeof cases[0]);
}
