package main

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"librate/examples/go/internal/exampletest"
)

// The service over real HTTP on 127.0.0.1: 5 requests pass, the 6th gets 429, and
// another address has a limit of its own.
func TestPerIPLimit(t *testing.T) {
	handler, perIP, err := newHandler(5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer perIP.Close()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := &http.Server{Handler: handler}
	go server.Serve(listener)
	defer server.Close()
	url := "http://" + listener.Addr().String() + "/"

	// 5 per 60 s, bursts of 5: T = 12 s. The k-th request leaves 5 - k, as long as the
	// requests take less than T.
	for left := 4; left >= 0; left-- {
		res := exampletest.Get(t, url, "127.0.0.1")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("request with %d left: %s", left, res.Status)
		}
		if got := res.Header.Get("RateLimit-Policy"); got != `"default";q=5;w=60` {
			t.Errorf("RateLimit-Policy %q", got)
		}
		if got, want := res.Header.Get("RateLimit"), `"default";r=`+strconv.Itoa(left)+";t="; !strings.HasPrefix(got, want) {
			t.Errorf("RateLimit %q, want %s…", got, want)
		}
	}
	denied := exampletest.Get(t, url, "127.0.0.1")
	retry, _ := strconv.Atoi(denied.Header.Get("Retry-After"))
	// The next unit is T = 12 s after the first, minus what has passed since.
	if denied.StatusCode != http.StatusTooManyRequests || retry < 1 || retry > 12 {
		t.Errorf("6th request: %s, Retry-After %q", denied.Status, denied.Header.Get("Retry-After"))
	}
	if other := exampletest.Get(t, url, "127.0.0.2"); other.StatusCode != http.StatusOK {
		t.Errorf("another address: %s", other.Status)
	}
}
