// librate from C++17: 5 requests per second, in bursts of up to 5.
// Build: c++ -std=c++17 -Iinclude quickstart.cpp -Ltarget/release -lrate -Wl,-rpath,target/release
#include <chrono>
#include <iostream>

#include "rate.hpp"

int main() {
    using namespace std::chrono;
    auto created = rate::Limiter::create(rate::Config::gcra(5, seconds(1), 5)); // limit, period, burst
    if (!created) {
        std::cerr << "rate::Limiter::create: " << rate::to_string(created.status()) << '\n';
        return 1;
    }
    rate::Limiter limiter = *std::move(created); // move-only; freed by its destructor
    // Seven requests at one instant. In a server, call limiter.acquire(), which reads the
    // clock itself; here the time is fixed so the output is too.
    const auto now = rate::Clock::now();
    for (int i = 1; i <= 7; i++) {
        rate::Result<rate::Decision> d = limiter.acquire_at(1, now);
        if (!d.ok()) { // an error (here impossible: the cost 1 is within the burst)
            std::cerr << "acquire_at: " << rate::to_string(d.status()) << '\n';
            return 1;
        }
        if (d->allowed)
            std::cout << "request " << i << ": allowed, " << d->remaining << " left\n";
        else
            std::cout << "request " << i << ": denied, retry in "
                      << duration_cast<milliseconds>(d->retry_after).count() << " ms\n";
    }
    return 0;
}
