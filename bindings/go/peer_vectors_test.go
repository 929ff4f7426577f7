package librate_test

import (
	"testing"

	"github.com/librate/librate/bindings/go/internal/peervectors"
)

// Published test vectors of the Go peers (internal/peervectors: throttled's
// TestRateLimit, x/time/rate's TestLimiterBurst3), through this package's API on a
// frozen timeline. The Redis tier's tests replay the same vectors through Redis.
func TestPeerVectors(t *testing.T) {
	for _, vector := range peervectors.All {
		t.Run(vector.Name, func(t *testing.T) {
			vector.Replay(t, mustNew(t, vector.Config).AcquireAt)
		})
	}
}
