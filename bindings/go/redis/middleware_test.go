package librateredis_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	librate "librate/bindings/go"
)

// hourly is one request an hour for each client.
var hourly = librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Hour}

// answer is what a test checks of one response.
type answer struct {
	status           int
	rateLimit, retry string
}

// get serves one GET from addr through h with ctx, and returns the answer.
func get(ctx context.Context, h http.Handler, addr string) answer {
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	r.RemoteAddr = addr
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return answer{w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After")}
}

func wrap(t *testing.T, limiter librate.RequestLimiter, options librate.MiddlewareOptions) http.Handler {
	t.Helper()
	m, err := librate.NewMiddleware(limiter, options)
	if err != nil {
		t.Fatal(err)
	}
	return m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
}

// The seed scenario over HTTP, one limit per client address kept in Redis, on the
// middleware's clock: the headers the in-process middleware writes for the same
// decisions (L = 1 per 2 s: q=1;w=2).
func TestMiddlewareSeedScenario(t *testing.T) {
	l := newLimiter(t, startServer(t).client(t), librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: 2 * time.Second}, "http:")
	var now time.Duration
	h := wrap(t, l.ForMiddleware(), librate.MiddlewareOptions{Now: func() time.Duration { return now }})
	for _, s := range []struct {
		at   time.Duration
		addr string
		want answer
	}{
		{0, "192.0.2.1:1000", answer{200, `"default";r=0;t=2`, ""}},
		{999 * ms, "192.0.2.1:1000", answer{429, `"default";r=0;t=2`, "2"}},
		{1000 * ms, "198.51.100.7:2000", answer{200, `"default";r=0;t=2`, ""}},
		{1000 * ms, "192.0.2.1:1001", answer{429, `"default";r=0;t=1`, "1"}},
		{2001 * ms, "192.0.2.1:1000", answer{200, `"default";r=0;t=2`, ""}},
	} {
		now = s.at
		if got := get(ctx, h, s.addr); got != s.want {
			t.Errorf("at %v from %s: %+v, want %+v", s.at, s.addr, got, s.want)
		}
	}
}

// Without MiddlewareOptions.Now the middleware decides by the Redis server's clock, the
// one Limiter.Acquire uses, not by librate's per-host clock; and with the request's
// context: one already cancelled is refused without a decision.
func TestMiddlewareUsesTheServersClockAndTheRequestsContext(t *testing.T) {
	l := newLimiter(t, startServer(t).client(t), hourly, "http:")
	var log bytes.Buffer
	h := wrap(t, l.ForMiddleware(), librate.MiddlewareOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if got := get(ctx, h, "192.0.2.9:1"); got != (answer{200, `"default";r=0;t=3600`, ""}) {
		t.Fatalf("the first request: %+v", got)
	}
	if d, err := l.Acquire(ctx, "192.0.2.9", 1); err != nil || d.Allowed {
		t.Errorf("by the server's clock after the middleware's admission: %+v, %v; want denied", d, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if got := get(cancelled, h, "192.0.2.10:1"); got.status != http.StatusServiceUnavailable {
		t.Errorf("a cancelled request: %+v, want 503", got)
	}
	if !strings.Contains(log.String(), "context canceled") {
		t.Errorf("log: %q", log.String())
	}
}

// With the server killed, the middleware serves requests unlimited (fail open) or
// answers 503 (fail closed), and logs the failure and the choice, within the request's
// deadline.
func TestMiddlewareFailsOpenOrClosed(t *testing.T) {
	s := startServer(t)
	l := newLimiter(t, s.client(t), hourly, "http:")
	s.kill()
	for _, c := range []struct {
		failOpen bool
		status   int
		logged   string
	}{
		{true, http.StatusOK, "level=WARN msg=\"librate: the rate limiter failed; request served unlimited (fail open)\""},
		{false, http.StatusServiceUnavailable, "level=ERROR msg=\"librate: the rate limiter failed; request refused with 503 (fail closed)\""},
	} {
		var log bytes.Buffer
		h := wrap(t, l.ForMiddleware(), librate.MiddlewareOptions{FailOpen: c.failOpen, Logger: slog.New(slog.NewTextHandler(&log, nil))})
		bounded, cancel := context.WithTimeout(ctx, time.Second)
		got := get(bounded, h, "192.0.2.1:1")
		cancel()
		if got != (answer{status: c.status}) {
			t.Errorf("FailOpen %v: %+v, want %d without fields", c.failOpen, got, c.status)
		}
		if text := log.String(); !strings.Contains(text, c.logged) || !strings.Contains(text, "error=\"librateredis: \\\"http:{192.0.2.1}\\\"") {
			t.Errorf("FailOpen %v: log %q, want %q and the error", c.failOpen, text, c.logged)
		}
	}
}
