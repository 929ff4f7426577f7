package librateredis_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// admission is units admitted for a key at a time on the simulation's timeline.
type admission struct {
	at    time.Duration
	units int
}

// overTheRule returns the first interval [log[i].at, log[j].at] in which log, in time
// order, admits more than a GCRA of emission interval every and burst most could: most +
// floor(Δ / every) units; "" if none.
func overTheRule(log []admission, every time.Duration, most int) string {
	for i := range log {
		admitted := 0
		for j := i; j < len(log); j++ {
			admitted += log[j].units
			span := log[j].at - log[i].at
			if allowed := most + int(span/every); admitted > allowed {
				return fmt.Sprintf("%d units from %v to %v, %d allowed", admitted, log[i].at, log[j].at, allowed)
			}
		}
	}
	return ""
}

// Three holders on virtual time (the At forms) lease the keys hot at them and send the
// rest to Redis; over every interval, each key admits no more than its rule alone could.
func TestKeyedLeaseSimulationNeverPassesAKeysRule(t *testing.T) {
	s := startServer(t)
	// Per key: 200 a second with bursts of 10 (T = 5 ms, B = 10), leased 500 ms, renewed
	// every 100 ms; a key is leased once it asks for 30 units between rounds.
	config := librate.Config{Algorithm: librate.GCRA, Limit: 200, Period: time.Second, Burst: 10}
	rule := librate.LeaseRule{Config: config, Lease: 500 * ms, RenewEvery: 100 * ms}
	const every, most = 5 * ms, 10
	var holders []*librateredis.KeyedLeasedLimiter
	var counters []*acquireCounter
	for i := range 3 {
		client, counter := countedClient(t, s)
		options := librateredis.KeyedLeaseOptions{Hot: 30, Capacity: 4, Name: fmt.Sprintf("s%d", i)}
		holders = append(holders, keyedBy(t, client, "sim:", rule, options))
		counters = append(counters, counter)
	}
	keys := []string{"hot", "warm", "cold"}
	logs := make([][]admission, len(keys))
	requests := 0
	random := rand.New(rand.NewPCG(7, 38))
	// 3 s in steps of 1 ms. Per ms, "hot" is asked for with a chance of 1/2 at holders 0
	// and 1 (about 75 units a round: leased there) and 1/20 at holder 2 (7.5: in Redis),
	// together several times its rule; "warm" 1/20 and "cold" 1/300 anywhere; 1 or 2
	// units each. Holder 1 stops for good at 2 s, its leases left to lapse.
	for now := time.Duration(0); now < 3*time.Second; now += ms {
		for h, l := range holders {
			if h == 1 && now >= 2*time.Second {
				continue
			}
			if now%rule.RenewEvery == 0 {
				if _, err := l.RenewAt(ctx, now); err != nil {
					t.Fatal(err)
				}
			}
			hot := 2
			if h == 2 {
				hot = 20
			}
			for k, key := range keys {
				if random.IntN([]int{hot, 20, 300}[k]) != 0 {
					continue
				}
				units := 1 + random.IntN(2)
				requests++
				d, err := l.AcquireAt(ctx, key, units, now)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					logs[k] = append(logs[k], admission{at: now, units: units})
				}
			}
		}
	}
	for k, log := range logs {
		if len(log) == 0 {
			t.Errorf("%s admitted nothing", keys[k])
		}
		if over := overTheRule(log, every, most); over != "" {
			t.Errorf("%s: %s", keys[k], over)
		}
	}
	// The hot key was leased where it is hot, and decided there in process.
	if !holders[0].IsLeased("hot") || holders[2].IsLeased("hot") || holders[0].IsLeased("warm") || holders[0].IsLeased("cold") {
		t.Error("hot must be leased at holder 0 alone, warm and cold nowhere")
	}
	inRedis := 0
	for _, counter := range counters {
		for _, key := range keys {
			inRedis += counter.of("sim:" + key)
		}
	}
	if inProcess := requests - inRedis; inProcess <= inRedis {
		t.Errorf("%d decided in process, %d in Redis", inProcess, inRedis)
	}
	t.Logf("%d requests, %d in Redis; admitted: hot %d, warm %d, cold %d", requests, inRedis, len(logs[0]), len(logs[1]), len(logs[2]))
}

// The check itself: a log one unit past the rule is caught.
func TestOverTheRuleCatchesOneUnitTooMany(t *testing.T) {
	log := []admission{{0, 10}, {5 * ms, 1}}
	if overTheRule(log, 5*ms, 10) != "" {
		t.Fatal("11 units in 5 ms are what B = 10, T = 5 ms allow")
	}
	log = append(log, admission{9 * ms, 1})
	if overTheRule(log, 5*ms, 10) == "" {
		t.Fatal("12 units in 9 ms pass B = 10, T = 5 ms")
	}
}
