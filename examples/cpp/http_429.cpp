// librate from C++17: a per-IP rate limit in front of a tiny HTTP echo server.
//
// The server listens on 127.0.0.1 (an ephemeral port) and allows each client IP 3 requests
// per hour, in a burst of 3: a rate::KeyedLimiter keyed by the 4 bytes of the peer's IPv4
// address. A request over the limit gets "429 Too Many Requests" with a Retry-After header
// (whole seconds, rounded up); if the key table were full of live IPs it would get "503
// Service Unavailable" (failing closed).
//
// A client thread plays two clients, binding its sockets to 127.0.0.2 and 127.0.0.3 (on
// Linux the whole of 127.0.0.0/8 is loopback), and sends 9 requests in a fixed order. The
// program exits 0 only if each got the status planned for it: the first 3 from each IP
// are echoed with 200, the rest refused with 429 and a Retry-After of 1 to 1200 s. Every
// socket has a 5 s timeout, so a failure ends the program instead of hanging it.
//
// Build: c++ -std=c++17 -pthread -Iinclude http_429.cpp -Ltarget/release -lrate
//        -Wl,-rpath,target/release
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "rate.hpp"

using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t per_ip_limit = 3;
constexpr std::chrono::seconds per_ip_period = 1h;
constexpr std::chrono::seconds longest_retry = per_ip_period / per_ip_limit; // 1200 s

struct Planned {
    const char* client_ip;
    int expected_status;
};

constexpr Planned plan[] = {
    {"127.0.0.2", 200}, {"127.0.0.2", 200}, {"127.0.0.2", 200}, {"127.0.0.2", 429},
    {"127.0.0.3", 200}, {"127.0.0.2", 429}, {"127.0.0.3", 200}, {"127.0.0.3", 200},
    {"127.0.0.3", 429},
};
constexpr int requests = sizeof plan / sizeof plan[0];

// ---- sockets ------------------------------------------------------------------------------

sockaddr_in ipv4(const char* ip, std::uint16_t port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    if (inet_pton(AF_INET, ip, &address.sin_addr) != 1)
        std::abort(); // the addresses are constants of this program
    return address;
}

// An owned TCP socket with 5 s timeouts for receiving (accept too) and sending.
class Socket {
  public:
    Socket() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) { set_timeouts(); }
    explicit Socket(int fd) : fd_(fd) { set_timeouts(); }
    Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Socket& operator=(Socket&&) = delete;
    ~Socket() {
        if (fd_ >= 0)
            ::close(fd_);
    }

    bool ok() const { return fd_ >= 0; }
    int fd() const { return fd_; }

    bool bind(const sockaddr_in& address) {
        return ::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    }
    bool connect(const sockaddr_in& address) {
        return ::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    }
    bool send_all(std::string_view data) {
        while (!data.empty()) {
            const ssize_t sent = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
            if (sent <= 0)
                return false;
            data.remove_prefix(static_cast<std::size_t>(sent));
        }
        return true;
    }
    // Reads until `end` is seen (or, with an empty `end`, the peer closes); nullopt on an
    // error or timeout.
    std::optional<std::string> receive(std::string_view end = {}) {
        std::string text;
        char chunk[1024];
        while (text.size() < 16 * 1024) {
            const ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
            if (got < 0)
                return std::nullopt;
            if (got == 0)
                break;
            text.append(chunk, static_cast<std::size_t>(got));
            if (!end.empty() && text.find(end) != std::string::npos)
                break;
        }
        return text;
    }

  private:
    void set_timeouts() {
        const timeval timeout{5, 0};
        if (fd_ >= 0 &&
            (setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0 ||
             setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) != 0)) {
            ::close(std::exchange(fd_, -1));
        }
    }

    int fd_;
};

std::string http_response(std::string_view status, std::string_view extra_headers,
                          std::string_view body) {
    std::string response = "HTTP/1.1 ";
    response.append(status).append("\r\nContent-Type: text/plain\r\nContent-Length: ");
    response.append(std::to_string(body.size())).append("\r\n").append(extra_headers);
    response.append("Connection: close\r\n\r\n").append(body);
    return response;
}

// ---- the server ----------------------------------------------------------------------------

// Answers one request from `peer`: the limiter decides between 200, 429 and 503.
void serve(Socket& connection, rate::KeyedLimiter& per_ip, const sockaddr_in& peer) {
    const std::optional<std::string> request = connection.receive("\r\n\r\n");
    if (!request || request->empty())
        return;
    const std::string_view line = std::string_view(*request).substr(0, request->find("\r\n"));
    char ip[INET_ADDRSTRLEN] = "";
    inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof ip);
    // The key: the peer's IPv4 address, 4 bytes in network order.
    const std::string_view key(reinterpret_cast<const char*>(&peer.sin_addr),
                               sizeof peer.sin_addr);
    const rate::Result<rate::Decision> decision = per_ip.acquire(key);
    std::string response;
    if (decision.ok() && decision->allowed) {
        response = http_response(
            "200 OK",
            "X-RateLimit-Limit: " + std::to_string(decision->limit) +
                "\r\nX-RateLimit-Remaining: " + std::to_string(decision->remaining) + "\r\n",
            std::string(ip) + " said: " + std::string(line) + "\n");
    } else if (decision.ok()) {
        // Retry-After is in whole seconds: round up, so that retrying then succeeds.
        const auto seconds = std::chrono::ceil<std::chrono::seconds>(decision->retry_after);
        response = http_response("429 Too Many Requests",
                                 "Retry-After: " + std::to_string(seconds.count()) + "\r\n",
                                 "too many requests from " + std::string(ip) + "\n");
    } else {
        // Status::table_full: more live IPs than the table holds. Fail closed.
        const bool full = decision.status() == rate::Status::table_full;
        response = http_response(full ? "503 Service Unavailable" : "500 Internal Server Error",
                                 "Retry-After: 1\r\n",
                                 std::string(rate::to_string(decision.status())) + "\n");
    }
    connection.send_all(response);
}

// Accepts and answers `count` connections, one at a time; stops early if accept fails or
// times out (the client gave up).
void run_server(Socket& listener, rate::KeyedLimiter& per_ip, int count) {
    for (int i = 0; i < count; i++) {
        sockaddr_in peer{};
        socklen_t peer_length = sizeof peer;
        Socket connection(::accept(listener.fd(), reinterpret_cast<sockaddr*>(&peer),
                                   &peer_length));
        if (!connection.ok()) {
            std::perror("accept");
            return;
        }
        serve(connection, per_ip, peer);
    }
}

// ---- the client ----------------------------------------------------------------------------

struct Answer {
    int status = 0;            // 0: no answer (a transport error)
    long retry_after = 0;      // the Retry-After header, 0 if absent
    std::string body;
};

Answer request(std::uint16_t port, int i) {
    Answer answer;
    Socket connection;
    const std::string text = "GET /echo?n=" + std::to_string(i + 1) +
                             " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    std::optional<std::string> response;
    if (!connection.ok() || !connection.bind(ipv4(plan[i].client_ip, 0)) ||
        !connection.connect(ipv4("127.0.0.1", port)) || !connection.send_all(text) ||
        !(response = connection.receive()) ||
        std::sscanf(response->c_str(), "HTTP/1.1 %d", &answer.status) != 1) {
        std::perror(plan[i].client_ip);
        return Answer{};
    }
    constexpr std::string_view retry_header = "\r\nRetry-After: ";
    if (const auto at = response->find(retry_header); at != std::string::npos)
        answer.retry_after = std::strtol(response->c_str() + at + retry_header.size(), nullptr, 10);
    if (const auto at = response->find("\r\n\r\n"); at != std::string::npos)
        answer.body = response->substr(at + 4);
    return answer;
}

// Sends the planned requests in order; returns how many got their planned answer.
int run_client(std::uint16_t port) {
    int as_planned = 0;
    for (int i = 0; i < requests; i++) {
        const Answer answer = request(port, i);
        bool right = answer.status == plan[i].expected_status;
        if (answer.status == 429)
            right = right && answer.retry_after >= 1 && answer.retry_after <= longest_retry.count();
        if (answer.status == 200)
            right = right && answer.body.find("GET /echo") != std::string::npos;
        std::cout << plan[i].client_ip << " GET /echo?n=" << i + 1 << " -> " << answer.status;
        if (answer.status == 200)
            std::cout << " \"" << answer.body.substr(0, answer.body.find('\n')) << '"';
        if (answer.retry_after != 0)
            std::cout << " (Retry-After: " << answer.retry_after << " s)";
        std::cout << (right ? "" : "  UNEXPECTED") << '\n';
        as_planned += right;
        if (answer.status == 0)
            break; // the server is gone; the remaining requests cannot be made
    }
    return as_planned;
}

} // namespace

int main() {
    auto created = rate::KeyedLimiter::create(
        rate::Config::gcra(per_ip_limit, per_ip_period, per_ip_limit), 1024);
    if (!created) {
        std::cerr << "rate::KeyedLimiter::create: " << rate::to_string(created.status()) << '\n';
        return 1;
    }
    rate::KeyedLimiter per_ip = *std::move(created);

    Socket listener;
    sockaddr_in address = ipv4("127.0.0.1", 0);
    socklen_t length = sizeof address;
    if (!listener.ok() || !listener.bind(address) || ::listen(listener.fd(), 16) != 0 ||
        ::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        std::perror("listen on 127.0.0.1");
        return 1;
    }
    const std::uint16_t port = ntohs(address.sin_port);
    std::cout << "serving on 127.0.0.1:" << port << ", " << per_ip_limit
              << " requests per IP per hour" << std::endl;

    int as_planned = 0;
    std::thread client([&] { as_planned = run_client(port); });
    run_server(listener, per_ip, requests);
    client.join();
    std::cout << as_planned << " of " << requests << " requests answered as planned\n";
    return as_planned == requests ? 0 : 1;
}
