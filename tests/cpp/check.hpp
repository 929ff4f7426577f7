/* C++ additions to tests/c/check.h for the rate.hpp tests: checks on rate::Status and on
 * rate::Result<rate::Decision>, reusing check.h's printing and its test driver. */
#ifndef RATE_TESTS_CHECK_HPP
#define RATE_TESTS_CHECK_HPP

#include <chrono>
#include <cstdint>

#include "check.h"
#include "rate.hpp"

using namespace std::chrono_literals;

/* A duration as the u64 nanoseconds the C API uses (the durations checked are never negative). */
constexpr std::uint64_t ns(std::chrono::nanoseconds duration) {
    return static_cast<std::uint64_t>(duration.count());
}

/* A time point on the caller's timeline, `since_zero` after 0. */
constexpr rate::Clock::time_point at(std::chrono::nanoseconds since_zero) {
    return rate::Clock::time_point(since_zero);
}

inline rate_decision c_decision(const rate::Decision& d) {
    return {static_cast<std::uint8_t>(d.allowed ? 1 : 0), d.limit, d.remaining, ns(d.retry_after),
            ns(d.reset_after), ns(d.wait)};
}

/* Fails the current test case unless the status is `expected`. */
#define CHECK_IS(status, expected) \
    CHECK_STATUS(static_cast<std::int32_t>(status), static_cast<std::int32_t>(expected))

/* Fails the current test case unless `result` (a rate::Result<rate::Decision>) has the
 * status `expected` and the decision {allowed, limit, remaining, retry_after, reset_after,
 * wait}, the durations given as std::chrono durations. */
#define CHECK_RESULT(result, expected, allowed, limit, remaining, retry_after, reset_after, wait) \
    do {                                                                                       \
        const auto& result_ = (result);                                                        \
        CHECK_IS(result_.status(), (expected));                                                \
        CHECK(result_.ok());                                                                   \
        const rate_decision actual_ = c_decision(*result_);                                    \
        CHECK_DECISION(actual_, (allowed), (limit), (remaining), ns(retry_after),              \
                       ns(reset_after), ns(wait));                                             \
    } while (0)

#endif /* RATE_TESTS_CHECK_HPP */
