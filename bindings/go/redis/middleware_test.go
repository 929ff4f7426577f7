package librateredis_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
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
	return okBehind(t, m, err)
}

// okBehind is a handler answering "ok" behind m, built with the error err.
func okBehind(t *testing.T, m *librate.Middleware, err error) http.Handler {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
}

// step is one request of a scripted exchange: its time on the middleware's clock, its
// client address, and the answer expected.
type step struct {
	at   time.Duration
	addr string
	want answer
}

// replay sends each step's request through h at its time, setting *now.
func replay(t *testing.T, h http.Handler, now *time.Duration, steps []step) {
	t.Helper()
	for _, s := range steps {
		*now = s.at
		if got := get(ctx, h, s.addr); got != s.want {
			t.Errorf("at %v from %s: %+v, want %+v", s.at, s.addr, got, s.want)
		}
	}
}

// The seed scenario over HTTP, one limit per client address kept in Redis, on the
// middleware's clock: the headers the in-process middleware writes for the same
// decisions (L = 1 per 2 s: q=1;w=2).
func TestMiddlewareSeedScenario(t *testing.T) {
	l := newLimiter(t, startServer(t).client(t), librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: 2 * time.Second}, "http:")
	var now time.Duration
	h := wrap(t, l, librate.MiddlewareOptions{Now: func() time.Time { return time.Unix(0, int64(now)) }})
	replay(t, h, &now, []step{
		{0, "192.0.2.1:1000", answer{200, `"default";r=0;t=2`, ""}},
		{999 * ms, "192.0.2.1:1000", answer{429, `"default";r=0;t=2`, "2"}},
		{1000 * ms, "198.51.100.7:2000", answer{200, `"default";r=0;t=2`, ""}},
		{1000 * ms, "192.0.2.1:1001", answer{429, `"default";r=0;t=1`, "1"}},
		{2001 * ms, "192.0.2.1:1000", answer{200, `"default";r=0;t=2`, ""}},
	})
}

// Without MiddlewareOptions.Now the middleware over a limiter or a policy decides by
// the Redis server's clock, the one Acquire uses, not by librate's per-host clock; and
// with the request's context: one already cancelled is refused without a decision.
func TestMiddlewareUsesTheServersClockAndTheRequestsContext(t *testing.T) {
	client := startServer(t).client(t)
	l := newLimiter(t, client, hourly, "http:")
	p := newPolicy(t, client, []librate.Config{perSecond, hourly}, "http:")
	for _, kind := range []struct {
		name  string
		wrap  func(librate.MiddlewareOptions) http.Handler
		first string
		// denied says whether the limiter denies the key by the server's clock.
		denied func(key string) (bool, error)
	}{
		{"limiter", func(o librate.MiddlewareOptions) http.Handler { return wrap(t, l, o) }, `"default";r=0;t=3600`,
			func(key string) (bool, error) { d, err := l.Acquire(ctx, key, 1); return !d.Allowed, err }},
		{"policy", func(o librate.MiddlewareOptions) http.Handler { return wrap(t, p, o) }, `"rule1";r=0;t=3600`,
			func(key string) (bool, error) { d, err := p.Acquire(ctx, key, 1); return d.DeniedBy == 1, err }},
	} {
		var log bytes.Buffer
		h := kind.wrap(librate.MiddlewareOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if got := get(ctx, h, "192.0.2.9:1"); got != (answer{200, kind.first, ""}) {
			t.Fatalf("%s: the first request: %+v", kind.name, got)
		}
		if denied, err := kind.denied("192.0.2.9"); err != nil || !denied {
			t.Errorf("%s: by the server's clock after the middleware's admission: %v, %v; want denied", kind.name, denied, err)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if got := get(cancelled, h, "192.0.2.10:1"); got.status != http.StatusServiceUnavailable {
			t.Errorf("%s: a cancelled request: %+v, want 503", kind.name, got)
		}
		if !strings.Contains(log.String(), "context canceled") {
			t.Errorf("%s: log: %q", kind.name, log.String())
		}
	}
}

// A Redis policy's script takes one cost for every rule: the same cost of each rule is
// taken, per-rule Costs are each request's error, librate.ErrUnsupported, logged.
func TestPolicyMiddlewareCosts(t *testing.T) {
	p := newPolicy(t, startServer(t).client(t), []librate.Config{perSecond, hourly}, "http:")
	h := wrap(t, p, librate.MiddlewareOptions{Costs: []int{1, 1}})
	if got := get(ctx, h, "192.0.2.1:1"); got != (answer{200, `"rule1";r=0;t=3600`, ""}) {
		t.Errorf("Costs [1 1]: %+v; want 200, the hourly rule binding", got)
	}
	var log bytes.Buffer
	h = wrap(t, p, librate.MiddlewareOptions{Costs: []int{1, 0}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if got := get(ctx, h, "192.0.2.2:1"); got.status != http.StatusServiceUnavailable {
		t.Errorf("Costs [1 0]: %+v; want 503", got)
	}
	want := `error="librateredis: costs [1 0]: unsupported: a Redis policy takes one cost for every rule"`
	if !strings.Contains(log.String(), want) {
		t.Errorf("Costs [1 0]: log %q; want %q", log.String(), want)
	}
}

// With the server killed, the middleware over a limiter or a policy serves requests
// unlimited (fail open) or answers 503 (fail closed), and logs the failure and the
// choice, within the request's deadline.
func TestMiddlewareFailsOpenOrClosed(t *testing.T) {
	s := startServer(t)
	limiter := newLimiter(t, s.client(t), hourly, "http:")
	policy := newPolicy(t, s.client(t), []librate.Config{perSecond, hourly}, "http:")
	s.kill()
	for _, c := range []struct {
		failOpen bool
		status   int
		logged   string
	}{
		{true, http.StatusOK, "level=WARN msg=\"librate: the rate limiter failed; request served unlimited (fail open)\""},
		{false, http.StatusServiceUnavailable, "level=ERROR msg=\"librate: the rate limiter failed; request refused with 503 (fail closed)\""},
	} {
		for _, kind := range []struct {
			name string
			wrap func(librate.MiddlewareOptions) http.Handler
			// key is the Redis key the logged error names.
			key string
		}{
			{"limiter", func(o librate.MiddlewareOptions) http.Handler { return wrap(t, limiter, o) }, `http:{192.0.2.1}`},
			{"policy", func(o librate.MiddlewareOptions) http.Handler { return wrap(t, policy, o) }, `http:{=192.0.2.1}:0`},
		} {
			var log bytes.Buffer
			h := kind.wrap(librate.MiddlewareOptions{FailOpen: c.failOpen, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			bounded, cancel := context.WithTimeout(ctx, time.Second)
			got := get(bounded, h, "192.0.2.1:1")
			cancel()
			if got != (answer{status: c.status}) {
				t.Errorf("%s, FailOpen %v: %+v, want %d without fields", kind.name, c.failOpen, got, c.status)
			}
			if text := log.String(); !strings.Contains(text, c.logged) || !strings.Contains(text, "error=\"librateredis: \\\""+kind.key+"\\\"") {
				t.Errorf("%s, FailOpen %v: log %q, want %q and the error", kind.name, c.failOpen, text, c.logged)
			}
		}
	}
}

// perSecond is 5 a second: with hourly, a policy whose hourly rule binds.
var perSecond = librate.Config{Algorithm: librate.GCRA, Limit: 5, Period: time.Second}

// A policy per client kept in Redis, over HTTP on the middleware's clock: 2 a second
// (GCRA, T = 500 ms) and 3 a minute (a fixed window), the fields the in-process policy's
// middleware writes for the same decisions (TestPolicyMiddleware in the librate package).
func TestPolicyMiddleware(t *testing.T) {
	p := newPolicy(t, startServer(t).client(t), []librate.Config{
		{Algorithm: librate.GCRA, Limit: 2, Period: time.Second},
		{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Minute},
	}, "http:")
	var now time.Duration
	h := wrap(t, p, librate.MiddlewareOptions{
		Now: func() time.Time { return time.Unix(0, int64(now)) }, RuleNames: []string{"second", "minute"}})
	replay(t, h, &now, []step{
		// The per-second rule has the least left: 1 (full again in 0.5 s), then 0 (1 s).
		{0, "192.0.2.1:1000", answer{200, `"second";r=1;t=1`, ""}},
		{0, "192.0.2.1:1000", answer{200, `"second";r=0;t=1`, ""}},
		// Denied by the per-second rule for 0.5 s; another client has rules of its own.
		{0, "192.0.2.1:1000", answer{429, `"second";r=0;t=1`, "1"}},
		{0, "198.51.100.7:2000", answer{200, `"second";r=1;t=1`, ""}},
		// At 1 s the minute rule has 0 left, until 1:00; then it denies for 58 s.
		{time.Second, "192.0.2.1:1000", answer{200, `"minute";r=0;t=59`, ""}},
		{2 * time.Second, "192.0.2.1:1000", answer{429, `"minute";r=0;t=58`, "58"}},
	})
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if got := w.Header().Get("RateLimit-Policy"); got != `"second";q=2;w=1, "minute";q=3;w=60` {
		t.Errorf("RateLimit-Policy: %q", got)
	}
}

// Over Redis as in process: the third request of 2 a minute is denied by rule 0 (of a
// policy of 2 a second and 3 a minute, by the per-second rule), named in the field and
// logged at Info; in shadow it is served without the RateLimit fields, named and logged
// as a would-be denial.
func TestMiddlewareNamesTheRuleThatDenied(t *testing.T) {
	client := startServer(t).client(t)
	twoAMinute := librate.Config{Algorithm: librate.FixedWindow, Limit: 2, Period: time.Minute}
	for i, c := range []struct {
		limiter librate.RequestLimiter
		name    string
		shadow  bool
	}{
		{newLimiter(t, client, twoAMinute, "rule:0:"), "default", false},
		{newLimiter(t, client, twoAMinute, "rule:1:"), "default", true},
		{newPolicy(t, client, []librate.Config{{Algorithm: librate.GCRA, Limit: 2, Period: time.Second},
			{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Minute}}, "rule:2:"), "rule0", false},
	} {
		var log bytes.Buffer
		noTime := func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
		h := wrap(t, c.limiter, librate.MiddlewareOptions{Now: func() time.Time { return time.Unix(0, 0) },
			RuleHeader: "RateLimit-Rule", Shadow: c.shadow,
			Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{ReplaceAttr: noTime}))})
		var w *httptest.ResponseRecorder
		for range 3 {
			w = httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil))
		}
		status, message := http.StatusTooManyRequests, "a rule denied the request"
		if c.shadow {
			status, message = http.StatusOK, "a rule would deny the request (shadow)"
		}
		if got := w.Header().Get("RateLimit-Rule"); w.Code != status || got != `"`+c.name+`"` {
			t.Errorf("case %d: %d, RateLimit-Rule %q; want %d, %q", i, w.Code, got, status, `"`+c.name+`"`)
		}
		want := "level=INFO msg=\"librate: " + message + "\" rule=0 rule_name=" + c.name + " shadow=" + strconv.FormatBool(c.shadow) + "\n"
		if log.String() != want {
			t.Errorf("case %d: log %q, want %q", i, log.String(), want)
		}
	}
}
