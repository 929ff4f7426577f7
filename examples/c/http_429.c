/* librate from C: a per-IP rate limit in front of a tiny HTTP echo server.
 *
 * The server listens on 127.0.0.1 (an ephemeral port) and allows each client IP 3 requests
 * per hour, in a burst of 3: a keyed GCRA limiter whose key is the 4 bytes of the peer's
 * IPv4 address. A request over the limit gets "429 Too Many Requests" with a Retry-After
 * header (whole seconds, rounded up); if the key table were full of live IPs it would get
 * "503 Service Unavailable" (failing closed; failing open is the other choice).
 *
 * A client thread plays two clients, binding its sockets to 127.0.0.2 and 127.0.0.3 (on
 * Linux the whole of 127.0.0.0/8 is loopback), and sends 9 requests in a fixed order. The
 * program exits 0 only if each got the status planned for it: the first 3 from each IP are
 * echoed with 200, the rest refused with 429 and a Retry-After of 1 to 1200 s (one
 * emission interval, 3600 s / 3, minus the little time already gone). Every socket has a
 * 5 s timeout, so a failure ends the program instead of hanging it.
 *
 * Build: cc -std=c99 -pthread -Iinclude http_429.c -Ltarget/release -lrate
 *        -Wl,-rpath,target/release
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "rate.h"

#define SECOND UINT64_C(1000000000)
#define PER_IP_LIMIT 3
#define PER_IP_PERIOD (UINT64_C(3600) * SECOND)
#define TIMEOUT_SECONDS 5
#define BUFFER_SIZE 2048

struct planned {
    const char *client_ip;
    int expected_status;
};

static const struct planned plan[] = {
    {"127.0.0.2", 200}, {"127.0.0.2", 200}, {"127.0.0.2", 200}, {"127.0.0.2", 429},
    {"127.0.0.3", 200}, {"127.0.0.2", 429}, {"127.0.0.3", 200}, {"127.0.0.3", 200},
    {"127.0.0.3", 429},
};
enum { REQUESTS = sizeof plan / sizeof plan[0] };

/* ---- sockets -------------------------------------------------------------------------- */

/* Gives a socket TIMEOUT_SECONDS to receive (accept too) and to send. */
static int set_timeouts(int fd) {
    struct timeval timeout;
    timeout.tv_sec = TIMEOUT_SECONDS;
    timeout.tv_usec = 0;
    return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) == 0 &&
                   setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) == 0
               ? 0
               : -1;
}

static struct sockaddr_in ipv4(const char *ip, uint16_t port) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    if (inet_pton(AF_INET, ip, &address.sin_addr) != 1)
        abort(); /* the addresses are constants of this program */
    return address;
}

static int send_all(int fd, const char *data, size_t length) {
    while (length > 0) {
        ssize_t sent = send(fd, data, length, MSG_NOSIGNAL);
        if (sent <= 0)
            return -1;
        data += sent;
        length -= (size_t)sent;
    }
    return 0;
}

/* Reads into `buffer` (NUL-terminated) until `end` is seen, the peer closes (end NULL), or
 * the buffer is full; returns the length, or -1 on an error or timeout. */
static ssize_t receive(int fd, char *buffer, size_t size, const char *end) {
    size_t length = 0;
    buffer[0] = '\0';
    while (length + 1 < size) {
        ssize_t got = recv(fd, buffer + length, size - 1 - length, 0);
        if (got < 0)
            return -1;
        if (got == 0)
            break;
        length += (size_t)got;
        buffer[length] = '\0';
        if (end != NULL && strstr(buffer, end) != NULL)
            break;
    }
    return (ssize_t)length;
}

/* ---- the server ------------------------------------------------------------------------ */

/* Answers one request from `peer`: the limiter decides between 200, 429 and 503. */
static void serve(int fd, rate_keyed *per_ip, const struct sockaddr_in *peer) {
    char request[BUFFER_SIZE], response[BUFFER_SIZE], body[BUFFER_SIZE / 2], ip[INET_ADDRSTRLEN];
    rate_decision d;
    int32_t status;
    size_t line_length;
    if (receive(fd, request, sizeof request, "\r\n\r\n") <= 0)
        return;
    line_length = strcspn(request, "\r\n");
    inet_ntop(AF_INET, &peer->sin_addr, ip, sizeof ip);
    /* The key: the peer's IPv4 address, 4 bytes in network order. */
    status = rate_keyed_acquire(per_ip, (const uint8_t *)&peer->sin_addr, sizeof peer->sin_addr, 1,
                                &d);
    if (status == RATE_OK) {
        snprintf(body, sizeof body, "%s said: %.*s\n", ip, (int)line_length, request);
        snprintf(response, sizeof response,
                 "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                 "X-RateLimit-Limit: %" PRIu64 "\r\nX-RateLimit-Remaining: %" PRIu64 "\r\n"
                 "Connection: close\r\n\r\n%s",
                 strlen(body), d.limit, d.remaining, body);
    } else if (status == RATE_LIMITED) {
        /* Retry-After is in whole seconds: round up, so that retrying then succeeds. */
        uint64_t seconds = d.retry_after_ns / SECOND + (d.retry_after_ns % SECOND != 0);
        snprintf(body, sizeof body, "too many requests from %s\n", ip);
        snprintf(response, sizeof response,
                 "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain\r\n"
                 "Content-Length: %zu\r\nRetry-After: %" PRIu64 "\r\nConnection: close\r\n\r\n%s",
                 strlen(body), seconds, body);
    } else {
        /* RATE_E_TABLE_FULL: more live IPs than the table holds. Fail closed. */
        snprintf(body, sizeof body, "%s\n", rate_status_str(status));
        snprintf(response, sizeof response,
                 "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                 "Retry-After: 1\r\nConnection: close\r\n\r\n%s",
                 status == RATE_E_TABLE_FULL ? "503 Service Unavailable"
                                             : "500 Internal Server Error",
                 strlen(body), body);
    }
    send_all(fd, response, strlen(response));
}

/* Accepts and answers `count` connections, one at a time; stops early if accept fails or
 * times out (the client gave up). */
static void run_server(int listener, rate_keyed *per_ip, int count) {
    int i;
    for (i = 0; i < count; i++) {
        struct sockaddr_in peer;
        socklen_t peer_length = sizeof peer;
        int fd = accept(listener, (struct sockaddr *)&peer, &peer_length);
        if (fd < 0) {
            perror("accept");
            return;
        }
        if (set_timeouts(fd) == 0)
            serve(fd, per_ip, &peer);
        close(fd);
    }
}

/* ---- the client ------------------------------------------------------------------------ */

struct client {
    uint16_t port;
    int as_planned; /* requests that got their planned answer */
};

/* Sends request number `i` from its planned IP; returns the HTTP status (0 on a transport
 * error) and stores the Retry-After header's value (0 if absent). */
static int request(uint16_t port, int i, long *retry_after, char *response, size_t size) {
    struct sockaddr_in local = ipv4(plan[i].client_ip, 0), server = ipv4("127.0.0.1", port);
    char text[128];
    const char *header;
    int status = 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    *retry_after = 0;
    response[0] = '\0';
    if (fd < 0)
        return 0;
    snprintf(text, sizeof text,
             "GET /echo?n=%d HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", i + 1);
    if (set_timeouts(fd) == 0 && bind(fd, (struct sockaddr *)&local, sizeof local) == 0 &&
        connect(fd, (struct sockaddr *)&server, sizeof server) == 0 &&
        send_all(fd, text, strlen(text)) == 0 && receive(fd, response, size, NULL) > 0 &&
        sscanf(response, "HTTP/1.1 %d", &status) == 1) {
        header = strstr(response, "\r\nRetry-After: ");
        if (header != NULL)
            *retry_after = strtol(header + strlen("\r\nRetry-After: "), NULL, 10);
    } else {
        perror(plan[i].client_ip);
    }
    close(fd);
    return status;
}

static void *run_client(void *arg) {
    struct client *client = arg;
    int i;
    for (i = 0; i < REQUESTS; i++) {
        char response[BUFFER_SIZE];
        long retry_after;
        int status = request(client->port, i, &retry_after, response, sizeof response);
        const char *body = strstr(response, "\r\n\r\n");
        int as_planned = status == plan[i].expected_status;
        if (status == 429) /* one emission interval at most: 3600 s / 3 */
            as_planned = as_planned && retry_after >= 1 && retry_after <= 1200;
        if (status == 200)
            as_planned = as_planned && body != NULL && strstr(body, "GET /echo") != NULL;
        printf("%s GET /echo?n=%d -> %d", plan[i].client_ip, i + 1, status);
        if (status == 200 && body != NULL)
            printf(" \"%.*s\"", (int)strcspn(body + 4, "\n"), body + 4);
        if (retry_after != 0)
            printf(" (Retry-After: %ld s)", retry_after);
        printf("%s\n", as_planned ? "" : "  UNEXPECTED");
        client->as_planned += as_planned;
        if (status == 0)
            break; /* the server is gone; the remaining requests cannot be made */
    }
    return NULL;
}

int main(void) {
    rate_config config = {RATE_GCRA, PER_IP_LIMIT, PER_IP_PERIOD, PER_IP_LIMIT};
    rate_keyed *per_ip = NULL;
    struct sockaddr_in address = ipv4("127.0.0.1", 0);
    socklen_t length = sizeof address;
    struct client client = {0, 0};
    pthread_t client_thread;
    int listener, exit_code = 1;
    int32_t status = rate_keyed_new(&config, 1024, &per_ip);
    if (status != RATE_OK) {
        fprintf(stderr, "rate_keyed_new: %s\n", rate_status_str(status));
        return 1;
    }
    listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0 || set_timeouts(listener) != 0 ||
        bind(listener, (struct sockaddr *)&address, sizeof address) != 0 ||
        listen(listener, 16) != 0 ||
        getsockname(listener, (struct sockaddr *)&address, &length) != 0) {
        perror("listen on 127.0.0.1");
    } else {
        client.port = ntohs(address.sin_port);
        printf("serving on 127.0.0.1:%u, %d requests per IP per hour\n", (unsigned)client.port,
               PER_IP_LIMIT);
        if (pthread_create(&client_thread, NULL, run_client, &client) == 0) {
            run_server(listener, per_ip, REQUESTS);
            pthread_join(client_thread, NULL);
            exit_code = client.as_planned == REQUESTS ? 0 : 1;
            printf("%d of %d requests answered as planned\n", client.as_planned, REQUESTS);
        }
    }
    if (listener >= 0)
        close(listener);
    rate_keyed_free(per_ip);
    return exit_code;
}
