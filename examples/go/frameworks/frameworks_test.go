package frameworks_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
	"librate/examples/go/frameworks"
)

// Each framework serves the same exchange behind one limit per client address, 1 an
// hour: the first request gets "hello" and its RateLimit fields, the second a 429 with
// Retry-After, another client "hello" again.
func TestFrameworks(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(*librate.Middleware) http.Handler
	}{
		{"net/http", frameworks.NetHTTP},
		{"chi", frameworks.Chi},
		{"gin", frameworks.Gin},
		{"echo", frameworks.Echo},
	} {
		t.Run(c.name, func(t *testing.T) {
			perClient, err := librate.NewKeyed(librate.Config{Limit: 1, Period: time.Hour}, 100)
			if err != nil {
				t.Fatal(err)
			}
			defer perClient.Close()
			m, err := librate.NewMiddleware(perClient, librate.MiddlewareOptions{Policy: "hourly"})
			if err != nil {
				t.Fatal(err)
			}
			h := c.build(m)
			for i, want := range []answer{
				{"192.0.2.1:1", 200, "hello\n", `"hourly";r=0;t=3600`, ""},
				{"192.0.2.1:2", 429, "too many requests\n", `"hourly";r=0;t=3600`, "3600"},
				{"198.51.100.7:1", 200, "hello\n", `"hourly";r=0;t=3600`, ""},
			} {
				if got := serve(h, want.addr); got != want {
					t.Errorf("request %d:\n got %+v\nwant %+v", i, got, want)
				}
			}
		})
	}
}

// answer is what a test checks of one response to GET /hello from addr.
type answer struct {
	addr                        string
	status                      int
	body, rateLimit, retryAfter string
}

func serve(h http.Handler, addr string) answer {
	r := httptest.NewRequest(http.MethodGet, "/hello", nil)
	r.RemoteAddr = addr
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return answer{addr, w.Code, w.Body.String(), w.Header().Get("RateLimit"), w.Header().Get("Retry-After")}
}
