// librate from C++17: a pool of std::threads draining a queue at a fixed rate.
//
// 4 workers share 20 jobs and one rate::Limiter of 200 job starts per second, one at a
// time (burst 1): the leaky bucket as a queue. Before each job a worker reserves the next
// free slot (Limiter::reserve_at), sleeps until it (Decision::wait later) and runs the job.
// A worker that would wait more than max_wait is denied instead and comes back after
// Decision::retry_after.
//
// The program checks what the contract promises, not how fast the machine is: every job
// ran exactly once, and no two jobs were given start slots closer than one interval.
//
// Build: c++ -std=c++17 -pthread -Iinclude worker_pool.cpp -Ltarget/release -lrate
//        -Wl,-rpath,target/release
#include <algorithm>
#include <chrono>
#include <iostream>
#include <mutex>
#include <optional>
#include <queue>
#include <thread>
#include <vector>

#include "rate.hpp"

using namespace std::chrono_literals;

namespace {

constexpr int workers = 4;
constexpr int jobs = 20;
constexpr std::int64_t jobs_per_second = 200;
constexpr std::chrono::nanoseconds interval = std::chrono::nanoseconds(1s) / jobs_per_second; // 5 ms
constexpr std::chrono::nanoseconds max_wait = 3 * interval;        // a short line

struct Job {
    int id;
};

// The queue and what the workers report, behind one mutex.
class Pool {
  public:
    explicit Pool(int count) {
        for (int id = 0; id < count; id++)
            queue_.push(Job{id});
        runs_.resize(count);
        slots_.resize(count);
    }

    std::optional<Job> take() {
        std::lock_guard<std::mutex> guard(lock_);
        if (queue_.empty())
            return std::nullopt;
        Job job = queue_.front();
        queue_.pop();
        return job;
    }

    void ran(Job job, rate::Clock::time_point slot) {
        std::lock_guard<std::mutex> guard(lock_);
        runs_[job.id]++;
        slots_[job.id] = slot;
    }

    void denied() {
        std::lock_guard<std::mutex> guard(lock_);
        denials_++;
    }

    // Called after the workers are joined.
    bool schedule_is_right() {
        for (std::size_t id = 0; id < runs_.size(); id++) {
            if (runs_[id] != 1) {
                std::cerr << "job " << id << " ran " << runs_[id] << " times\n";
                return false;
            }
        }
        std::sort(slots_.begin(), slots_.end());
        for (std::size_t i = 1; i < slots_.size(); i++) {
            if (slots_[i] - slots_[i - 1] < interval) {
                std::cerr << "two slots closer than " << interval.count() << " ns\n";
                return false;
            }
        }
        const auto span = std::chrono::duration_cast<std::chrono::milliseconds>(slots_.back() -
                                                                                slots_.front());
        std::cout << slots_.size() << " jobs by " << workers << " workers, one start every "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(interval).count()
                  << " ms: the last " << span.count() << " ms after the first\n"
                  << denials_ << " reserves were denied (line too long) and retried\n";
        return true;
    }

  private:
    std::mutex lock_;
    std::queue<Job> queue_;
    std::vector<int> runs_;
    std::vector<rate::Clock::time_point> slots_;
    int denials_ = 0;
};

// Waits for a start slot and returns it; std::nullopt after a librate error.
std::optional<rate::Clock::time_point> reserve_slot(rate::Limiter& limiter, Pool& pool) {
    for (;;) {
        const auto now = rate::Clock::now();
        const auto decision = limiter.reserve_at(1, now, max_wait);
        if (!decision.ok()) {
            std::cerr << "reserve_at: " << rate::to_string(decision.status()) << '\n';
            return std::nullopt;
        }
        if (decision->allowed) {
            std::this_thread::sleep_until(now + decision->wait);
            return now + decision->wait;
        }
        pool.denied();
        std::this_thread::sleep_until(now + decision->retry_after);
    }
}

} // namespace

int main() {
    auto created = rate::Limiter::create(rate::Config::gcra(jobs_per_second, 1s, 1));
    if (!created) {
        std::cerr << "rate::Limiter::create: " << rate::to_string(created.status()) << '\n';
        return 1;
    }
    rate::Limiter limiter = *std::move(created);
    Pool pool(jobs);
    bool failed = false;
    std::mutex failed_lock;
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; w++) {
        threads.emplace_back([&] {
            while (const std::optional<Job> job = pool.take()) {
                const auto slot = reserve_slot(limiter, pool);
                if (!slot) {
                    std::lock_guard<std::mutex> guard(failed_lock);
                    failed = true;
                    return;
                }
                pool.ran(*job, *slot); // the job itself: recording that it ran, and when
            }
        });
    }
    for (std::thread& thread : threads)
        thread.join();
    return !failed && pool.schedule_is_right() ? 0 : 1;
}
