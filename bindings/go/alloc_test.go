//go:build !race && !debug

// Allocation counts are only meaningful without the race detector (whose sync.Pool drops
// items at random) and without `-tags debug` (whose collection before every C call empties
// the pool).

package librate_test

import (
	"time"

	librate "github.com/librate/librate/bindings/go"
	"strconv"
	"testing"
)

// AllowMany allocates nothing once its pooled buffers and dst have grown to the batch.
func TestKeyedAllowManyAllocatesNothing(t *testing.T) {
	k := mustKeyed(t, librate.Config{Limit: 1, Period: time.Second, Burst: 1e9}, 1000)
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i)
	}
	out, _ := k.AllowMany(nil, keys, 1)
	allocs := testing.AllocsPerRun(100, func() {
		out, _ = k.AllowMany(out[:0], keys, 1)
	})
	if allocs != 0 {
		t.Fatalf("AllowMany allocated %v times per call", allocs)
	}
}
