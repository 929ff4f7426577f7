package librate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	librate "librate/bindings/go"
)

// fakeClock is a settable clock for Middleware.Now.
type fakeClock struct{ now time.Duration }

func (c *fakeClock) Now() time.Duration { return c.now }

// okHandler answers 200 "ok".
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })

// response is what a test checks of one answer.
type response struct {
	status                        int
	rateLimit, policy, retryAfter string
}

func serve(h http.Handler, remoteAddr string, header http.Header) response {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = remoteAddr
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	return response{
		status:     res.StatusCode,
		rateLimit:  res.Header.Get("RateLimit"),
		policy:     res.Header.Get("RateLimit-Policy"),
		retryAfter: res.Header.Get("Retry-After"),
	}
}

func newMiddleware(t *testing.T, limiter librate.RequestLimiter, options librate.MiddlewareOptions) http.Handler {
	t.Helper()
	m, err := librate.NewMiddleware(limiter, options)
	if err != nil {
		t.Fatal(err)
	}
	return m.Wrap(okHandler)
}

// The seed scenario over HTTP, on a limit shared by every client: L=1 per 2 s, burst 1.
// Decisions as in TestSeedOnePerTwoSeconds; Retry-After and t round them up to whole
// seconds (1001 ms → 2, 1000 ms → 1, 2 s → 2). The policy is q=1 per w=2 seconds.
func TestMiddlewareSharedSeedScenario(t *testing.T) {
	clock := &fakeClock{}
	h := newMiddleware(t, librate.Shared(mustGCRA(t, 1, 2*time.Second, 1)), librate.MiddlewareOptions{Now: clock.Now})
	const policy = `"default";q=1;w=2`
	steps := []struct {
		at   time.Duration
		addr string
		want response
	}{
		{0, "192.0.2.1:1000", response{200, `"default";r=0;t=2`, policy, ""}},
		{999 * ms, "192.0.2.1:1000", response{429, `"default";r=0;t=2`, policy, "2"}},
		// Shared: a different client is denied too.
		{1000 * ms, "198.51.100.7:2000", response{429, `"default";r=0;t=1`, policy, "1"}},
		{2001 * ms, "192.0.2.1:1000", response{200, `"default";r=0;t=2`, policy, ""}},
	}
	for _, s := range steps {
		clock.now = s.at
		if got := serve(h, s.addr, nil); got != s.want {
			t.Errorf("at %v from %s:\n got %+v\nwant %+v", s.at, s.addr, got, s.want)
		}
	}
}

// 5 per second, burst 5: remaining counts down, t is the time to refill (200 ms a
// unit, rounded up), and the sixth request waits 200 ms, so Retry-After is 1.
func TestMiddlewareCountsDown(t *testing.T) {
	clock := &fakeClock{now: time.Hour}
	h := newMiddleware(t, librate.Shared(mustGCRA(t, 5, time.Second, 0)),
		librate.MiddlewareOptions{Now: clock.Now, Policy: "per-second"})
	const policy = `"per-second";q=5;w=1`
	wants := []response{
		{200, `"per-second";r=4;t=1`, policy, ""},
		{200, `"per-second";r=3;t=1`, policy, ""},
		{200, `"per-second";r=2;t=1`, policy, ""},
		{200, `"per-second";r=1;t=1`, policy, ""},
		{200, `"per-second";r=0;t=1`, policy, ""},
		{429, `"per-second";r=0;t=1`, policy, "1"},
	}
	for i, want := range wants {
		if got := serve(h, "192.0.2.1:1", nil); got != want {
			t.Errorf("request %d:\n got %+v\nwant %+v", i+1, got, want)
		}
	}
}

// The advertised policy never promises more than the real rate: the period is rounded
// up to whole seconds and the limit scaled down to it.
func TestMiddlewarePolicyScaling(t *testing.T) {
	cases := []struct {
		limit  uint64
		period time.Duration
		want   string
	}{
		{10, 100 * ms, `"default";q=100;w=1`},           // 10 per 100 ms = 100 per second
		{3, 1500 * ms, `"default";q=4;w=2`},             // 3 per 1.5 s = 4 per 2 s
		{7, time.Minute, `"default";q=7;w=60`},          // whole seconds: unchanged
		{1, time.Hour + 1, `"default";q=1;w=3601`},      // 1 per 3600.000000001 s ≥ 1 per 3601 s
		{1000, time.Second / 3, `"default";q=3000;w=1`}, // 333333333 ns: 1000·10⁹/333333333 = 3000.000003
	}
	for _, c := range cases {
		got := serve(newMiddleware(t, librate.Shared(mustGCRA(t, c.limit, c.period, 0)), librate.MiddlewareOptions{}), "192.0.2.1:1", nil)
		if got.policy != c.want {
			t.Errorf("%d per %v: RateLimit-Policy %q, want %q", c.limit, c.period, got.policy, c.want)
		}
	}
}

// A custom key and policy name; the name is escaped as an sf-string.
func TestMiddlewareKeyAndPolicyName(t *testing.T) {
	var keys []string
	limiter := recordingLimiter{keys: &keys, limiter: mustGCRA(t, 100, time.Second, 0)}
	h := newMiddleware(t, limiter, librate.MiddlewareOptions{
		Key:    func(r *http.Request) string { return r.Header.Get("X-User") },
		Policy: `per "user" \ minute`,
	})
	got := serve(h, "192.0.2.1:1", http.Header{"X-User": {"bob"}})
	if want := `"per \"user\" \\ minute";q=100;w=1`; got.policy != want {
		t.Errorf("policy %q, want %q", got.policy, want)
	}
	if len(keys) != 1 || keys[0] != "bob" {
		t.Errorf("keys %q, want [bob]", keys)
	}
}

// recordingLimiter records the keys it is asked about.
type recordingLimiter struct {
	keys    *[]string
	limiter *librate.Limiter
}

func (r recordingLimiter) AcquireAt(key string, n int, now time.Duration) (librate.Decision, error) {
	*r.keys = append(*r.keys, key)
	return r.limiter.AcquireAt(n, now)
}

func (r recordingLimiter) Config() librate.Config { return r.limiter.Config() }

// The default key is the remote IP without port or IPv6 brackets.
func TestRemoteIP(t *testing.T) {
	cases := map[string]string{
		"192.0.2.1:1234":   "192.0.2.1",
		"[2001:db8::1]:80": "2001:db8::1",
		"[::1]:8080":       "::1",
		"no-port":          "no-port",
		"":                 "",
	}
	for addr, want := range cases {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = addr
		if got := librate.RemoteIP(req); got != want {
			t.Errorf("RemoteIP(%q) = %q, want %q", addr, got, want)
		}
	}
}

// When the limiter fails (here: closed, ErrNull), requests get 503 by default and are
// served with FailOpen; neither carries RateLimit fields.
func TestMiddlewareFailure(t *testing.T) {
	closed := mustGCRA(t, 1, time.Second, 0)
	closed.Close()
	for _, failOpen := range []bool{false, true} {
		var log bytes.Buffer
		h := newMiddleware(t, librate.Shared(closed), librate.MiddlewareOptions{FailOpen: failOpen,
			Logger: slog.New(slog.NewTextHandler(&log, nil))})
		want := response{status: http.StatusServiceUnavailable}
		logged := `level=ERROR msg="librate: the rate limiter failed; request refused with 503 (fail closed)"`
		if failOpen {
			want.status = http.StatusOK
			logged = `level=WARN msg="librate: the rate limiter failed; request served unlimited (fail open)"`
		}
		if got := serve(h, "192.0.2.1:1", nil); got != want {
			t.Errorf("FailOpen=%v: %+v, want %+v", failOpen, got, want)
		}
		if !strings.Contains(log.String(), logged) || !strings.Contains(log.String(), "(status -1)") {
			t.Errorf("FailOpen=%v: log %q, want %q and the error", failOpen, log.String(), logged)
		}
	}
	// A nil Middleware (an unchecked NewMiddleware error) fails closed too.
	var none *librate.Middleware
	if got := serve(none.Wrap(okHandler), "192.0.2.1:1", nil); got != (response{status: http.StatusServiceUnavailable}) {
		t.Errorf("nil Middleware: %+v, want 503", got)
	}
}

func TestNewMiddlewareErrors(t *testing.T) {
	if _, err := librate.NewMiddleware(nil, librate.MiddlewareOptions{}); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("nil limiter: %v", err)
	}
	limiter := librate.Shared(mustGCRA(t, 1, time.Second, 0))
	for _, name := range []string{"tab\there", "naïve", "new\nline"} {
		if _, err := librate.NewMiddleware(limiter, librate.MiddlewareOptions{Policy: name}); !errors.Is(err, librate.ErrInvalidArgument) {
			t.Errorf("policy %q: %v", name, err)
		}
	}
}

// headerVectors is bindings/testdata/ratelimit_headers.json: a configuration, a decision
// and the headers both middlewares (this one and Python's) must write for them.
type headerVectors struct {
	Cases []struct {
		What, Name string
		Limit      uint64
		PeriodNs   uint64 `json:"period_ns"`
		Burst      uint64
		Decision   struct {
			Allowed      bool
			Remaining    uint64
			RetryAfterNs uint64 `json:"retry_after_ns"`
			ResetAfterNs uint64 `json:"reset_after_ns"`
		}
		Policy, RateLimit string
		RetryAfter        *string `json:"retry_after"`
	}
}

// vectorLimiter answers every request with one fixed decision.
type vectorLimiter struct {
	config   librate.Config
	decision librate.Decision
}

func (v vectorLimiter) AcquireAt(string, int, time.Duration) (librate.Decision, error) {
	return v.decision, nil
}

func (v vectorLimiter) Config() librate.Config { return v.config }

// fromC is a C decision's duration as the binding reports it: saturated at Never.
func fromC(ns uint64) time.Duration {
	return time.Duration(min(ns, uint64(librate.Never)))
}

// The Python and Go middlewares write the same headers for the same decision.
func TestMiddlewareHeaderVectors(t *testing.T) {
	data, err := os.ReadFile("../testdata/ratelimit_headers.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors headerVectors
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors.Cases) < 10 {
		t.Fatalf("%d vectors", len(vectors.Cases))
	}
	for _, c := range vectors.Cases {
		d := c.Decision
		limiter := vectorLimiter{
			config: librate.Config{Limit: c.Limit, Period: time.Duration(c.PeriodNs), Burst: c.Burst},
			decision: librate.Decision{Allowed: d.Allowed, Remaining: d.Remaining,
				RetryAfter: fromC(d.RetryAfterNs), ResetAfter: fromC(d.ResetAfterNs)},
		}
		got := serve(newMiddleware(t, limiter, librate.MiddlewareOptions{Policy: c.Name}), "192.0.2.1:1234", nil)
		want := response{status: http.StatusOK, rateLimit: c.RateLimit, policy: c.Policy}
		if c.RetryAfter != nil {
			want.status, want.retryAfter = http.StatusTooManyRequests, *c.RetryAfter
		}
		if got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.What, got, want)
		}
	}
}
