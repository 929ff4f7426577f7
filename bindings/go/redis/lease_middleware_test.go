package librateredis_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// A LeasedLimiter behind the middleware (docs/leases.md, behind the middleware): one
// global limit for every request, decided in process. A holder of 1,000 a second leased
// 2 s at a time (renewed every 500 ms) denies while it has no answer (the fallback,
// Deny, whose RetryAfter is the 500 ms renewal interval: Retry-After 1) and while the
// rule, new to Redis, is quiet for its first lease. Enforced, that is a 429 naming the
// rule; in shadow the request is served, named and logged as a would-be denial.
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
			var log bytes.Buffer
			m, err := librate.NewMiddleware(l, librate.MiddlewareOptions{Shadow: shadow,
				RuleHeader: "RateLimit-Rule", Logger: slog.New(slog.NewTextHandler(&log, nil))})
			h := okBehind(t, m, err)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			status, rule, retry := w.Code, w.Header().Get("RateLimit-Rule"), w.Header().Get("Retry-After")
			message := `msg="librate: a rule denied the request" rule=0 rule_name=default shadow=false`
			wantStatus := http.StatusTooManyRequests
			if shadow {
				message = `msg="librate: a rule would deny the request (shadow)" rule=0 rule_name=default shadow=true`
				wantStatus = http.StatusOK
			}
			if status != wantStatus || rule != `"default"` {
				t.Errorf("%s, shadow %v: %d, rule %q; want %d, rule %q", l.Key(), shadow, status, rule, wantStatus, `"default"`)
			}
			if l == unanswered && !shadow && retry != "1" {
				t.Errorf("%s: Retry-After %q, want 1", l.Key(), retry)
			}
			if shadow && retry != "" {
				t.Errorf("%s in shadow: Retry-After %q, want none", l.Key(), retry)
			}
			if !strings.Contains(log.String(), message) {
				t.Errorf("%s, shadow %v: log %q, want %q", l.Key(), shadow, log.String(), message)
			}
		}
	}
}
