// Command ratelimited is a small HTTP service behind a per-IP limit: each client address
// gets 5 requests a minute (GCRA, bursts of up to 5); beyond that it is answered 429 Too
// Many Requests with Retry-After, and every response carries RateLimit-Policy and
// RateLimit.
//
// Run it from this directory, after `cargo build --release` at the repository root:
//
//	go run .                          # serves http://127.0.0.1:8080/
//	curl -i http://127.0.0.1:8080/    # the 6th call in a minute: 429
//
// It listens on 127.0.0.1 only. The limit is per process (see the middleware section of
// docs/go.md).
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// newHandler is the service: "hello" behind limit requests per period for each client
// address. Close the returned Keyed when the handler is no longer served.
func newHandler(limit uint64, period time.Duration) (http.Handler, *librate.Keyed, error) {
	// One table for up to 100,000 client addresses that are over or near their limit,
	// allocated once (32 bytes each).
	perIP, err := librate.NewKeyed(librate.Config{Algorithm: librate.GCRA, Limit: limit, Period: period}, 100_000)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	// The default key is the remote IP; behind a proxy, set MiddlewareOptions.Key to a
	// function that reads the address the proxy forwards.
	m, err := librate.NewMiddleware(perIP, librate.MiddlewareOptions{})
	if err != nil {
		perIP.Close()
		return nil, nil, err
	}
	return m.Wrap(mux), perIP, nil
}

func main() {
	port := flag.Int("port", 8080, "port on 127.0.0.1 (0 picks a free one)")
	flag.Parse()
	handler, perIP, err := newHandler(5, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	defer perIP.Close()
	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s/\n", listener.Addr())
	log.Fatal(http.Serve(listener, handler))
}
