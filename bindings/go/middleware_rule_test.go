package librate_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// twoAMinute is 2 requests a minute for all, in a fixed window.
var twoAMinute = librate.Config{Algorithm: librate.FixedWindow, Limit: 2, Period: time.Minute}

// ruleAnswer is what a test of the rule field checks of one response.
type ruleAnswer struct {
	status                     int
	rule, rateLimit, retry, ok string
}

// serveRule serves one GET through h and returns its status, the RateLimit-Rule,
// RateLimit and Retry-After fields and the body.
func serveRule(h http.Handler) ruleAnswer {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "192.0.2.1:1000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	header := rec.Result().Header
	return ruleAnswer{rec.Code, header.Get("RateLimit-Rule"), header.Get("RateLimit"), header.Get("Retry-After"), rec.Body.String()}
}

// textLog is a logger writing slog's text format, without times, to the returned buffer.
func textLog() (*slog.Logger, *bytes.Buffer) {
	var log bytes.Buffer
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	return slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{ReplaceAttr: noTime})), &log
}

// The third request of 2 a minute is denied by rule 0: the 429 names it in the field
// the options ask for, and the log at Info names it; in shadow the request is served,
// without the RateLimit fields, named and logged as a would-be denial.
func TestMiddlewareNamesTheRuleThatDenied(t *testing.T) {
	for _, c := range []struct {
		shadow bool
		third  ruleAnswer
		log    string
	}{
		{false, ruleAnswer{429, `"api"`, `"api";r=0;t=60`, "60", "too many requests\n"},
			"level=INFO msg=\"librate: a rule denied the request\" rule=0 rule_name=api shadow=false\n"},
		{true, ruleAnswer{200, `"api"`, "", "", "ok"},
			"level=INFO msg=\"librate: a rule would deny the request (shadow)\" rule=0 rule_name=api shadow=true\n"},
	} {
		limiter, err := librate.New(twoAMinute)
		if err != nil {
			t.Fatal(err)
		}
		logger, log := textLog()
		clock := &fakeClock{}
		h := newMiddleware(t, limiter, librate.MiddlewareOptions{Now: clock.Now, Policy: "api",
			RuleHeader: "ratelimit-rule", Shadow: c.shadow, Logger: logger})
		first := ruleAnswer{200, "", `"api";r=1;t=60`, "", "ok"}
		if c.shadow {
			first.rateLimit = ""
		}
		if got := serveRule(h); got != first {
			t.Errorf("shadow %v, first: %+v, want %+v", c.shadow, got, first)
		}
		serveRule(h)
		if got := serveRule(h); got != c.third {
			t.Errorf("shadow %v, third: %+v, want %+v", c.shadow, got, c.third)
		}
		if log.String() != c.log {
			t.Errorf("shadow %v: log %q, want %q", c.shadow, log.String(), c.log)
		}
	}
}

// Over a policy of 2 a second and 2 a minute, the third request at 0 is denied by both:
// the field and the log name the first, "second" (the rule the policy's counts charge);
// RateLimit reports the longest wait, the minute's.
func TestMiddlewareNamesAPolicysFirstDenyingRule(t *testing.T) {
	p := mustPolicy(t, librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: time.Second}, twoAMinute)
	logger, log := textLog()
	clock := &fakeClock{}
	h := newMiddleware(t, p, librate.MiddlewareOptions{Now: clock.Now, RuleNames: []string{"second", "minute"},
		RuleHeader: "RateLimit-Rule", Logger: logger})
	serveRule(h)
	serveRule(h)
	want := ruleAnswer{429, `"second"`, `"minute";r=0;t=60`, "60", "too many requests\n"}
	if got := serveRule(h); got != want {
		t.Errorf("third: %+v, want %+v", got, want)
	}
	if want := "level=INFO msg=\"librate: a rule denied the request\" rule=0 rule_name=second shadow=false\n"; log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
}

// In shadow a limiter that cannot decide (closed) refuses nothing: the request is served.
func TestShadowServesWhatTheLimiterCannotDecide(t *testing.T) {
	closed, err := librate.New(twoAMinute)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	logger, _ := textLog()
	h := newMiddleware(t, closed, librate.MiddlewareOptions{Shadow: true, Logger: logger})
	if got := serveRule(h); got != (ruleAnswer{status: 200, ok: "ok"}) {
		t.Errorf("%+v, want 200 ok", got)
	}
}

func TestRuleHeaderMustBeAToken(t *testing.T) {
	limiter, err := librate.New(twoAMinute)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Rate Limit", "Rule:", "Régle"} {
		_, err := librate.NewMiddleware(limiter, librate.MiddlewareOptions{RuleHeader: name})
		if !errors.Is(err, librate.ErrInvalidArgument) {
			t.Errorf("RuleHeader %q: %v, want ErrInvalidArgument", name, err)
		}
	}
}

// 10 a second in force, 2 a minute in shadow (docs/policies.md#shadow-rules): every
// request passes; RateLimit reports the enforced rule alone (T = 100 ms: k requests at
// 0 leave 10 - k, full again in k × 100 ms, 1 s rounded up), though the shadow rule has
// less left; the third, which the shadow rule would deny, is logged and named.
func TestMiddlewareShadowRuleNeverBinds(t *testing.T) {
	p := mustPolicy(t, librate.Config{Algorithm: librate.GCRA, Limit: 10, Period: time.Second}, twoAMinute)
	if err := p.SetShadow(1); err != nil {
		t.Fatal(err)
	}
	logger, log := textLog()
	clock := &fakeClock{}
	h := newMiddleware(t, p, librate.MiddlewareOptions{Now: clock.Now, RuleNames: []string{"second", "minute"},
		RuleHeader: "RateLimit-Rule", Logger: logger})
	for i, want := range []ruleAnswer{
		{200, "", `"second";r=9;t=1`, "", "ok"},
		{200, "", `"second";r=8;t=1`, "", "ok"},
		{200, `"minute"`, `"second";r=7;t=1`, "", "ok"},
	} {
		if got := serveRule(h); got != want {
			t.Errorf("request %d: %+v, want %+v", i, got, want)
		}
	}
	if want := "level=INFO msg=\"librate: a shadow rule would deny the request\" rule=1 rule_name=minute shadow=true\n"; log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
}

// A policy whose rules are all shadow admits every request: no rule binds, so no
// RateLimit fields; the second request, which the shadow rule would deny, is named.
func TestMiddlewarePolicyOfShadowRulesAlone(t *testing.T) {
	p := mustPolicy(t, librate.Config{Algorithm: librate.FixedWindow, Limit: 1, Period: time.Minute})
	if err := p.SetShadow(0); err != nil {
		t.Fatal(err)
	}
	logger, _ := textLog()
	clock := &fakeClock{}
	h := newMiddleware(t, p, librate.MiddlewareOptions{Now: clock.Now, RuleHeader: "RateLimit-Rule", Logger: logger})
	for i, want := range []ruleAnswer{{200, "", "", "", "ok"}, {200, `"rule0"`, "", "", "ok"}} {
		if got := serveRule(h); got != want {
			t.Errorf("request %d: %+v, want %+v", i, got, want)
		}
	}
}
