package librateredis_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// Leased limiters behind the middleware (docs/leases.md, behind the middleware).
//
// A LeasedLimiter is one global limit for every request, decided in process. A holder of
// 1,000 a second leased 2 s at a time (renewed every 500 ms) denies while it has no
// answer (the fallback, Deny, whose RetryAfter is the 500 ms renewal interval:
// Retry-After 1) and while the rule, new to Redis, is quiet for its first lease.
// Enforced, that is a 429 naming the rule; in shadow the request is served, named and
// logged as a would-be denial.
func TestLeasedLimiterBehindTheMiddleware(t *testing.T) {
	client := startServer(t).client(t)
	unanswered := leasedBy(t, client, "mw:{unanswered}", "a", 2*time.Second)
	quiet := leasedBy(t, client, "mw:{quiet}", "a", 2*time.Second)
	if state, err := quiet.Renew(ctx); err != nil || state != librate.Unshared {
		t.Fatalf("renewal of a rule new to Redis: %v, %v; want Unshared", state, err)
	}
	for _, l := range []*librateredis.LeasedLimiter{unanswered, quiet} {
		if got := l.Rules(); len(got) != 1 || got[0] != thousandASecond {
			t.Errorf("%s: rules %+v, want [%+v]", l.Key(), got, thousandASecond)
		}
		for _, shadow := range []bool{false, true} {
			retry := lastOf(t, l, shadow, 1)
			if l == unanswered && !shadow && retry != "1" {
				t.Errorf("%s: Retry-After %q, want 1", l.Key(), retry)
			}
		}
	}
}

// A KeyedLeasedLimiter is a limit per key: a key hot nowhere is decided in Redis, from the
// whole rule, full at first. Of 2 a minute in a fixed window, the third request of a
// client is denied, or in shadow served.
func TestKeyedLeasedLimiterBehindTheMiddleware(t *testing.T) {
	client := startServer(t).client(t)
	twoAMinute := librate.Config{Algorithm: librate.FixedWindow, Limit: 2, Period: time.Minute}
	rule := librate.LeaseRule{Config: twoAMinute, Lease: 2 * time.Second}
	for _, shadow := range []bool{false, true} {
		prefix := "mw:keyed:" + map[bool]string{false: "enforced:", true: "shadow:"}[shadow]
		// No key asks for 1,000,000 units a round: none is leased.
		l := keyedBy(t, client, prefix, rule, librateredis.KeyedLeaseOptions{Hot: 1_000_000, Capacity: 1})
		if got := l.Rules(); len(got) != 1 || got[0] != twoAMinute {
			t.Errorf("rules %+v, want [%+v]", got, twoAMinute)
		}
		// Windows are aligned on the server's clock: the window's end is 1 to 60 s away.
		retry := lastOf(t, l, shadow, 3)
		if seconds, err := strconv.Atoi(retry); !shadow && (err != nil || seconds < 1 || seconds > 60) {
			t.Errorf("Retry-After %q, want the window's end, 1 to 60", retry)
		}
	}
}

// lastOf sends requests GETs through the middleware over l (in shadow or not), checks
// that the last is denied by rule 0, "default" (a 429 naming it, or in shadow served
// and named) and logged so, and returns its Retry-After.
func lastOf(t *testing.T, l librate.RequestLimiter, shadow bool, requests int) string {
	t.Helper()
	var log bytes.Buffer
	m, err := librate.NewMiddleware(l, librate.MiddlewareOptions{Shadow: shadow,
		RuleHeader: "RateLimit-Rule", Logger: slog.New(slog.NewTextHandler(&log, nil))})
	h := okBehind(t, m, err)
	var w *httptest.ResponseRecorder
	for range requests {
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	}
	message := `msg="librate: a rule denied the request" rule=0 rule_name=default shadow=false`
	want := http.StatusTooManyRequests
	if shadow {
		message = `msg="librate: a rule would deny the request (shadow)" rule=0 rule_name=default shadow=true`
		want = http.StatusOK
	}
	status, rule, retry := w.Code, w.Header().Get("RateLimit-Rule"), w.Header().Get("Retry-After")
	if status != want || rule != `"default"` || (shadow && retry != "") {
		t.Errorf("shadow %v: %d, rule %q, Retry-After %q; want %d, rule %q", shadow, status, rule, retry, want, `"default"`)
	}
	if strings.Count(log.String(), "msg=") != 1 || !strings.Contains(log.String(), message) {
		t.Errorf("shadow %v: log %q, want the one record %q", shadow, log.String(), message)
	}
	return retry
}
