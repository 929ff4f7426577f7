package librateprometheus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	librate "github.com/librate/librate/bindings/go"
	librateprometheus "github.com/librate/librate/bindings/go/prometheus"
)

const head = `# HELP ratelimit_requests_total Requests decided by a rate limiter, by result and by the rule that denied
# TYPE ratelimit_requests_total counter
`

var twoAMinute = librate.Config{Algorithm: librate.FixedWindow, Limit: 2, Period: time.Minute}

// must is v, for a constructor that cannot fail on these arguments.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A limiter, a keyed table and a policy, counted from Add on; values by hand as in the
// librate package's counts tests.
func TestCollector(t *testing.T) {
	limiter := must(librate.New(twoAMinute))
	table := must(librate.NewKeyed(librate.Config{Algorithm: librate.FixedWindow, Limit: 1, Period: time.Minute}, 1))
	policy := must(librate.NewPolicy(librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: time.Second},
		librate.Config{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Minute}))
	c := librateprometheus.NewCollector()
	for _, err := range []error{
		c.Add("one", limiter),
		c.Add("per_key", table),
		c.Add("site", policy, "second", "minute"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// 2 admitted and 1 denied of 2 a minute.
	for range 3 {
		limiter.AcquireAt(1, 0)
	}
	// a admitted, a denied, b admitted, c refused: the table's 2 slots hold a and b.
	for _, key := range []string{"a", "a", "b", "c"} {
		table.AcquireAt(key, 1, 0)
	}
	// 3 admitted; the third at 0 denied by "second", the one at 2 s by "minute".
	for _, at := range []time.Duration{0, 0, 0, time.Second, 2 * time.Second} {
		policy.AcquireAt(1, at)
	}
	want := head + `ratelimit_requests_total{limiter="one",result="admitted",rule=""} 2
ratelimit_requests_total{limiter="one",result="denied",rule=""} 1
ratelimit_requests_total{limiter="one",result="table_full",rule=""} 0
ratelimit_requests_total{limiter="per_key",result="admitted",rule=""} 2
ratelimit_requests_total{limiter="per_key",result="denied",rule=""} 1
ratelimit_requests_total{limiter="per_key",result="table_full",rule=""} 1
ratelimit_requests_total{limiter="site",result="admitted",rule=""} 3
ratelimit_requests_total{limiter="site",result="denied",rule="minute"} 1
ratelimit_requests_total{limiter="site",result="denied",rule="second"} 1
ratelimit_requests_total{limiter="site",result="shadow_denied",rule="minute"} 0
ratelimit_requests_total{limiter="site",result="shadow_denied",rule="second"} 0
ratelimit_requests_total{limiter="site",result="table_full",rule=""} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// A policy's rules default to their indices, and a policy of one rule not named is
// reported as a limiter is; a closed limiter has no samples; Remove takes a limiter out.
func TestCollectorDefaultsClosedAndRemove(t *testing.T) {
	policy := must(librate.NewKeyedPolicy(4,
		librate.KeyedRule{Config: librate.Config{Algorithm: librate.FixedWindow, Limit: 1, Period: time.Minute}, Scope: librate.PerKey},
		librate.KeyedRule{Config: librate.Config{Algorithm: librate.FixedWindow, Limit: 10, Period: time.Minute}, Scope: librate.Global}))
	single := must(librate.NewPolicy(twoAMinute))
	gone := must(librate.New(twoAMinute))
	c := librateprometheus.NewCollector()
	for _, err := range []error{c.Add("keyed_policy", policy), c.Add("single", single), c.Add("gone", gone)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	policy.AcquireAt("a", 1, 0)
	policy.AcquireAt("a", 1, 0)
	gone.Close()
	want := head + `ratelimit_requests_total{limiter="keyed_policy",result="admitted",rule=""} 1
ratelimit_requests_total{limiter="keyed_policy",result="denied",rule="0"} 1
ratelimit_requests_total{limiter="keyed_policy",result="denied",rule="1"} 0
ratelimit_requests_total{limiter="keyed_policy",result="shadow_denied",rule="0"} 0
ratelimit_requests_total{limiter="keyed_policy",result="shadow_denied",rule="1"} 0
ratelimit_requests_total{limiter="keyed_policy",result="table_full",rule=""} 0
ratelimit_requests_total{limiter="single",result="admitted",rule=""} 0
ratelimit_requests_total{limiter="single",result="denied",rule=""} 0
ratelimit_requests_total{limiter="single",result="table_full",rule=""} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	c.Remove("keyed_policy")
	c.Remove("single")
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("after Remove: %d samples, want 0", n)
	}
}

func TestAddChecks(t *testing.T) {
	c := librateprometheus.NewCollector()
	policy := must(librate.NewPolicy(twoAMinute, twoAMinute))
	limiter := must(librate.New(twoAMinute))
	for _, c := range []struct {
		err  error
		want string
	}{
		{c.Add("p", policy, "second"), "librateprometheus: p: 1 rule names for 2 rules"},
		{c.Add("l", limiter, "x"), "librateprometheus: l: rule names label a policy's rules; a limiter has one rule"},
		{c.Add("p", policy), ""},
		{c.Add("p", policy), `librateprometheus: a limiter named "p" is exported already`},
	} {
		if got := errorText(c.err); got != c.want {
			t.Errorf("error %q, want %q", got, c.want)
		}
	}
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
