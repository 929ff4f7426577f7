// librate from C++17: two limits at once, 2 a second and 3 a minute, all or nothing.
// Build: c++ -std=c++17 -Iinclude policy.cpp -Ltarget/release -lrate -Wl,-rpath,target/release
#include <chrono>
#include <iostream>

#include "rate.hpp"

int main() {
    using namespace std::chrono;
    auto created = rate::Policy::create({
        rate::Config::gcra(2, seconds(1)),         // 2 a second
        rate::Config::fixed_window(3, minutes(1)), // and 3 a minute
    });
    if (!created) {
        std::cerr << "rate::Policy::create: " << rate::to_string(created.status()) << '\n';
        return 1;
    }
    rate::Policy policy = *std::move(created); // move-only; freed by its destructor
    // Requests on a timeline of our own, from 0, so the output is fixed. In a server, call
    // policy.acquire(), which reads the clock itself.
    const rate::Clock::time_point zero{};
    int admitted = 0;
    for (const auto now : {zero, zero, zero, zero + seconds(1), zero + seconds(2)}) {
        rate::Result<rate::PolicyDecision> d = policy.acquire_at(1, now);
        if (!d.ok()) { // an error (here impossible: the cost 1 is within both limits)
            std::cerr << "acquire_at: " << rate::to_string(d.status()) << '\n';
            return 1;
        }
        const auto at = duration_cast<milliseconds>(now.time_since_epoch()).count();
        if (d->decision.allowed) {
            admitted++;
            std::cout << at << " ms: allowed, " << d->rules[1].remaining << " left this minute\n";
        } else {
            std::cout << at << " ms: denied by rule " << *d->denied_by << ", retry in "
                      << duration_cast<milliseconds>(d->decision.retry_after).count() << " ms\n";
        }
    }
    // A denied request takes nothing: the minute's 3 units went to 3 requests.
    return admitted == 3 ? 0 : 1;
}
