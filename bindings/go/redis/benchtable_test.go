package librateredis_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchRounds is how many rounds TestRedisBenchTable counts, after its warm-up round; 0,
// the default, skips it.
var benchRounds = flag.Int("redisbench.rounds", 0, "run TestRedisBenchTable: this many rounds of BenchmarkRedis's cases, after a warm-up round")

// TestRedisBenchTable runs BenchmarkRedis's cases round after round on one server (each
// case for -test.benchtime, 1 s by default, as testing.Benchmark runs it; the
// contenders of a shape one after the other, in an order turning from round to round)
// and prints Markdown tables: medians over the rounds, and ratios taken within each
// round, with their range. A warm-up round, every case once in round 1's order, comes
// first and is not counted: otherwise the process's first case, the same contender's
// in every run, would meet what the first calls meet alone (the Go runtime's heap and
// GC pacing still growing, caches cold, on client and server) and carry it into its
// ratios. It only runs when asked:
//
//	go test -v -run '^TestRedisBenchTable$' -timeout 30m ./redis -args -redisbench.rounds 5
func TestRedisBenchTable(t *testing.T) {
	if *benchRounds <= 0 {
		t.Skip("a benchmark: run it with -args -redisbench.rounds N")
	}
	loadBefore := loadAverage()
	s := startServer(t)
	cases := make([][]*benchCase, len(benchShapes))
	for i, shape := range benchShapes {
		for _, contender := range benchContenders {
			if shape.batch == 1 || contender.batches {
				c := newBenchCase(t, s.addr, shape, contender)
				t.Cleanup(func() { c.client.Close() })
				cases[i] = append(cases[i], c)
			}
		}
	}
	// results[shape][contender][round]
	results := make([][][]testing.BenchmarkResult, len(cases))
	for i := range cases {
		results[i] = make([][]testing.BenchmarkResult, len(cases[i]))
	}
	// Round 0 is the warm-up.
	for round := range *benchRounds + 1 {
		for i, shapeCases := range cases {
			for k := range shapeCases {
				j := (k + max(round-1, 0)) % len(shapeCases)
				c := shapeCases[j]
				r := testing.Benchmark(c.run)
				if c.failure != nil || r.N == 0 {
					t.Fatalf("round %d, %s/%s: %v", round, c.shape.name, c.contender.name, c.failure)
				}
				t.Logf("round %d, %s/%s: %v", round, c.shape.name, c.contender.name, r)
				if round > 0 {
					results[i][j] = append(results[i][j], r)
				}
			}
		}
	}
	printBenchTables(t, s, cases, results, loadBefore)
}

// loadAverage is the last minute's load average, from /proc/loadavg ("?" without it).
func loadAverage() string {
	text, err := os.ReadFile("/proc/loadavg")
	if fields := strings.Fields(string(text)); err == nil && len(fields) > 0 {
		return fields[0]
	}
	return "?"
}

// moduleVersion is the version go.mod requires of the module at path ("?" if none): a
// test binary's debug.BuildInfo lists no dependencies.
func moduleVersion(path string) string {
	text, _ := os.ReadFile("../go.mod")
	for _, line := range strings.Split(string(text), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == path {
			return fields[1]
		}
	}
	return "?"
}

// metric is one metric of each round's result.
func metric(rounds []testing.BenchmarkResult, unit string) []float64 {
	values := make([]float64, len(rounds))
	for i, r := range rounds {
		values[i] = r.Extra[unit]
	}
	return values
}

// ratios are a[i] / b[i], round by round.
func ratios(a, b []float64) []float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = a[i] / b[i]
	}
	return r
}

func median(values []float64) float64 {
	sorted := slices.Sorted(slices.Values(values))
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// spread is the median of ratios and their range: "0.93 (0.90–0.97)".
func spread(ratios []float64) string {
	return fmt.Sprintf("%.2f (%.2f–%.2f)", median(ratios), slices.Min(ratios), slices.Max(ratios))
}

// thousands is x rounded, with commas between thousands: 18561.2 is "18,561".
func thousands(x float64) string {
	digits := fmt.Sprintf("%.0f", x)
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

// micros is the median of ns values, in µs.
func micros(ns []float64) string {
	switch m := median(ns) / 1000; {
	case m < 1:
		return fmt.Sprintf("%.2f", m)
	case m < 100:
		return fmt.Sprintf("%.1f", m)
	default:
		return thousands(m)
	}
}

func printBenchTables(t *testing.T, s *server, cases [][]*benchCase, results [][][]testing.BenchmarkResult, loadBefore string) {
	client := s.client(t)
	version := "?"
	if info, err := client.InfoMap(ctx, "server").Result(); err == nil {
		version = info["Server"]["redis_version"]
	}
	cpu := "?"
	if text, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(text), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n%s; %s, GOMAXPROCS %d, %d CPUs (%s); redis-server %s on 127.0.0.1 (TCP); "+
		"go-redis %s, redis_rate %s; GCRA, %d a %v a key, burst %d, %d keys; %d rounds of %s a case after a warm-up round; "+
		"load average %s before, %s after\n\n",
		time.Now().Format("2006-01-02"), runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), cpu,
		version, moduleVersion("github.com/redis/go-redis/v9"), moduleVersion("github.com/go-redis/redis_rate/v10"),
		benchConfig.Limit, benchConfig.Period, benchConfig.Burst, benchKeys,
		*benchRounds, flag.Lookup("test.benchtime").Value, loadBefore, loadAverage())
	out.WriteString("| connections | keys a call | librate decisions/s | redis_rate decisions/s | librate / redis_rate | " +
		"librate p50 / p99 µs | redis_rate p50 / p99 µs | server µs a script call, librate / redis_rate |\n")
	out.WriteString("|---|---|---:|---:|---|---:|---:|---:|\n")
	// perSecond[shape][contender]: each round's decisions/s.
	perSecond := make([][][]float64, len(cases))
	for i, shapeCases := range cases {
		shape := shapeCases[0].shape
		for j := range shapeCases {
			perSecond[i] = append(perSecond[i], metric(results[i][j], "decisions/s"))
		}
		lr, rr := results[i][0], results[i][1]
		fmt.Fprintf(&out, "| %d | %d | %s | %s | %s | %s / %s | %s / %s | %s / %s |\n",
			shape.conns, shape.batch, thousands(median(perSecond[i][0])), thousands(median(perSecond[i][1])),
			spread(ratios(perSecond[i][0], perSecond[i][1])),
			micros(metric(lr, "p50-ns")), micros(metric(lr, "p99-ns")),
			micros(metric(rr, "p50-ns")), micros(metric(rr, "p99-ns")),
			micros(metric(lr, "server-ns/call")), micros(metric(rr, "server-ns/call")))
	}
	out.WriteString("\n| connections | librate: batch / single decisions/s | redis_rate: batch / single decisions/s |\n|---|---|---|\n")
	// benchShapes pairs each single shape with the batch shape after it.
	for i := 0; i+1 < len(cases); i += 2 {
		fmt.Fprintf(&out, "| %d | %s | %s |\n", cases[i][0].shape.conns,
			spread(ratios(perSecond[i+1][0], perSecond[i][0])), spread(ratios(perSecond[i+1][1], perSecond[i][1])))
	}
	out.WriteString("\n| one key a call | connections | calls/s | p50 / p99 µs | server µs a call | client CPU µs a call |\n" +
		"|---|---|---:|---:|---:|---:|\n")
	for i, shapeCases := range cases {
		for j, c := range shapeCases {
			if c.shape.batch == 1 {
				fmt.Fprintf(&out, "| %s | %d | %s | %s / %s | %s | %s |\n", c.contender.name, c.shape.conns,
					thousands(median(perSecond[i][j])), micros(metric(results[i][j], "p50-ns")),
					micros(metric(results[i][j], "p99-ns")), micros(metric(results[i][j], "server-ns/call")),
					micros(metric(results[i][j], "client-cpu-ns/decision")))
			}
		}
	}
	fmt.Print(out.String())
}
