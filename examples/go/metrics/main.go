// Command metrics is an HTTP service whose limits Prometheus can watch: each client
// address gets 3 requests a minute (rule "minute") within 1,000 a second for everyone
// (rule "all"), and a stricter limit under test, 2 a minute, runs in shadow: it decides
// and counts every request, logs each request it would deny, and refuses none.
// /metrics serves the counts of both.
//
// Run it from this directory, after `cargo build --release` at the repository root:
//
//	go run .                                 # serves http://127.0.0.1:8080/
//	curl -i http://127.0.0.1:8080/           # the 4th call in a minute: 429
//	curl http://127.0.0.1:8080/metrics       # ratelimit_requests_total{...}
//
// It listens on 127.0.0.1 only. Counts are per process: Prometheus sums the processes
// it scrapes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	librate "github.com/librate/librate/bindings/go"
	librateprometheus "github.com/librate/librate/bindings/go/prometheus"
)

// service is the handler and the limiters it holds; close releases them.
type service struct {
	http.Handler
	api      *librate.KeyedPolicy
	proposed *librate.Keyed
}

func (s *service) close() {
	s.api.Close()
	s.proposed.Close()
}

// newService builds the service: "hello" behind the limit in force and the one in
// shadow, and /metrics, which no limit counts.
func newService() (*service, error) {
	api, err := librate.NewKeyedPolicy(100_000,
		librate.KeyedRule{Config: librate.Config{Algorithm: librate.GCRA, Limit: 3, Period: time.Minute}, Scope: librate.PerKey},
		librate.KeyedRule{Config: librate.Config{Algorithm: librate.GCRA, Limit: 1000, Period: time.Second}, Scope: librate.Global})
	if err != nil {
		return nil, err
	}
	proposed, err := librate.NewKeyed(librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: time.Minute}, 100_000)
	if err != nil {
		api.Close()
		return nil, err
	}
	s := &service{api: api, proposed: proposed}
	enforced, err := librate.NewMiddleware(api, librate.MiddlewareOptions{RuleNames: []string{"minute", "all"}})
	shadow, err2 := librate.NewMiddleware(proposed, librate.MiddlewareOptions{Policy: "proposed",
		Shadow: true, RuleHeader: "X-Would-Deny"})
	// A registry of its own, so /metrics shows the limits alone; the default one would
	// add the process's own metrics.
	collector := librateprometheus.NewCollector()
	registry := prometheus.NewRegistry()
	if err := errors.Join(err, err2, collector.Add("api", api, "minute", "all"),
		collector.Add("proposed", proposed), registry.Register(collector)); err != nil {
		s.close()
		return nil, err
	}
	app := http.NewServeMux()
	app.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	// The shadow limit sees every request, the enforced one after it.
	mux.Handle("/", shadow.Wrap(enforced.Wrap(app)))
	s.Handler = mux
	return s, nil
}

func main() {
	port := flag.Int("port", 8080, "port on 127.0.0.1 (0 picks a free one)")
	flag.Parse()
	s, err := newService()
	if err != nil {
		log.Fatal(err)
	}
	defer s.close()
	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s/\n", listener.Addr())
	// The middleware logs each denial (and each would-be denial) at Info, to slog's default.
	log.Fatal(http.Serve(listener, s))
}
