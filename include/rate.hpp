/* rate.hpp: a header-only C++17 wrapper over librate's C API (rate.h).
 *
 *   rate::Limiter        one limit, shared by every caller       (rate_limiter_*)
 *   rate::KeyedLimiter   one limit per key: user, IP, API key…   (rate_keyed_*)
 *   rate::Policy         several limits at once, all or nothing  (rate_policy_*)
 *   rate::KeyedPolicy    per-key and global limits for one key   (rate_keyed_policy_*)
 *   rate::KeyedStats     a table's statistics, for dashboards    (rate_keyed_stats)
 *   rate::Counts         a handle's requests, once counted       (rate_*_read_counts)
 *   rate::describe_file  what a shared file holds, in a sentence (rate_describe_file)
 *
 * The limiters are RAII handles: move-only, freed by their destructor. A moved-from
 * or default-constructed handle is empty, and every call on it returns Status::null.
 * All are safe to use from many threads at once; destroying or assigning one must not
 * race with any other call on it.
 *
 * No exceptions are needed: a call returns a rate::Result<T>, which holds a Status and,
 * unless the status is an error, a value (a Decision, or the new handle of create()).
 * When the code is compiled with exceptions, Result::value() throws rate::Error on an error
 * and the limiters also have throwing constructors; without them (-fno-exceptions, or
 * RATE_HPP_NO_EXCEPTIONS defined), value() on an error calls std::abort(), like
 * std::optional does there. Check ok() first and it never happens.
 *
 * Time: rate::Clock is the library's clock (CLOCK_MONOTONIC, the same one as
 * std::chrono::steady_clock on Linux). The `_at` calls take a Clock::time_point for callers
 * with their own timeline; a time point or duration before zero counts as zero. Decision
 * durations are std::chrono::nanoseconds; rate::never (nanoseconds::max(), 292 years)
 * stands for anything at least that long, as UINT64_MAX does in C.
 *
 * The semantics of every field and status are those of rate.h (docs/decision.md).
 */
#ifndef RATE_HPP
#define RATE_HPP

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "rate.h"

#if !defined(RATE_HPP_NO_EXCEPTIONS) && \
    (defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND))
#define RATE_HPP_EXCEPTIONS 1
#include <stdexcept>
#else
#define RATE_HPP_EXCEPTIONS 0
#endif

namespace rate {

/// The status of a call: RATE_OK, RATE_LIMITED or a RATE_E_* error, by the same numbers.
enum class Status : std::int32_t {
    ok = RATE_OK,                                       ///< admitted, or the call succeeded
    limited = RATE_LIMITED,                             ///< denied by the limit
    null = RATE_E_NULL,                                 ///< an empty (moved-from) handle
    invalid_config = RATE_E_INVALID_CONFIG,             ///< zero limit or period, overflow…
    insufficient_capacity = RATE_E_INSUFFICIENT_CAPACITY, ///< n > limit: never admitted
    table_full = RATE_E_TABLE_FULL,                     ///< keyed table full of live keys
    unsupported = RATE_E_UNSUPPORTED,                   ///< reserve on a window algorithm;
                                                        ///< counts() with counting off
    internal = RATE_E_INTERNAL,                         ///< a bug inside librate
    io = RATE_E_IO,                                     ///< the OS refused a shared file; see errno
    incompatible = RATE_E_INCOMPATIBLE,                 ///< a shared file of another rule:
                                                        ///< see rate::describe_file
};

/// True for the RATE_E_* codes: the call did nothing and returned no decision.
constexpr bool is_error(Status status) noexcept {
    return static_cast<std::int32_t>(status) < 0;
}

/// librate's English description of a status (rate_status_str): static, never empty.
inline std::string_view to_string(Status status) noexcept {
    return rate_status_str(static_cast<std::int32_t>(status));
}

/// librate's version, "MAJOR.MINOR.PATCH" (rate_version).
inline std::string_view version() noexcept {
    return rate_version();
}

/// Stands for a duration too long for nanoseconds: "never", in practice.
inline constexpr std::chrono::nanoseconds never = std::chrono::nanoseconds::max();

namespace detail {

/// A duration or time since zero as the C API's u64 nanoseconds; negative counts as 0.
constexpr std::uint64_t to_ns(std::chrono::nanoseconds duration) noexcept {
    return duration.count() < 0 ? 0 : static_cast<std::uint64_t>(duration.count());
}

/// The C API's u64 nanoseconds as a duration, saturating at rate::never.
constexpr std::chrono::nanoseconds from_ns(std::uint64_t ns) noexcept {
    constexpr auto max = static_cast<std::uint64_t>(never.count());
    return ns >= max ? never : std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
}

} // namespace detail

/// The library's clock: nanoseconds on CLOCK_MONOTONIC (rate_now_ns), shared by every
/// process on the host. The plain acquire calls read it themselves.
struct Clock {
    using rep = std::int64_t;
    using period = std::nano;
    using duration = std::chrono::nanoseconds;
    using time_point = std::chrono::time_point<Clock>;
    static constexpr bool is_steady = true;

    static time_point now() noexcept { return time_point(detail::from_ns(rate_now_ns())); }
};

/// Which algorithm a limiter runs (RATE_GCRA, ...).
enum class Algorithm : std::uint32_t {
    gcra = RATE_GCRA,                     ///< leaky bucket as a meter; token bucket
    fixed_window = RATE_FIXED_WINDOW,     ///< counter per window [kP, (k+1)P)
    sliding_window = RATE_SLIDING_WINDOW, ///< previous window weighted by overlap
    sliding_log = RATE_SLIDING_LOG,       ///< exact rolling count of the last `limit`
};

/// At most `limit` units per `period`; GCRA also takes `burst` (0 means `limit`). Invalid
/// values (a zero or negative period, a zero limit…) are reported by create() as
/// Status::invalid_config.
struct Config {
    Algorithm algorithm = Algorithm::gcra;
    std::uint64_t limit = 0;
    std::chrono::nanoseconds period{0};
    std::uint64_t burst = 0;

    static constexpr Config gcra(std::uint64_t limit, std::chrono::nanoseconds period,
                                 std::uint64_t burst = 0) noexcept {
        return {Algorithm::gcra, limit, period, burst};
    }
    static constexpr Config fixed_window(std::uint64_t limit,
                                         std::chrono::nanoseconds period) noexcept {
        return {Algorithm::fixed_window, limit, period, 0};
    }
    static constexpr Config sliding_window(std::uint64_t limit,
                                           std::chrono::nanoseconds period) noexcept {
        return {Algorithm::sliding_window, limit, period, 0};
    }
    static constexpr Config sliding_log(std::uint64_t limit,
                                        std::chrono::nanoseconds period) noexcept {
        return {Algorithm::sliding_log, limit, period, 0};
    }

    /// The C form. A negative period becomes 0, which the library rejects.
    constexpr rate_config to_c() const noexcept {
        return {static_cast<std::uint32_t>(algorithm), limit, detail::to_ns(period), burst};
    }
};

/// The outcome of an acquire or reserve (rate_decision), with durations as chrono types.
struct Decision {
    bool allowed = false;                    ///< admitted or denied
    std::uint64_t limit = 0;                 ///< most units ever admitted at once
    std::uint64_t remaining = 0;             ///< units admissible now, after this decision
    std::chrono::nanoseconds retry_after{0}; ///< 0 when admitted; else when to retry
    std::chrono::nanoseconds reset_after{0}; ///< until remaining == limit
    std::chrono::nanoseconds wait{0};        ///< reserve: how long to wait before acting

    static constexpr Decision from_c(const rate_decision& d) noexcept {
        return {d.allowed != 0,
                d.limit,
                d.remaining,
                detail::from_ns(d.retry_after_ns),
                detail::from_ns(d.reset_after_ns),
                detail::from_ns(d.wait_ns)};
    }
};

/// A keyed table's statistics (rate_keyed_stats), for dashboards.
struct KeyedStats {
    std::uint64_t capacity = 0;   ///< the capacity it was created with
    std::uint64_t max_keys = 0;   ///< the most keys it holds at once: twice the capacity
    std::uint64_t live_keys = 0;  ///< keys whose state was not a new key's, when asked
    std::uint64_t table_full = 0; ///< new keys refused with Status::table_full, ever
                                  ///< (a shared table: by every process)

    static constexpr KeyedStats from_c(const rate_keyed_stats& s) noexcept {
        return {s.capacity, s.max_keys, s.live_keys, s.table_full};
    }
};

/// One policy rule's counts (rate_rule_counts), in the order the rules were given.
struct RuleCounts {
    std::uint64_t denied = 0;        ///< requests this rule denied first: a denial's denied_by
    std::uint64_t shadow_denied = 0; ///< a shadow rule's would-be denials; 0 for an enforced rule

    static constexpr RuleCounts from_c(const rate_rule_counts& c) noexcept {
        return {c.denied, c.shadow_denied};
    }
};

/// A handle's counts of its requests since its enable_counts() (rate_counts,
/// docs/metrics.md): each request counted once, in one field, so `denied` is exactly the
/// sum of the rules' `denied`. Queries (`n == 0`) and requests refused with an error other
/// than Status::table_full are not counted. Counts are per handle, never per key.
struct Counts {
    std::uint64_t admitted = 0;   ///< requests admitted (Status::ok)
    std::uint64_t denied = 0;     ///< requests denied (Status::limited): for a policy, the sum
                                  ///< of its rules' `denied`
    std::uint64_t table_full = 0; ///< keyed only: requests for a new key refused with
                                  ///< Status::table_full
    /// How many entries of `rules` are used: a policy's rule count; 0 for a Limiter or a
    /// KeyedLimiter.
    std::size_t rules_len = 0;
    /// Each rule's counts, in the order the rules were given (the first `rules_len`).
    std::array<RuleCounts, RATE_POLICY_MAX_RULES> rules{};

    static Counts from_c(const rate_counts& c) noexcept {
        Counts out;
        out.admitted = c.admitted;
        out.denied = c.denied;
        out.table_full = c.table_full;
        return out;
    }
};

/// A policy's decision (rate_policy_decision): the combined decision, which rule denied,
/// and each rule's own.
struct PolicyDecision {
    /// Allowed iff every rule admitted; `limit` and `remaining` the least over the rules,
    /// `retry_after` and `reset_after` the greatest; `wait` 0. With shadow rules
    /// (set_shadow()), over the enforced rules alone; a shadow rule's would-be denial shows
    /// as `rules[i].allowed == false` only.
    Decision decision;
    /// The first rule, in the order given, that denied the request; empty when admitted.
    std::optional<std::size_t> denied_by;
    /// How many entries of `rules` are used: the policy's rule count.
    std::size_t rules_len = 0;
    /// Each rule's own decision, in the order given (the first `rules_len`). Admitted: what
    /// each rule decided, units taken. Denied: what each rule would decide alone, with
    /// `remaining` and `reset_after` of its state as it is, since nothing was taken.
    std::array<Decision, RATE_POLICY_MAX_RULES> rules{};

    static PolicyDecision from_c(const rate_policy_decision& d) noexcept {
        PolicyDecision out;
        out.decision = Decision::from_c(d.decision);
        if (d.denied_by != RATE_POLICY_NO_RULE)
            out.denied_by = d.denied_by;
        out.rules_len = d.rules_len < out.rules.size() ? d.rules_len : out.rules.size();
        for (std::size_t i = 0; i < out.rules_len; i++)
            out.rules[i] = Decision::from_c(d.rules[i]);
        return out;
    }
};

#if RATE_HPP_EXCEPTIONS
/// Thrown by Result::value() on an error status, and by the throwing constructors.
class Error : public std::runtime_error {
  public:
    explicit Error(Status status)
        : std::runtime_error("librate: " + std::string(to_string(status))), status_(status) {}
    Status status() const noexcept { return status_; }

  private:
    Status status_;
};
#endif

namespace detail {

[[noreturn]] inline void bad_access(Status status) {
#if RATE_HPP_EXCEPTIONS
    throw Error(status);
#else
    (void)status;
    std::abort();
#endif
}

} // namespace detail

/// A status and, unless the status is an error, a value. `ok()` is true for Status::ok and
/// Status::limited alike: a denial is a decision, not an error (look at `->allowed`).
template <class T> class [[nodiscard]] Result {
  public:
    Result(Status status, T value) noexcept : status_(status), value_(std::move(value)) {}

    Status status() const noexcept { return status_; }
    bool ok() const noexcept { return !is_error(status_); }
    explicit operator bool() const noexcept { return ok(); }

    /// The value; on an error throws rate::Error (or aborts without exceptions).
    T& value() & {
        check();
        return value_;
    }
    const T& value() const& {
        check();
        return value_;
    }
    T&& value() && {
        check();
        return std::move(value_);
    }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    /// The value, or `fallback` on an error.
    T value_or(T fallback) const& { return ok() ? value_ : fallback; }
    T value_or(T fallback) && { return ok() ? std::move(value_) : std::move(fallback); }

  private:
    void check() const {
        if (!ok())
            detail::bad_access(status_);
    }

    Status status_;
    T value_;
};

namespace detail {

/// A move-only owner of a C handle, freed with `Free` (which accepts NULL): the base of
/// rate::Limiter and rate::KeyedLimiter.
template <class T, void (*Free)(T*)> class Handle {
  public:
    Handle() noexcept = default;
    Handle(Handle&& other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
    Handle& operator=(Handle&& other) noexcept {
        if (this != &other)
            Free(std::exchange(raw_, std::exchange(other.raw_, nullptr)));
        return *this;
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() { Free(raw_); }

    /// The C handle, still owned by this object (NULL when empty).
    T* native_handle() const noexcept { return raw_; }
    /// False for an empty (default-constructed or moved-from) handle.
    explicit operator bool() const noexcept { return raw_ != nullptr; }

  protected:
    explicit Handle(T* raw) noexcept : raw_(raw) {}

  private:
    T* raw_ = nullptr;
};

/// Calls a C function whose last argument is `Out *out` (a rate_decision, a
/// rate_policy_decision or a rate_keyed_stats) and wraps its answer as a T.
template <class T = Decision, class Out = rate_decision, class Fn, class... Args>
Result<T> decide(Fn fn, Args... args) noexcept {
    Out out{};
    const auto status = static_cast<Status>(fn(args..., &out));
    return {status, is_error(status) ? T{} : T::from_c(out)};
}

/// Creates a handle with a C constructor `fn(args..., T **out)`.
template <class Owner, class T, class Fn, class... Args>
Result<Owner> create(Fn fn, Args... args) noexcept {
    T* raw = nullptr;
    const auto status = static_cast<Status>(fn(args..., &raw));
    return {status, Owner(is_error(status) ? nullptr : raw)};
}

inline std::uint64_t to_ns(Clock::time_point now) noexcept {
    return to_ns(now.time_since_epoch());
}

/// Changes a handle's rule with a C function `fn(handle, &config, args...)`
/// (rate_limiter_set_config, rate_keyed_set_config and their `_at` forms).
template <class Fn, class T, class... Args>
Status set_config(Fn fn, T* handle, const Config& config, Args... args) noexcept {
    const rate_config c = config.to_c();
    return static_cast<Status>(fn(handle, &c, args...));
}

/// Replaces a policy's rules with a C function `fn(handle, c_rules, count, now_ns)`
/// (rate_policy_set_rules_at, rate_keyed_policy_set_rules_at): each rule's to_c() in an
/// array of `CRule`, no more than RATE_POLICY_MAX_RULES.
template <class CRule, class Fn, class T, class Rule>
Status set_rules_at(Fn fn, T* handle, std::initializer_list<Rule> rules,
                    std::uint64_t now_ns) noexcept {
    if (rules.size() > RATE_POLICY_MAX_RULES)
        return Status::invalid_config;
    std::array<CRule, RATE_POLICY_MAX_RULES> c{};
    std::size_t i = 0;
    for (const Rule& rule : rules)
        c[i++] = rule.to_c();
    return static_cast<Status>(fn(handle, c.data(), rules.size(), now_ns));
}

inline const std::uint8_t* bytes(std::string_view key) noexcept {
    return reinterpret_cast<const std::uint8_t*>(key.data());
}

/// Reads a policy's counts and its `rules_len` rules' own with a C function
/// `fn(handle, &out, rules, rules_len)` (rate_policy_read_counts,
/// rate_keyed_policy_read_counts). The C call does not say how many rules it wrote: the
/// caller passes the policy's rule count, which no change of its rules alters.
template <class Fn, class T>
Result<Counts> read_policy_counts(Fn fn, const T* handle, std::size_t rules_len) noexcept {
    rate_counts c{};
    std::array<rate_rule_counts, RATE_POLICY_MAX_RULES> rules{};
    const std::size_t len = rules_len < rules.size() ? rules_len : rules.size();
    const auto status = static_cast<Status>(fn(handle, &c, rules.data(), len));
    if (is_error(status))
        return {status, Counts{}};
    Counts out = Counts::from_c(c);
    out.rules_len = len;
    for (std::size_t i = 0; i < len; i++)
        out.rules[i] = RuleCounts::from_c(rules[i]);
    return {status, out};
}

} // namespace detail

/// What the table file at `path` holds, in one English sentence that starts with the path
/// (rate_describe_file): "PATH: a librate limiter holding GCRA, limit 10, period_ns
/// 1000000000, burst 10", or why it is no table this librate reads. What to tell the user
/// of an open() refused with Status::incompatible. Never cut: a sentence that fills the
/// buffer is asked for again with one twice as large. Status::io with errno set if the
/// file cannot be read; Status::null for `path` NULL.
inline Result<std::string> describe_file(const char* path) {
    std::string text(RATE_REASON_LEN, '\0');
    for (;;) {
        const auto status =
            static_cast<Status>(rate_describe_file(path, text.data(), text.size()));
        if (is_error(status))
            return {status, std::string()};
        const std::size_t len = std::char_traits<char>::length(text.c_str());
        if (len + 1 < text.size()) { // room to spare: the sentence is whole
            text.resize(len);
            return {status, std::move(text)};
        }
        text.assign(2 * text.size(), '\0');
    }
}

/// One rate limit shared by all its callers (rate_limiter_*).
class Limiter : public detail::Handle<rate_limiter, rate_limiter_free> {
  public:
    /// An empty handle; every call on it returns Status::null.
    Limiter() noexcept = default;

    /// A new limiter, full at any time; Status::invalid_config for a bad `config`.
    static Result<Limiter> create(const Config& config) noexcept {
        const rate_config c = config.to_c();
        return detail::create<Limiter, rate_limiter>(rate_limiter_new, &c);
    }
    /// The limiter whose state lives in the file at `path`, created (mode 0600) if absent
    /// and shared by every process that opens it (rate_limiter_open): Status::io with
    /// errno set if the OS refuses the file, Status::incompatible for a file of another
    /// rule (left untouched; rate::describe_file says what it holds),
    /// Status::invalid_config for a bad `config`.
    static Result<Limiter> open(const char* path, const Config& config) noexcept {
        const rate_config c = config.to_c();
        return detail::create<Limiter, rate_limiter>(rate_limiter_open, path, &c);
    }
    /// open(), but a file holding another rule is given `config` instead, as set_config()
    /// would change it, for every process attached (rate_limiter_open_replacing): how a
    /// rolling restart rolls out a new limit. Status::invalid_config also when the file's
    /// rule cannot be carried over to `config` (another algorithm, a sliding log's rule).
    static Result<Limiter> open_replacing(const char* path, const Config& config) noexcept {
        const rate_config c = config.to_c();
        return detail::create<Limiter, rate_limiter>(rate_limiter_open_replacing, path, &c);
    }
#if RATE_HPP_EXCEPTIONS
    /// Like create(), throwing rate::Error on a bad config.
    explicit Limiter(const Config& config) : Limiter(create(config).value()) {}
#endif

    /// Acquires `n` units now; the decision says whether they were admitted.
    Result<Decision> acquire(std::uint64_t n = 1) noexcept {
        return detail::decide(rate_limiter_acquire, native_handle(), n);
    }
    /// Acquires `n` units now, returning only the outcome: Status::ok or Status::limited
    /// (or an error). Cheaper than acquire(): librate may decide on its coarse clock.
    [[nodiscard]] Status try_acquire(std::uint64_t n = 1) noexcept {
        return static_cast<Status>(rate_limiter_acquire(native_handle(), n, nullptr));
    }
    /// Acquires `n` units at `now` on the caller's timeline.
    Result<Decision> acquire_at(std::uint64_t n, Clock::time_point now) noexcept {
        return detail::decide(rate_limiter_acquire_at, native_handle(), n, detail::to_ns(now));
    }
    /// Reserves `n` units now, admitted iff the caller would wait at most `max_wait`
    /// (decision.wait says how long). GCRA only; windows give Status::unsupported.
    Result<Decision> reserve(std::uint64_t n, std::chrono::nanoseconds max_wait) noexcept {
        return reserve_at(n, Clock::now(), max_wait);
    }
    /// reserve() at `now` on the caller's timeline.
    Result<Decision> reserve_at(std::uint64_t n, Clock::time_point now,
                                std::chrono::nanoseconds max_wait) noexcept {
        return detail::decide(rate_limiter_reserve_at, native_handle(), n, detail::to_ns(now),
                              detail::to_ns(max_wait));
    }
    /// Makes the limiter new again (rate_limiter_reset): from the latest time it has seen
    /// on it decides as a new limiter would; each acquire racing it is decided wholly
    /// before or after it. Status::ok (Status::null on an empty handle).
    Status reset() noexcept { return static_cast<Status>(rate_limiter_reset(native_handle())); }
    /// Replaces the rule now, keeping what was consumed (rate_limiter_set_config): GCRA
    /// keeps its tokens, the window counters their counts. A shared limiter's rule changes
    /// in its file, for every process. Status::ok; Status::invalid_config for a bad rule,
    /// another algorithm or a sliding log's rule; Status::null on an empty handle.
    Status set_config(const Config& config) noexcept {
        return detail::set_config(rate_limiter_set_config, native_handle(), config);
    }
    /// set_config() at `now` on the caller's timeline.
    Status set_config_at(const Config& config, Clock::time_point now) noexcept {
        return detail::set_config(rate_limiter_set_config_at, native_handle(), config,
                                  detail::to_ns(now));
    }
    /// Turns on counting of the requests decided through this handle, from this call on
    /// (rate_limiter_enable_counts, docs/metrics.md); counting that is on stays on, its
    /// counts kept. Off by default: it costs an atomic add a request. Status::ok, or
    /// Status::null on an empty handle.
    Status enable_counts() const noexcept {
        return static_cast<Status>(rate_limiter_enable_counts(native_handle()));
    }
    /// The counts since enable_counts() (rate_limiter_read_counts): `admitted` and
    /// `denied`. Status::unsupported while counting is off; Status::null on an empty handle.
    Result<Counts> counts() const noexcept {
        return detail::decide<Counts, rate_counts>(rate_limiter_read_counts, native_handle());
    }

  private:
    template <class Owner, class T, class Fn, class... Args>
    friend Result<Owner> detail::create(Fn, Args...) noexcept;
    using Handle::Handle; // adopts a raw handle: for create() only
};

/// One rate limit per key, in a table of fixed capacity (rate_keyed_*). Keys are arbitrary
/// bytes (the empty key too): a user name, or the raw bytes of an IP address.
class KeyedLimiter : public detail::Handle<rate_keyed, rate_keyed_free> {
  public:
    /// An empty handle; every call on it returns Status::null.
    KeyedLimiter() noexcept = default;

    /// A new table holding at least `capacity` live keys; Status::invalid_config for a bad
    /// `config` or a zero capacity.
    static Result<KeyedLimiter> create(const Config& config, std::uint64_t capacity) noexcept {
        const rate_config c = config.to_c();
        return detail::create<KeyedLimiter, rate_keyed>(rate_keyed_new, &c, capacity);
    }
    /// The table whose keys live in the file at `path`, created (mode 0600) if absent and
    /// shared by every process that opens it, each key's limit holding across them
    /// (rate_keyed_open): Status::io with errno set if the OS refuses the file,
    /// Status::incompatible for a file of another rule or capacity (left untouched;
    /// rate::describe_file says what it holds), Status::invalid_config for a bad `config`
    /// or a zero capacity. A slot that a stopped process keeps claimed is waited on for
    /// about a second; then the call that needs it returns Status::table_full.
    static Result<KeyedLimiter> open(const char* path, const Config& config,
                                     std::uint64_t capacity) noexcept {
        const rate_config c = config.to_c();
        return detail::create<KeyedLimiter, rate_keyed>(rate_keyed_open, path, &c, capacity);
    }
    /// open(), but a file holding another rule is given `config` instead, as set_config()
    /// would change it, now, every key carried over, for every process attached
    /// (rate_keyed_open_replacing): how a rolling restart rolls out a new limit.
    /// Status::invalid_config also when the file's rule cannot be carried over to `config`
    /// (another algorithm, a sliding log's rule); Status::incompatible only for a file of
    /// another kind or capacity.
    static Result<KeyedLimiter> open_replacing(const char* path, const Config& config,
                                               std::uint64_t capacity) noexcept {
        const rate_config c = config.to_c();
        return detail::create<KeyedLimiter, rate_keyed>(rate_keyed_open_replacing, path, &c,
                                                        capacity);
    }
#if RATE_HPP_EXCEPTIONS
    /// Like create(), throwing rate::Error on a bad config or capacity.
    KeyedLimiter(const Config& config, std::uint64_t capacity)
        : KeyedLimiter(create(config, capacity).value()) {}
#endif

    /// Acquires `n` units for `key` now. Status::table_full when the table is full of
    /// live keys and `key` is new: the caller chooses to fail open or closed.
    Result<Decision> acquire(std::string_view key, std::uint64_t n = 1) noexcept {
        return detail::decide(rate_keyed_acquire, native_handle(), detail::bytes(key), key.size(), n);
    }
    /// acquire() returning only the outcome (or an error).
    [[nodiscard]] Status try_acquire(std::string_view key, std::uint64_t n = 1) noexcept {
        return static_cast<Status>(
            rate_keyed_acquire(native_handle(), detail::bytes(key), key.size(), n, nullptr));
    }
    /// try_acquire() for each of `count` keys, in one call into librate
    /// (rate_keyed_acquire_batch): `statuses[i]` receives Status::ok, Status::limited or
    /// Status::table_full for `keys[i]`, as try_acquire() would key after key, with one
    /// reading of the clock per 16 keys. Returns Status::ok once every key is decided, or
    /// an error (Status::insufficient_capacity, Status::null) with nothing decided and
    /// `statuses` untouched. Much cheaper per key than one call each on a table larger
    /// than the CPU caches: librate fetches 16 keys' slots from memory at once.
    [[nodiscard]] Status try_acquire_batch(const std::string_view* keys, std::size_t count,
                                           Status* statuses, std::uint64_t n = 1) noexcept {
        constexpr std::size_t chunk = 64; // keys handed to librate per call, on the stack
        std::size_t start = 0;
        do { // at least once, so `n` and the handle are checked for no keys too
            const std::size_t size = count - start < chunk ? count - start : chunk;
            const std::uint8_t* pointers[chunk];
            std::size_t lengths[chunk];
            std::int32_t codes[chunk];
            for (std::size_t i = 0; i < size; i++) {
                pointers[i] = detail::bytes(keys[start + i]);
                lengths[i] = keys[start + i].size();
            }
            const auto status = static_cast<Status>(
                rate_keyed_acquire_batch(native_handle(), pointers, lengths, size, n, codes));
            if (is_error(status))
                return status; // only on the first chunk: the same n and handle throughout
            for (std::size_t i = 0; i < size; i++)
                statuses[start + i] = static_cast<Status>(codes[i]);
            start += size;
        } while (start < count);
        return Status::ok;
    }
    /// Acquires `n` units for `key` at `now` on the caller's timeline.
    Result<Decision> acquire_at(std::string_view key, std::uint64_t n,
                                Clock::time_point now) noexcept {
        return detail::decide(rate_keyed_acquire_at, native_handle(), detail::bytes(key), key.size(), n,
                              detail::to_ns(now));
    }
    /// Reserves `n` units for `key` now, waiting at most `max_wait` (GCRA only).
    Result<Decision> reserve(std::string_view key, std::uint64_t n,
                             std::chrono::nanoseconds max_wait) noexcept {
        return reserve_at(key, n, Clock::now(), max_wait);
    }
    /// reserve() at `now` on the caller's timeline.
    Result<Decision> reserve_at(std::string_view key, std::uint64_t n, Clock::time_point now,
                                std::chrono::nanoseconds max_wait) noexcept {
        return detail::decide(rate_keyed_reserve_at, native_handle(), detail::bytes(key), key.size(), n,
                              detail::to_ns(now), detail::to_ns(max_wait));
    }
    /// Resets `key` (rate_keyed_reset): its next request is decided as a new key's, at
    /// any time; a key not in the table stays out. Its former state keeps a slot until it
    /// is fresh. Status::ok, or Status::table_full (a shared table whose slot a stopped
    /// process keeps claimed; nothing was reset).
    Status reset(std::string_view key) noexcept {
        return static_cast<Status>(
            rate_keyed_reset(native_handle(), detail::bytes(key), key.size()));
    }
    /// Replaces the rule every key follows, now, keeping what each key consumed
    /// (rate_keyed_set_config): GCRA keeps each key's tokens, the window counters their
    /// counts; a key fresh at the change starts anew. Keys move one slot at a time; new
    /// keys wait for the move. A shared table's rule changes in its file, for every
    /// process. Status::ok; Status::invalid_config for a bad rule, another algorithm or a
    /// sliding log's rule; Status::io with errno EBUSY (a shared table whose file another
    /// process's change held too long); Status::null on an empty handle.
    Status set_config(const Config& config) noexcept {
        return detail::set_config(rate_keyed_set_config, native_handle(), config);
    }
    /// set_config() at `now` on the caller's timeline.
    Status set_config_at(const Config& config, Clock::time_point now) noexcept {
        return detail::set_config(rate_keyed_set_config_at, native_handle(), config,
                                  detail::to_ns(now));
    }
    /// The table's statistics, its live keys counted now (rate_keyed_read_stats). Reads
    /// every slot: for dashboards, not hot paths.
    Result<KeyedStats> stats() const noexcept {
        return detail::decide<KeyedStats, rate_keyed_stats>(rate_keyed_read_stats,
                                                            native_handle());
    }
    /// stats() with the live keys counted at `now` on the caller's timeline.
    Result<KeyedStats> stats_at(Clock::time_point now) const noexcept {
        return detail::decide<KeyedStats, rate_keyed_stats>(
            rate_keyed_read_stats_at, native_handle(), detail::to_ns(now));
    }
    /// Turns on counting of the requests decided through this handle, for every key, from
    /// this call on (rate_keyed_enable_counts): as Limiter::enable_counts().
    Status enable_counts() const noexcept {
        return static_cast<Status>(rate_keyed_enable_counts(native_handle()));
    }
    /// The counts since enable_counts() (rate_keyed_read_counts): `admitted`, `denied`, and
    /// `table_full` for requests of new keys refused with Status::table_full (by this
    /// handle; stats() has every process's). Status::unsupported while counting is off;
    /// Status::null on an empty handle.
    Result<Counts> counts() const noexcept {
        return detail::decide<Counts, rate_counts>(rate_keyed_read_counts, native_handle());
    }

  private:
    template <class Owner, class T, class Fn, class... Args>
    friend Result<Owner> detail::create(Fn, Args...) noexcept;
    using Handle::Handle; // adopts a raw handle: for create() only
};

/// Several limits over one subject at once, all or nothing (rate_policy_*): "10 a second
/// and 1,000 a day". A request is admitted iff every rule admits it, and a denied request
/// takes nothing from any rule. What concurrent callers may observe:
/// - No rule ever admits past its limit.
/// - From one thread at a time every decision is exact: a denial leaves every rule as it
///   was, so the decisions are those of the rules' own limiters on the admitted requests.
/// - A request takes from the rules one after the other. While it holds units of the
///   rules it passed, before a later rule denies it and they are given back, another
///   request can find one of those rules full and be denied (a denial it would not get a
///   moment later).
/// - A rule gives units back only if no other request changed it in between; otherwise
///   the denied request's units stay taken, as if admitted, and expire as admitted units
///   do. So do a sliding log's (logs take last and never give back) when a later sliding
///   log denies because a concurrent request changed it after it was asked. Either way a
///   rule only ever errs on the side of its limit.
class Policy : public detail::Handle<rate_policy, rate_policy_free> {
  public:
    /// The most rules one policy holds (RATE_POLICY_MAX_RULES).
    static constexpr std::size_t max_rules = RATE_POLICY_MAX_RULES;

    /// An empty handle; every call on it returns Status::null.
    Policy() noexcept = default;

    /// A new policy of the `count` rules at `rules` (1 to max_rules, any algorithms), each
    /// full at any time: Status::invalid_config for no rule, more than max_rules, or a
    /// rule that Limiter::create() would reject; Status::null for `rules` NULL with a
    /// non-zero `count`.
    static Result<Policy> create(const Config* rules, std::size_t count) noexcept {
        if (rules == nullptr && count > 0)
            return {Status::null, Policy()};
        if (count > max_rules) // rate_policy_new's verdict too, without reading past ours
            return {Status::invalid_config, Policy()};
        std::array<rate_config, max_rules> c{};
        for (std::size_t i = 0; i < count; i++)
            c[i] = rules[i].to_c();
        auto made = detail::create<Policy, rate_policy>(rate_policy_new, c.data(), count);
        if (made.ok())
            made->rules_len_ = count;
        return made;
    }
    /// create() of a list of rules: `rate::Policy::create({rate::Config::gcra(10, 1s),
    /// rate::Config::fixed_window(1000, 24h)})`.
    static Result<Policy> create(std::initializer_list<Config> rules) noexcept {
        return create(rules.begin(), rules.size());
    }
    /// Replaces the rules at `now` on the caller's timeline, keeping what each consumed
    /// (rate_policy_set_rules_at): as many as before, each of the same algorithm.
    /// Status::ok, Status::invalid_config (nothing changes), Status::null.
    Status set_rules_at(std::initializer_list<Config> rules, Clock::time_point now) noexcept {
        return detail::set_rules_at<rate_config>(rate_policy_set_rules_at, native_handle(),
                                                 rules, detail::to_ns(now));
    }
    /// Makes the rules of `mask` (bit i for rule i) this handle's shadow rules: decided and
    /// reported, never denying (rate_policy_set_shadow, docs/policies.md#shadow-rules).
    /// Status::ok, Status::invalid_config (a bit past the rules; the mask stays), Status::null.
    Status set_shadow(std::uint32_t mask) noexcept {
        return static_cast<Status>(rate_policy_set_shadow(native_handle(), mask));
    }
    /// This handle's shadow rules, bit i for rule i (rate_policy_get_shadow).
    Result<std::uint32_t> shadow() const noexcept {
        std::uint32_t mask = 0;
        const auto status = static_cast<Status>(rate_policy_get_shadow(native_handle(), &mask));
        return {status, mask};
    }
    /// Turns on counting of the requests decided through this handle, from this call on
    /// (rate_policy_enable_counts): as Limiter::enable_counts(). Once on, try_acquire()
    /// decides as acquire() does, to learn which rule denied.
    Status enable_counts() const noexcept {
        return static_cast<Status>(rate_policy_enable_counts(native_handle()));
    }
    /// The counts since enable_counts() (rate_policy_read_counts): `admitted`, `denied`,
    /// and in `rules` each rule's `denied` (the requests it denied first) and
    /// `shadow_denied`. Status::unsupported while counting is off; Status::null on an empty
    /// handle.
    Result<Counts> counts() const noexcept {
        return detail::read_policy_counts(rate_policy_read_counts, native_handle(), rules_len_);
    }
#if RATE_HPP_EXCEPTIONS
    /// Like create(), throwing rate::Error on bad rules.
    explicit Policy(std::initializer_list<Config> rules) : Policy(create(rules).value()) {}
#endif

    /// Acquires `n` units now from every rule, or from none (`n == 0` only reports), and
    /// returns the combined decision, which rule denied and each rule's own.
    /// Status::insufficient_capacity when `n` exceeds a rule's limit.
    Result<PolicyDecision> acquire(std::uint64_t n = 1) noexcept {
        return detail::decide<PolicyDecision, rate_policy_decision>(rate_policy_acquire,
                                                                    native_handle(), n);
    }
    /// acquire() returning only the outcome: Status::ok or Status::limited (or an error).
    [[nodiscard]] Status try_acquire(std::uint64_t n = 1) noexcept {
        return static_cast<Status>(rate_policy_acquire(native_handle(), n, nullptr));
    }
    /// acquire() at `now` on the caller's timeline.
    Result<PolicyDecision> acquire_at(std::uint64_t n, Clock::time_point now) noexcept {
        return detail::decide<PolicyDecision, rate_policy_decision>(
            rate_policy_acquire_at, native_handle(), n, detail::to_ns(now));
    }

  private:
    template <class Owner, class T, class Fn, class... Args>
    friend Result<Owner> detail::create(Fn, Args...) noexcept;
    using Handle::Handle; // adopts a raw handle: for create() only

    std::size_t rules_len_ = 0; // the rule count, for counts(); set_rules_at() keeps it
};

/// One rule of a KeyedPolicy: a Config kept per key or once for every key.
struct KeyedRule {
    /// Whether each key has its own state of the rule (RATE_RULE_PER_KEY), or every key
    /// shares one (RATE_RULE_GLOBAL).
    enum class Scope : std::uint32_t { global = RATE_RULE_GLOBAL, per_key = RATE_RULE_PER_KEY };

    Config config;
    Scope scope;

    /// A rule each key has its own state of, in a bounded table.
    static constexpr KeyedRule per_key(const Config& config) noexcept {
        return {config, Scope::per_key};
    }
    /// A rule every key shares one state of.
    static constexpr KeyedRule global(const Config& config) noexcept {
        return {config, Scope::global};
    }

    constexpr rate_keyed_rule to_c() const noexcept {
        return {config.to_c(), static_cast<std::uint32_t>(scope)};
    }
};

/// Per-key and global limits over one request at once, all or nothing
/// (rate_keyed_policy_*): per customer 1 post a second, for everybody 10,000 requests a
/// second. A request for a key is admitted iff every rule admits it (a per-key rule on the
/// key's own state, a global rule on everybody's), and a denied request takes nothing from
/// any rule. Each per-key rule is a table of `capacity` keys, as a KeyedLimiter's: a new
/// key that finds one full of live keys is Status::table_full, and nothing is taken. A
/// request may cost each rule differently (acquire_costs()): a cost of 0 leaves a rule
/// out. What concurrent callers may observe is what they may observe of a Policy, rule by
/// rule.
class KeyedPolicy : public detail::Handle<rate_keyed_policy, rate_keyed_policy_free> {
  public:
    /// The most rules one policy holds (RATE_POLICY_MAX_RULES).
    static constexpr std::size_t max_rules = RATE_POLICY_MAX_RULES;

    /// An empty handle; every call on it returns Status::null.
    KeyedPolicy() noexcept = default;

    /// A new keyed policy of the `count` rules at `rules` (1 to max_rules), each per-key
    /// rule a table of `capacity` keys: Status::invalid_config for no rule, more than
    /// max_rules, a rule Limiter::create() would reject or a capacity KeyedLimiter's
    /// would; Status::null for `rules` NULL with a non-zero `count`.
    static Result<KeyedPolicy> create(const KeyedRule* rules, std::size_t count,
                                      std::uint64_t capacity) noexcept {
        return build(rules, count, [&](const rate_keyed_rule* c) {
            return detail::create<KeyedPolicy, rate_keyed_policy>(rate_keyed_policy_new, c,
                                                                  count, capacity);
        });
    }
    /// create() of a list of rules.
    static Result<KeyedPolicy> create(std::initializer_list<KeyedRule> rules,
                                      std::uint64_t capacity) noexcept {
        return create(rules.begin(), rules.size(), capacity);
    }
    /// The keyed policy whose rules live in the file at `path`, created (mode 0600) if
    /// absent and shared by every process that opens it (rate_keyed_policy_open):
    /// Status::incompatible for a file of other rules or another capacity, Status::io with
    /// errno set if the OS refuses the file.
    static Result<KeyedPolicy> open(const char* path, std::initializer_list<KeyedRule> rules,
                                    std::uint64_t capacity) noexcept {
        return build(rules.begin(), rules.size(), [&](const rate_keyed_rule* c) {
            return detail::create<KeyedPolicy, rate_keyed_policy>(
                rate_keyed_policy_open, path, c, rules.size(), capacity);
        });
    }
    /// open(), but a file holding other rules of the same count, scopes and algorithms is
    /// given `rules` instead, as set_rules_at() would change them, now, for every process
    /// attached (rate_keyed_policy_open_replacing). Status::invalid_config also when a
    /// rule's state cannot be carried over (another algorithm, a sliding log's rule);
    /// Status::incompatible only for a file of another kind, rule count, scopes or
    /// capacity.
    static Result<KeyedPolicy> open_replacing(const char* path,
                                              std::initializer_list<KeyedRule> rules,
                                              std::uint64_t capacity) noexcept {
        return build(rules.begin(), rules.size(), [&](const rate_keyed_rule* c) {
            return detail::create<KeyedPolicy, rate_keyed_policy>(
                rate_keyed_policy_open_replacing, path, c, rules.size(), capacity);
        });
    }
#if RATE_HPP_EXCEPTIONS
    /// Like create(), throwing rate::Error on bad rules or capacity.
    KeyedPolicy(std::initializer_list<KeyedRule> rules, std::uint64_t capacity)
        : KeyedPolicy(create(rules, capacity).value()) {}
#endif

    /// Acquires `n` units of every rule for `key` now, or nothing (`n == 0` only reports).
    Result<PolicyDecision> acquire(std::string_view key, std::uint64_t n = 1) noexcept {
        return detail::decide<PolicyDecision, rate_policy_decision>(
            rate_keyed_policy_acquire, native_handle(), detail::bytes(key), key.size(), n);
    }
    /// acquire() at `now` on the caller's timeline.
    Result<PolicyDecision> acquire_at(std::string_view key, std::uint64_t n,
                                      Clock::time_point now) noexcept {
        return detail::decide<PolicyDecision, rate_policy_decision>(
            rate_keyed_policy_acquire_at, native_handle(), detail::bytes(key), key.size(), n,
            detail::to_ns(now));
    }
    /// acquire() returning only the outcome: Status::ok or Status::limited (or an error).
    [[nodiscard]] Status try_acquire(std::string_view key, std::uint64_t n = 1) noexcept {
        return static_cast<Status>(rate_keyed_policy_acquire(
            native_handle(), detail::bytes(key), key.size(), n, nullptr));
    }
    /// Acquires `costs[i]` units of rule `i` for `key` now, for each of the `count` rules,
    /// or nothing: a rule of cost 0 takes no part. Status::invalid_config unless `count`
    /// is the rule count.
    Result<PolicyDecision> acquire_costs(std::string_view key, const std::uint64_t* costs,
                                         std::size_t count) noexcept {
        return detail::decide<PolicyDecision, rate_policy_decision>(
            rate_keyed_policy_acquire_costs, native_handle(), detail::bytes(key), key.size(),
            costs, count);
    }
    /// acquire_costs() at `now` on the caller's timeline.
    Result<PolicyDecision> acquire_costs_at(std::string_view key, const std::uint64_t* costs,
                                            std::size_t count, Clock::time_point now) noexcept {
        return detail::decide<PolicyDecision, rate_policy_decision>(
            rate_keyed_policy_acquire_costs_at, native_handle(), detail::bytes(key),
            key.size(), costs, count, detail::to_ns(now));
    }
    /// acquire_costs() of a list: `site.acquire_costs("alice", {1, 0, 1})`.
    Result<PolicyDecision> acquire_costs(std::string_view key,
                                         std::initializer_list<std::uint64_t> costs) noexcept {
        return acquire_costs(key, costs.begin(), costs.size());
    }
    /// Resets `key` in every per-key rule; the global rules keep their counts.
    Status reset(std::string_view key) noexcept {
        return static_cast<Status>(
            rate_keyed_policy_reset(native_handle(), detail::bytes(key), key.size()));
    }
    /// Replaces the rules at `now` on the caller's timeline, keeping what every key and
    /// every global rule consumed (rate_keyed_policy_set_rules_at): as many as before, each
    /// of the same scope and algorithm. A policy in a shared file changes there, for every
    /// process. Status::ok, Status::invalid_config (nothing changes), Status::io with errno
    /// EBUSY (a shared file another process's change held too long), Status::null.
    Status set_rules_at(std::initializer_list<KeyedRule> rules, Clock::time_point now) noexcept {
        return detail::set_rules_at<rate_keyed_rule>(rate_keyed_policy_set_rules_at,
                                                     native_handle(), rules, detail::to_ns(now));
    }
    /// Makes the rules of `mask` (bit i for rule i) this handle's shadow rules, its own
    /// even in a shared file (rate_keyed_policy_set_shadow, docs/policies.md#shadow-rules).
    /// Status::ok, Status::invalid_config (a bit past the rules; the mask stays), Status::null.
    Status set_shadow(std::uint32_t mask) noexcept {
        return static_cast<Status>(rate_keyed_policy_set_shadow(native_handle(), mask));
    }
    /// This handle's shadow rules, bit i for rule i (rate_keyed_policy_get_shadow).
    Result<std::uint32_t> shadow() const noexcept {
        std::uint32_t mask = 0;
        const auto status =
            static_cast<Status>(rate_keyed_policy_get_shadow(native_handle(), &mask));
        return {status, mask};
    }
    /// The per-key rules' tables' statistics, live keys counted now: the live keys of the
    /// fullest table, and the requests refused as table-full. Reads every slot.
    Result<KeyedStats> stats() const noexcept {
        return detail::decide<KeyedStats, rate_keyed_stats>(rate_keyed_policy_read_stats,
                                                            native_handle());
    }
    /// stats() with the live keys counted at `now` on the caller's timeline.
    Result<KeyedStats> stats_at(Clock::time_point now) const noexcept {
        return detail::decide<KeyedStats, rate_keyed_stats>(
            rate_keyed_policy_read_stats_at, native_handle(), detail::to_ns(now));
    }
    /// Turns on counting of the requests decided through this handle, for every key, from
    /// this call on (rate_keyed_policy_enable_counts): as Limiter::enable_counts().
    Status enable_counts() const noexcept {
        return static_cast<Status>(rate_keyed_policy_enable_counts(native_handle()));
    }
    /// The counts since enable_counts() (rate_keyed_policy_read_counts): as
    /// Policy::counts(), and `table_full` for requests of new keys refused with
    /// Status::table_full. Status::unsupported while counting is off; Status::null on an
    /// empty handle.
    Result<Counts> counts() const noexcept {
        return detail::read_policy_counts(rate_keyed_policy_read_counts, native_handle(),
                                          rules_len_);
    }

  private:
    template <class Owner, class T, class Fn, class... Args>
    friend Result<Owner> detail::create(Fn, Args...) noexcept;
    using Handle::Handle; // adopts a raw handle: for create() only

    /// `make(c_rules)` of the rules in C form, after the checks create() and open() share.
    template <class Make>
    static Result<KeyedPolicy> build(const KeyedRule* rules, std::size_t count,
                                     Make make) noexcept {
        if (rules == nullptr && count > 0)
            return {Status::null, KeyedPolicy()};
        if (count > max_rules) // librate's verdict too, without reading past ours
            return {Status::invalid_config, KeyedPolicy()};
        std::array<rate_keyed_rule, max_rules> c{};
        for (std::size_t i = 0; i < count; i++)
            c[i] = rules[i].to_c();
        Result<KeyedPolicy> made = make(c.data());
        if (made.ok()) // a file's policy has as many rules as asked for, or is incompatible
            made->rules_len_ = count;
        return made;
    }

    std::size_t rules_len_ = 0; // the rule count, for counts(); set_rules_at() keeps it
};

} // namespace rate

#endif /* RATE_HPP */
