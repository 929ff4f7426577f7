package main

import (
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// The service over real HTTP on 127.0.0.1: four requests (3 a minute in force: the 4th
// denied by "minute"; 2 a minute in shadow: the 3rd and 4th would be denied, and are
// named in X-Would-Deny), then /metrics, scraped, holds exactly those counts.
func TestMetricsAfterFourRequests(t *testing.T) {
	s, err := newService()
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := &http.Server{Handler: s}
	go server.Serve(listener)
	defer server.Close()
	base := "http://" + listener.Addr().String()

	var statuses []int
	var named []string
	for range 4 {
		res := get(t, base+"/")
		statuses = append(statuses, res.StatusCode)
		named = append(named, res.Header.Get("X-Would-Deny"))
	}
	if want := []int{200, 200, 200, 429}; !reflect.DeepEqual(statuses, want) {
		t.Errorf("statuses %v, want %v", statuses, want)
	}
	if want := []string{"", "", `"proposed"`, `"proposed"`}; !reflect.DeepEqual(named, want) {
		t.Errorf("X-Would-Deny %q, want %q", named, want)
	}
	res := get(t, base+"/metrics")
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "ratelimit_requests_total") {
			lines = append(lines, line)
		}
	}
	// client_golang writes the samples sorted by their labels.
	want := []string{
		`ratelimit_requests_total{limiter="api",result="admitted",rule=""} 3`,
		`ratelimit_requests_total{limiter="api",result="denied",rule="all"} 0`,
		`ratelimit_requests_total{limiter="api",result="denied",rule="minute"} 1`,
		`ratelimit_requests_total{limiter="api",result="shadow_denied",rule="all"} 0`,
		`ratelimit_requests_total{limiter="api",result="shadow_denied",rule="minute"} 0`,
		`ratelimit_requests_total{limiter="api",result="table_full",rule=""} 0`,
		`ratelimit_requests_total{limiter="proposed",result="admitted",rule=""} 2`,
		`ratelimit_requests_total{limiter="proposed",result="denied",rule=""} 2`,
		`ratelimit_requests_total{limiter="proposed",result="table_full",rule=""} 0`,
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("scraped:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// get is one GET of url, its body left to read.
func get(t *testing.T, url string) *http.Response {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}
