package librate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// fakeClock is a settable clock for MiddlewareOptions.Now: now on librate's timeline.
type fakeClock struct{ now time.Duration }

func (c *fakeClock) Now() time.Time { return librate.TimeAt(c.now) }

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

// An httpStep is one request: at a time, from an address, and the answer it must get.
type httpStep struct {
	at   time.Duration
	addr string
	want response
}

// serveSteps sends each step's request through h at its time on clock and checks its
// answer.
func serveSteps(t *testing.T, h http.Handler, clock *fakeClock, steps []httpStep) {
	t.Helper()
	for _, s := range steps {
		clock.now = s.at
		if got := serve(h, s.addr, nil); got != s.want {
			t.Errorf("at %v from %s:\n got %+v\nwant %+v", s.at, s.addr, got, s.want)
		}
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
	h := newMiddleware(t, mustGCRA(t, 1, 2*time.Second, 1), librate.MiddlewareOptions{Now: clock.Now})
	const policy = `"default";q=1;w=2`
	steps := []httpStep{
		{0, "192.0.2.1:1000", response{200, `"default";r=0;t=2`, policy, ""}},
		{999 * ms, "192.0.2.1:1000", response{429, `"default";r=0;t=2`, policy, "2"}},
		// Shared: a different client is denied too.
		{1000 * ms, "198.51.100.7:2000", response{429, `"default";r=0;t=1`, policy, "1"}},
		{2001 * ms, "192.0.2.1:1000", response{200, `"default";r=0;t=2`, policy, ""}},
	}
	serveSteps(t, h, clock, steps)
}

// 5 per second, burst 5: remaining counts down, t is the time to refill (200 ms a
// unit, rounded up), and the sixth request waits 200 ms, so Retry-After is 1.
func TestMiddlewareCountsDown(t *testing.T) {
	clock := &fakeClock{now: time.Hour}
	h := newMiddleware(t, mustGCRA(t, 5, time.Second, 0),
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
		got := serve(newMiddleware(t, mustGCRA(t, c.limit, c.period, 0), librate.MiddlewareOptions{}), "192.0.2.1:1", nil)
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

func (r recordingLimiter) LimitRequest(ctx context.Context, key string, t time.Time, costs []int) (librate.PolicyDecision, error) {
	*r.keys = append(*r.keys, key)
	return r.limiter.LimitRequest(ctx, key, t, costs)
}

func (r recordingLimiter) Rules() []librate.Config { return r.limiter.Rules() }

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

// When the limiter fails (here: closed, ErrClosed), requests get 503 by default and are
// served with FailOpen; neither carries RateLimit fields.
func TestMiddlewareFailure(t *testing.T) {
	closed := mustGCRA(t, 1, time.Second, 0)
	closed.Close()
	for _, failOpen := range []bool{false, true} {
		var log bytes.Buffer
		h := newMiddleware(t, closed, librate.MiddlewareOptions{FailOpen: failOpen,
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
	limiter := mustGCRA(t, 1, time.Second, 0)
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

func (v vectorLimiter) LimitRequest(context.Context, string, time.Time, []int) (librate.PolicyDecision, error) {
	deniedBy := 0
	if v.decision.Allowed {
		deniedBy = -1
	}
	return librate.PolicyDecision{Decision: v.decision, DeniedBy: deniedBy, Rules: []librate.Decision{v.decision}}, nil
}

func (v vectorLimiter) Rules() []librate.Config { return []librate.Config{v.config} }

// fromC is a C decision's duration as the binding reports it: saturated at Never.
func fromC(ns uint64) time.Duration {
	return time.Duration(min(ns, uint64(librate.Never)))
}

// The Python and Go middlewares write the same headers for the same decision.
func TestMiddlewareHeaderVectors(t *testing.T) {
	var vectors headerVectors
	readVectors(t, "ratelimit_headers.json", &vectors, func() int { return len(vectors.Cases) })
	for _, c := range vectors.Cases {
		d := c.Decision
		limiter := vectorLimiter{
			config: librate.Config{Limit: c.Limit, Period: time.Duration(c.PeriodNs), Burst: c.Burst},
			decision: librate.Decision{Allowed: d.Allowed, Remaining: d.Remaining,
				RetryAfter: fromC(d.RetryAfterNs), ResetAfter: fromC(d.ResetAfterNs)},
		}
		h := newMiddleware(t, limiter, librate.MiddlewareOptions{Policy: c.Name})
		checkVector(t, h, c.What, c.Policy, c.RateLimit, c.RetryAfter)
	}
}

// readVectors decodes bindings/testdata/name into v, whose number of cases count gives:
// at least 10.
func readVectors(t *testing.T, name string, v any, count func() int) {
	t.Helper()
	data, err := os.ReadFile("../testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
	if count() < 10 {
		t.Fatalf("%s: %d vectors", name, count())
	}
}

// checkVector serves one request through h and checks it gets the fields a vector
// expects: admitted if retryAfter is nil, else a 429 with that Retry-After.
func checkVector(t *testing.T, h http.Handler, what, policy, rateLimit string, retryAfter *string) {
	t.Helper()
	got := serve(h, "192.0.2.1:1234", nil)
	want := response{status: http.StatusOK, rateLimit: rateLimit, policy: policy}
	if retryAfter != nil {
		want.status, want.retryAfter = http.StatusTooManyRequests, *retryAfter
	}
	if got != want {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// A Policy for all requests, over HTTP: 2 a second (GCRA, T = 500 ms) and 3 a minute (a
// fixed window). RateLimit reports the rule with the least left, or the one that denied.
func TestPolicyMiddleware(t *testing.T) {
	clock := &fakeClock{}
	m, err := librate.NewMiddleware(mustPolicy(t, twoRules...),
		librate.MiddlewareOptions{Now: clock.Now, RuleNames: []string{"second", "minute"}})
	if err != nil {
		t.Fatal(err)
	}
	var served int
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++ }))
	const policy = `"second";q=2;w=1, "minute";q=3;w=60`
	steps := []httpStep{
		// The per-second rule has the least left: 1 (full again in 0.5 s), then 0 (1 s).
		{0, "192.0.2.1:1000", response{200, `"second";r=1;t=1`, policy, ""}},
		{0, "192.0.2.1:1000", response{200, `"second";r=0;t=1`, policy, ""}},
		// Denied by the per-second rule for 0.5 s, another client too: one policy for all.
		{0, "198.51.100.7:2000", response{429, `"second";r=0;t=1`, policy, "1"}},
		// At 1 s the minute rule has 0 left, until 1:00.
		{time.Second, "192.0.2.1:1000", response{200, `"minute";r=0;t=59`, policy, ""}},
		{2 * time.Second, "192.0.2.1:1000", response{429, `"minute";r=0;t=58`, policy, "58"}},
	}
	serveSteps(t, h, clock, steps)
	if served != 3 {
		t.Errorf("served %d requests, want the 3 admitted", served)
	}
}

// socialRules are posts (3 per 3 s: GCRA, T = 1 s, burst 3), likes (5 a second), friend
// adds (1 a day) and everything (4 a minute, a fixed window), named so in the fields.
var (
	socialRules = []librate.Config{
		{Algorithm: librate.GCRA, Limit: 3, Period: 3 * time.Second},
		{Algorithm: librate.GCRA, Limit: 5, Period: time.Second},
		{Algorithm: librate.FixedWindow, Limit: 1, Period: 24 * time.Hour},
		{Algorithm: librate.FixedWindow, Limit: 4, Period: time.Minute},
	}
	socialNames = []string{"post", "like", "friend", "all"}
)

// A cost per rule: every request a post, [1, 0, 0, 1], for all clients (a Policy) or per
// client (a KeyedPolicy). RateLimit reports the binding rule of those a post costs.
func TestPolicyMiddlewareCosts(t *testing.T) {
	policy := mustPolicy(t, socialRules...)
	var perKey []librate.KeyedRule
	for _, rule := range socialRules {
		perKey = append(perKey, librate.PerKeyRule(rule))
	}
	keyed := mustKeyedPolicy(t, 8, perKey...)
	for _, c := range []struct {
		name    string
		limiter librate.RequestLimiter
		// query asks each rule's state at now, taking nothing.
		query func(now time.Duration) (librate.PolicyDecision, error)
	}{
		{"Policy", policy, func(now time.Duration) (librate.PolicyDecision, error) { return policy.AcquireAt(0, now) }},
		{"KeyedPolicy", keyed, func(now time.Duration) (librate.PolicyDecision, error) { return keyed.AcquireAt("192.0.2.1", 0, now) }},
	} {
		clock := &fakeClock{}
		m, err := librate.NewMiddleware(c.limiter, librate.MiddlewareOptions{Now: clock.Now, RuleNames: socialNames, Costs: []int{1, 0, 0, 1}})
		if err != nil {
			t.Fatal(err)
		}
		served := 0
		h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++ }))
		const policy = `"post";q=3;w=3, "like";q=5;w=1, "friend";q=1;w=86400, "all";q=4;w=60`
		for _, s := range []struct {
			at   time.Duration
			want response
		}{
			// The post rule has 2 left (full again in 1 s), everything 3: the post rule
			// binds. The friend rule has 1 left, fewer, but a post costs it nothing.
			{0, response{200, `"post";r=2;t=1`, policy, ""}},
			{0, response{200, `"post";r=1;t=2`, policy, ""}},
			{0, response{200, `"post";r=0;t=3`, policy, ""}},
			// Denied by the post rule for 1 s; everything gave its unit back (1 left).
			{0, response{429, `"post";r=0;t=1`, policy, "1"}},
			// At 2 s the post rule has 2, takes 1 (TAT 4 s); everything 0 until 1:00.
			{2 * time.Second, response{200, `"all";r=0;t=58`, policy, ""}},
			// Denied by everything for 57 s; the post rule gave its unit back.
			{3 * time.Second, response{429, `"all";r=0;t=57`, policy, "57"}},
		} {
			clock.now = s.at
			if got := serve(h, "192.0.2.1:1000", nil); got != s.want {
				t.Errorf("%s at %v:\n got %+v\nwant %+v", c.name, s.at, got, s.want)
			}
		}
		if served != 4 {
			t.Errorf("%s: served %d requests, want the 4 admitted", c.name, served)
		}
		// The like and friend rules untouched, full; the post rule 2 of 3 at 3 s.
		d, err := c.query(3 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var remaining []uint64
		for _, rule := range d.Rules {
			remaining = append(remaining, rule.Remaining)
		}
		if !slices.Equal(remaining, []uint64{2, 5, 1, 0}) {
			t.Errorf("%s: remaining %v, want [2 5 1 0]", c.name, remaining)
		}
	}
}

// Rule names default to rule0, rule1, …; a closed policy fails closed like a limiter.
func TestPolicyMiddlewareDefaultsAndFailure(t *testing.T) {
	p := mustPolicy(t, librate.Config{Algorithm: librate.SlidingLog, Limit: 10, Period: time.Second},
		librate.Config{Algorithm: librate.GCRA, Limit: 4, Period: time.Minute})
	h := newPolicyMiddleware(t, p, librate.MiddlewareOptions{Now: func() time.Time { return librate.TimeAt(0) }})
	// 3 of the 4 a minute (T = 15 s) left, full again in 15 s.
	want := response{200, `"rule1";r=3;t=15`, `"rule0";q=10;w=1, "rule1";q=4;w=60`, ""}
	if got := serve(h, "192.0.2.1:1", nil); got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	p.Close()
	h = newPolicyMiddleware(t, p, librate.MiddlewareOptions{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if got := serve(h, "192.0.2.1:1", nil); got != (response{status: http.StatusServiceUnavailable}) {
		t.Errorf("closed policy: %+v, want 503", got)
	}
}

// A policy of one rule names it rule0, as the shared vectors and Python do
// (bindings/testdata/policy_headers.json, "one rule"); a limiter's one rule is "default".
func TestOneRulePolicyIsRule0(t *testing.T) {
	config := librate.Config{Limit: 1, Period: 2 * time.Second}
	now := librate.MiddlewareOptions{Now: func() time.Time { return librate.TimeAt(0) }}
	for _, c := range []struct {
		name    string
		limiter librate.RequestLimiter
		want    response
	}{
		// One of 1 taken: 0 left, full again in 2 s.
		{"Policy", mustPolicy(t, config), response{200, `"rule0";r=0;t=2`, `"rule0";q=1;w=2`, ""}},
		{"KeyedPolicy", mustKeyedPolicy(t, 4, librate.PerKeyRule(config)), response{200, `"rule0";r=0;t=2`, `"rule0";q=1;w=2`, ""}},
		{"Limiter", mustNew(t, config), response{200, `"default";r=0;t=2`, `"default";q=1;w=2`, ""}},
	} {
		h := newPolicyMiddleware(t, c.limiter, now)
		if got := serve(h, "192.0.2.1:1", nil); got != c.want {
			t.Errorf("%s: got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func newPolicyMiddleware(t *testing.T, limiter librate.RequestLimiter, options librate.MiddlewareOptions) http.Handler {
	t.Helper()
	m, err := librate.NewMiddleware(limiter, options)
	if err != nil {
		t.Fatal(err)
	}
	return m.Wrap(okHandler)
}

func TestNewPolicyMiddlewareErrors(t *testing.T) {
	policy := mustPolicy(t, twoRules...)
	cases := []struct {
		name    string
		limiter librate.RequestLimiter
		options librate.MiddlewareOptions
	}{
		{"nil limiter", nil, librate.MiddlewareOptions{}},
		{"a nil policy: no rules", (*librate.Policy)(nil), librate.MiddlewareOptions{}},
		{"one name for two rules", policy, librate.MiddlewareOptions{RuleNames: []string{"a"}}},
		{"three names for two rules", policy, librate.MiddlewareOptions{RuleNames: []string{"a", "b", "c"}}},
		{"a name not ASCII", policy, librate.MiddlewareOptions{RuleNames: []string{"a", "naïve"}}},
		{"a Policy name", policy, librate.MiddlewareOptions{Policy: "api"}},
		{"one cost for two rules", policy, librate.MiddlewareOptions{Costs: []int{1}}},
		{"three costs for two rules", policy, librate.MiddlewareOptions{Costs: []int{1, 1, 1}}},
		{"a cost above the most its rule admits at once", policy, librate.MiddlewareOptions{Costs: []int{3, 0}}},
		{"a negative cost", policy, librate.MiddlewareOptions{Costs: []int{1, -1}}},
		{"every cost 0", policy, librate.MiddlewareOptions{Costs: []int{0, 0}}},
	}
	for _, c := range cases {
		if _, err := librate.NewMiddleware(c.limiter, c.options); !errors.Is(err, librate.ErrInvalidArgument) {
			t.Errorf("%s: %v; want ErrInvalidArgument", c.name, err)
		}
	}
	// A limiter is a policy of one rule: one name and one cost, no more.
	limiter := mustGCRA(t, 1, time.Second, 0)
	for _, c := range []struct {
		options librate.MiddlewareOptions
		want    string
	}{
		{librate.MiddlewareOptions{RuleNames: []string{"a", "b"}}, "librate: NewMiddleware: 2 rule names for 1 rules: invalid argument"},
		{librate.MiddlewareOptions{Costs: []int{1, 1}}, "librate: NewMiddleware: Costs has 2 costs for 1 rules: invalid argument"},
		{librate.MiddlewareOptions{Policy: "a", RuleNames: []string{"a"}}, "librate: NewMiddleware: Policy and RuleNames both name the rule: invalid argument"},
		{librate.MiddlewareOptions{RuleNames: []string{"a"}, Costs: []int{1}}, ""},
	} {
		_, err := librate.NewMiddleware(limiter, c.options)
		if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want || !errors.Is(err, librate.ErrInvalidArgument)) {
			t.Errorf("%+v: %v; want %q", c.options, err, c.want)
		}
	}
	// Each cost up to the most its own rule admits at once: 2 of the GCRA rule's burst of 2, 3 of 3.
	if _, err := librate.NewMiddleware(policy, librate.MiddlewareOptions{Costs: []int{2, 3}}); err != nil {
		t.Errorf("Costs at the capacities: %v", err)
	}
}

// policyVectors is bindings/testdata/policy_headers.json: a policy's rules, each rule's
// decision, and the fields both middlewares (this one and Python's) must write for them.
type policyVectors struct {
	Cases []struct {
		What  string
		Names []string
		// Costs are the request's, one per rule; nil: 1 of every rule.
		Costs []int
		Rules []struct {
			Limit    uint64
			PeriodNs uint64 `json:"period_ns"`
			Burst    uint64
		}
		Decisions []struct {
			Allowed      bool
			Remaining    uint64
			RetryAfterNs uint64 `json:"retry_after_ns"`
			ResetAfterNs uint64 `json:"reset_after_ns"`
		}
		DeniedBy          *int `json:"denied_by"`
		Policy, RateLimit string
		RetryAfter        *string `json:"retry_after"`
	}
}

// vectorPolicy answers every request with one fixed decision.
type vectorPolicy struct {
	rules    []librate.Config
	decision librate.PolicyDecision
}

func (v vectorPolicy) LimitRequest(context.Context, string, time.Time, []int) (librate.PolicyDecision, error) {
	return v.decision, nil
}

func (v vectorPolicy) Rules() []librate.Config { return v.rules }

// IsPolicy: the vectors are a policy's, whose one rule is rule0.
func (v vectorPolicy) IsPolicy() {}

// The Python and Go middlewares write the same fields for the same policy decision.
func TestPolicyMiddlewareHeaderVectors(t *testing.T) {
	var vectors policyVectors
	readVectors(t, "policy_headers.json", &vectors, func() int { return len(vectors.Cases) })
	for _, c := range vectors.Cases {
		var v vectorPolicy
		// The policy's decision combines the rules' (docs/policies.md).
		combined := librate.PolicyDecision{Decision: librate.Decision{Allowed: c.DeniedBy == nil, Remaining: math.MaxUint64}, DeniedBy: -1}
		if c.DeniedBy != nil {
			combined.DeniedBy = *c.DeniedBy
		}
		for i, rule := range c.Rules {
			d := c.Decisions[i]
			v.rules = append(v.rules, librate.Config{Limit: rule.Limit, Period: time.Duration(rule.PeriodNs), Burst: rule.Burst})
			own := librate.Decision{Allowed: d.Allowed, Remaining: d.Remaining,
				RetryAfter: fromC(d.RetryAfterNs), ResetAfter: fromC(d.ResetAfterNs)}
			combined.Rules = append(combined.Rules, own)
			if c.Costs != nil && c.Costs[i] == 0 {
				continue // a rule the request does not cost only reports
			}
			combined.Remaining = min(combined.Remaining, own.Remaining)
			combined.RetryAfter = max(combined.RetryAfter, own.RetryAfter)
			combined.ResetAfter = max(combined.ResetAfter, own.ResetAfter)
		}
		v.decision = combined
		h := newPolicyMiddleware(t, v, librate.MiddlewareOptions{RuleNames: c.Names, Costs: c.Costs})
		checkVector(t, h, c.What, c.Policy, c.RateLimit, c.RetryAfter)
	}
}

// A RequestLimiter that decides another number of rules than it has is a failure of the
// limiter, not a crash.
func TestPolicyMiddlewareRulesMismatch(t *testing.T) {
	v := vectorPolicy{rules: twoRules, decision: librate.PolicyDecision{DeniedBy: -1,
		Decision: librate.Decision{Allowed: true}, Rules: []librate.Decision{{Allowed: true}}}}
	h := newPolicyMiddleware(t, v, librate.MiddlewareOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if got := serve(h, "192.0.2.1:1", nil); got != (response{status: http.StatusServiceUnavailable}) {
		t.Errorf("got %+v, want 503", got)
	}
}
