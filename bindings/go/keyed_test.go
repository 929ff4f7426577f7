package librate_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

func mustKeyed(t testing.TB, config librate.Config, capacity int) *librate.Keyed {
	t.Helper()
	k, err := librate.NewKeyed(config, capacity)
	if err != nil {
		t.Fatalf("NewKeyed(%+v, %d): %v", config, capacity, err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

var onePerTwoSeconds = librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: 2 * time.Second, Burst: 1}

// The seed scenario per key: Bob as in TestSeedOnePerTwoSeconds, and Alice, on the same
// table at the same times, is not affected by Bob.
func TestKeyedSeedBobAndAlice(t *testing.T) {
	k := mustKeyed(t, onePerTwoSeconds, 16)
	admitted := librate.Decision{Allowed: true, Limit: 1, ResetAfter: 2 * time.Second}
	steps := []struct {
		key  string
		at   time.Duration
		want librate.Decision
	}{
		{"Bob", 0, admitted},
		{"Alice", 0, admitted},
		{"Bob", 999 * ms, librate.Decision{Limit: 1, RetryAfter: 1001 * ms, ResetAfter: 1001 * ms}},
		{"Bob", 1000 * ms, librate.Decision{Limit: 1, RetryAfter: 1000 * ms, ResetAfter: 1000 * ms}},
		{"Alice", 1000 * ms, librate.Decision{Limit: 1, RetryAfter: 1000 * ms, ResetAfter: 1000 * ms}},
		{"Bob", 2001 * ms, admitted},
		{"Alice", 2001 * ms, admitted},
	}
	for _, s := range steps {
		got, err := k.AcquireAt(s.key, 1, s.at)
		if err != nil || got != s.want {
			t.Errorf("%s at %v: %+v, %v; want %+v", s.key, s.at, got, err, s.want)
		}
	}
}

// A string key and a []byte key with the same bytes are one key; so are "" and nil.
func TestKeyedStringAndBytesKeys(t *testing.T) {
	k := mustKeyed(t, onePerTwoSeconds, 16)
	pairs := []struct {
		s string
		b []byte
	}{{"bob", []byte("bob")}, {"", nil}, {"\x00\xff", []byte{0, 0xff}}}
	for _, p := range pairs {
		if d, err := k.AcquireAt(p.s, 1, 0); err != nil || !d.Allowed {
			t.Fatalf("key %q first: %+v, %v", p.s, d, err)
		}
		if d, err := k.AcquireAtBytes(p.b, 1, 0); err != nil || d.Allowed {
			t.Fatalf("key %q again as bytes: %+v, %v; want a denial", p.s, d, err)
		}
	}
	// And []byte{} is the empty key too.
	if d, err := k.AcquireAtBytes([]byte{}, 1, 0); err != nil || d.Allowed {
		t.Fatalf("[]byte{} after \"\": %+v, %v; want a denial", d, err)
	}
}

// Each key follows the GCRA reference model (rate_test.go) on its own, over a
// pseudo-random run across a handful of keys, through both key types.
func TestKeyedMatchesReferenceModel(t *testing.T) {
	k := mustKeyed(t, librate.Config{Algorithm: librate.GCRA, Limit: 4, Period: 1000, Burst: 3}, 64)
	models := map[string]*gcraModel{}
	modelRun(t, 0x2545f4914f6cdd1d, 3000, 100, 500, func(rng *xorshift, now uint64) (librate.Decision, librate.Decision, string, error) {
		key := "key-" + strconv.FormatUint(rng.Next(5), 10)
		n := rng.Next(4)
		model, ok := models[key]
		if !ok {
			model = &gcraModel{interval: 250, burst: 3}
			models[key] = model
		}
		switch rng.Next(3) {
		case 0:
			maxWait := rng.Next(600)
			got, err := k.ReserveAtBytes([]byte(key), int(n), time.Duration(now), time.Duration(maxWait))
			return got, model.decide(now, n, maxWait), fmt.Sprintf("ReserveAtBytes %s n=%d maxWait=%d", key, n, maxWait), err
		case 1:
			got, err := k.AcquireAtBytes([]byte(key), int(n), time.Duration(now))
			return got, model.decide(now, n, 0), fmt.Sprintf("AcquireAtBytes %s n=%d", key, n), err
		default:
			got, err := k.AcquireAt(key, int(n), time.Duration(now))
			return got, model.decide(now, n, 0), fmt.Sprintf("AcquireAt %s n=%d", key, n), err
		}
	})
}

// Eight goroutines on two keys at a frozen time: exactly each key's burst is admitted.
func TestKeyedConcurrentFrozenTime(t *testing.T) {
	const limit = 50
	k := mustKeyed(t, librate.Config{Algorithm: librate.GCRA, Limit: limit, Period: time.Hour}, 16)
	for _, key := range []string{"a", "b"} {
		got := countAdmitted(500, func() bool {
			d, err := k.AcquireAt(key, 1, time.Hour)
			if err != nil {
				t.Error(err)
			}
			return d.Allowed
		})
		if got != limit {
			t.Fatalf("key %q: admitted %d, want exactly %d", key, got, limit)
		}
	}
}

// A table holds at least its capacity of live keys, then refuses new keys with
// ErrTableFull (after at most a bounded surplus) while known keys still work; a query
// never inserts; keys whose state is fresh again are reclaimed.
func TestKeyedTableFull(t *testing.T) {
	const capacity, bound = 4, 1 << 16
	config := librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: 2 * time.Second} // T = 1 s
	k := mustKeyed(t, config, capacity)
	held := 0
	for ; held < bound; held++ {
		_, err := k.AcquireAt("live-"+strconv.Itoa(held), 1, 0)
		if errors.Is(err, librate.ErrTableFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if held < capacity || held == bound {
		t.Fatalf("table of capacity %d held %d live keys before ErrTableFull", capacity, held)
	}
	t.Logf("capacity %d held %d live keys", capacity, held)
	if _, err := k.AcquireAtBytes([]byte("another new key"), 1, 0); !errors.Is(err, librate.ErrTableFull) {
		t.Fatalf("new []byte key in a full table: %v", err)
	}
	if _, err := k.AcquireAt("yet another", 1, 0); !errors.Is(err, librate.ErrTableFull) {
		t.Fatalf("new string key in a full table: %v", err)
	}
	// A known key still works: its second unit.
	if d, err := k.AcquireAt("live-0", 1, 0); err != nil || !d.Allowed {
		t.Fatalf("known key in a full table: %+v, %v", d, err)
	}
	// A query for an unknown key reports a fresh key and inserts nothing.
	if d, err := k.AcquireAt("unknown", 0, 0); err != nil || d != (librate.Decision{Allowed: true, Limit: 2, Remaining: 2}) {
		t.Fatalf("query for an unknown key in a full table: %+v, %v", d, err)
	}
	// At 2 s every key's TAT (1 s, or 2 s for live-0) is ≤ now: all fresh, reclaimable.
	if d, err := k.AcquireAt("newcomer", 1, 2*time.Second); err != nil || !d.Allowed {
		t.Fatalf("new key once the others are fresh: %+v, %v", d, err)
	}
}

func TestKeyedErrors(t *testing.T) {
	for _, capacity := range []int{0, -1} {
		if k, err := librate.NewKeyed(onePerTwoSeconds, capacity); !errors.Is(err, librate.ErrInvalidConfig) || k != nil {
			t.Errorf("capacity %d: %v, %v; want ErrInvalidConfig", capacity, k, err)
		}
	}
	for _, config := range []librate.Config{{}, {Limit: 1, Period: -1}, {Algorithm: 42, Limit: 1, Period: 1}} {
		if _, err := librate.NewKeyed(config, 8); !errors.Is(err, librate.ErrInvalidConfig) {
			t.Errorf("config %+v: %v; want ErrInvalidConfig", config, err)
		}
	}
	k := mustKeyed(t, onePerTwoSeconds, 8)
	ctx := context.Background()
	key := []byte("k")
	calls := []struct {
		name string
		call func() error
		want error
	}{
		{"Acquire(2)", func() error { _, err := k.Acquire("k", 2); return err }, librate.ErrInsufficientCapacity},
		{"AcquireBytes(2)", func() error { _, err := k.AcquireBytes(key, 2); return err }, librate.ErrInsufficientCapacity},
		{"AcquireAt(2)", func() error { _, err := k.AcquireAt("k", 2, 0); return err }, librate.ErrInsufficientCapacity},
		{"Reserve(2)", func() error { _, err := k.ReserveWithin("k", 2, time.Hour); return err }, librate.ErrInsufficientCapacity},
		{"ReserveAtBytes(2)", func() error { _, err := k.ReserveAtBytes(key, 2, 0, 0); return err }, librate.ErrInsufficientCapacity},
		{"Wait(2)", func() error { return k.WaitN(ctx, "k", 2) }, librate.ErrInsufficientCapacity},
		{"WaitBytes(2)", func() error { return k.WaitNBytes(ctx, key, 2) }, librate.ErrInsufficientCapacity},
		{"Acquire(-1)", func() error { _, err := k.Acquire("k", -1); return err }, librate.ErrInvalidArgument},
		{"AcquireAtBytes(1, -1)", func() error { _, err := k.AcquireAtBytes(key, 1, -1); return err }, librate.ErrInvalidArgument},
		{"Reserve(1, -1)", func() error { _, err := k.ReserveWithin("k", 1, -1); return err }, librate.ErrInvalidArgument},
		{"ReserveAt(1, -1, 0)", func() error { _, err := k.ReserveAt("k", 1, -1, 0); return err }, librate.ErrInvalidArgument},
		{"ReserveBytes(-1)", func() error { _, err := k.ReserveWithinBytes(key, -1, 0); return err }, librate.ErrInvalidArgument},
		{"Wait(-1)", func() error { return k.WaitN(ctx, "k", -1) }, librate.ErrInvalidArgument},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v; want %v", c.name, err, c.want)
		}
	}
	if k.AllowN("k", time.Now(), -1) || k.AllowNBytes(key, time.Now(), 2) {
		t.Error("AllowN with a bad count returned true")
	}
	if d, err := k.AcquireAt("k", 0, 0); err != nil || d.Remaining != 1 {
		t.Fatalf("the failed calls took something: %+v, %v", d, err)
	}
}

func TestKeyedClosedAndNil(t *testing.T) {
	closed := mustKeyed(t, onePerTwoSeconds, 8)
	closed.Close()
	if err := closed.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	var nilKeyed *librate.Keyed
	for name, k := range map[string]*librate.Keyed{"closed": closed, "nil": nilKeyed} {
		if _, err := k.Acquire("k", 1); !errors.Is(err, librate.ErrClosed) {
			t.Errorf("%s: Acquire: %v", name, err)
		}
		if _, err := k.ReserveAtBytes([]byte("k"), 1, 0, 0); !errors.Is(err, librate.ErrClosed) {
			t.Errorf("%s: ReserveAtBytes: %v", name, err)
		}
		if err := k.WaitN(context.Background(), "k", 1); !errors.Is(err, librate.ErrClosed) {
			t.Errorf("%s: Wait: %v", name, err)
		}
		if k.Allow("k") || k.AllowBytes(nil) {
			t.Errorf("%s: Allow returned true", name)
		}
		if err := k.Close(); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
	}
	if nilKeyed.Capacity() != 0 || nilKeyed.Config() != (librate.Config{}) {
		t.Error("nil Keyed reports a capacity or config")
	}
	if got := closed.Config(); got != onePerTwoSeconds {
		t.Errorf("closed Keyed: Config() = %+v, want the rule it was made with, %+v", got, onePerTwoSeconds)
	}
}

func TestKeyedWait(t *testing.T) {
	k := mustKeyed(t, librate.Config{Algorithm: librate.GCRA, Limit: 1000, Period: time.Second, Burst: 1}, 8)
	for i := range 3 { // a unit a millisecond: the later Waits sleep out their reservations
		if err := k.WaitN(context.Background(), "bob", 1); err != nil {
			t.Fatalf("Wait %d: %v", i, err)
		}
		if err := k.WaitNBytes(context.Background(), []byte("alice"), 1); err != nil {
			t.Fatalf("WaitBytes %d: %v", i, err)
		}
	}
	hourly := mustKeyed(t, librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Hour}, 8)
	if !hourly.Allow("bob") {
		t.Fatal("first unit denied")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := hourly.Wait(ctx, "bob"); !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("Wait past the deadline: %v; want an early DeadlineExceeded", err)
	}
	if err := hourly.Wait(ctx, "alice"); err != nil {
		t.Fatalf("another key: %v", err)
	}
}

// The seed scenario through the middleware with one limit per user, keyed by a header,
// and per remote IP by default.
func TestMiddlewareKeyedSeedScenario(t *testing.T) {
	clock := &fakeClock{}
	byUser := newMiddleware(t, mustKeyed(t, onePerTwoSeconds, 16), librate.MiddlewareOptions{
		Now: clock.Now,
		Key: func(r *http.Request) string { return r.Header.Get("X-User") },
	})
	byIP := newMiddleware(t, mustKeyed(t, onePerTwoSeconds, 16), librate.MiddlewareOptions{Now: clock.Now})
	const policy = `"default";q=1;w=2`
	ok := response{200, `"default";r=0;t=2`, policy, ""}
	steps := []struct {
		at       time.Duration
		user, ip string
		want     response
	}{
		{0, "Bob", "192.0.2.1:1000", ok},
		{0, "Alice", "[2001:db8::1]:443", ok},
		{999 * ms, "Bob", "192.0.2.1:1001", response{429, `"default";r=0;t=2`, policy, "2"}},
		{1000 * ms, "Bob", "192.0.2.1:1002", response{429, `"default";r=0;t=1`, policy, "1"}},
		{1000 * ms, "Alice", "[2001:db8::1]:444", response{429, `"default";r=0;t=1`, policy, "1"}},
		{2001 * ms, "Bob", "192.0.2.1:1003", ok},
	}
	for _, s := range steps {
		clock.now = s.at
		if got := serve(byUser, "203.0.113.9:1", http.Header{"X-User": {s.user}}); got != s.want {
			t.Errorf("by user, %s at %v:\n got %+v\nwant %+v", s.user, s.at, got, s.want)
		}
		// The same clients told apart by IP only (the port changes; the key does not).
		if got := serve(byIP, s.ip, nil); got != s.want {
			t.Errorf("by IP, %s at %v:\n got %+v\nwant %+v", s.ip, s.at, got, s.want)
		}
	}
}

// One limit per user: Bob's second request in the same second is refused, Alice's
// first is not.
func ExampleKeyed() {
	perUser, err := librate.NewKeyed(librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Second}, 10_000)
	if err != nil {
		panic(err)
	}
	defer perUser.Close()
	for _, user := range []string{"bob", "bob", "alice"} {
		d, _ := perUser.AcquireAt(user, 1, 0)
		fmt.Println(user, d.Allowed, d.RetryAfter)
	}
	// Output:
	// bob true 0s
	// bob false 1s
	// alice true 0s
}

// AllowMany decides as AllowN per key does: twin tables, one fed batches and one fed key
// by key, agree on every outcome. Three per hour (burst 3), so no decision here depends
// on when the clock is read.
func TestKeyedAllowManyMatchesAllowN(t *testing.T) {
	config := librate.Config{Algorithm: librate.GCRA, Limit: 3, Period: time.Hour, Burst: 3}
	for _, algorithm := range []librate.Algorithm{librate.GCRA, librate.SlidingLog} {
		config.Algorithm = algorithm
		batched, single := mustKeyed(t, config, 64), mustKeyed(t, config, 64)
		x, denied := uint64(0x9e3779b97f4a7c15), 0
		next := func(bound uint64) uint64 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			return x % bound
		}
		var got []bool
		for round := 0; round < 40; round++ {
			n := int(1 + next(2))
			keys := make([]string, next(40))
			for i := range keys {
				keys[i] = []string{"a", "b", "", "d\x00"}[next(4)]
			}
			var err error
			if got, err = batched.AllowMany(got[:0], keys, n); err != nil {
				t.Fatalf("%v: AllowMany: %v", algorithm, err)
			}
			if len(got) != len(keys) {
				t.Fatalf("%v: %d outcomes for %d keys", algorithm, len(got), len(keys))
			}
			for i, key := range keys {
				if want := single.AllowN(key, time.Now(), n); got[i] != want {
					t.Fatalf("%v round %d key %d (%q): AllowMany %v, AllowN %v", algorithm, round, i, key, got[i], want)
				}
				if !got[i] {
					denied++
				}
			}
		}
		if denied < 100 {
			t.Fatalf("%v: only %d denials: the test exercised too little", algorithm, denied)
		}
	}
}

func TestKeyedAllowManyTableFullAndErrors(t *testing.T) {
	k := mustKeyed(t, librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Hour}, 2)
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("key%d", i)
	}
	prefix := []bool{true}
	got, err := k.AllowMany(prefix, keys, 1)
	if err != nil || len(got) != 41 || !got[0] {
		t.Fatalf("AllowMany appended %d outcomes (err %v)", len(got)-1, err)
	}
	admitted := 0
	for _, ok := range got[1:] {
		if ok {
			admitted++
		}
	}
	// Capacity 2 always fits and at most 4 slots exist; every other key finds it full.
	if admitted < 2 || admitted > 4 || !got[1] || !got[2] {
		t.Fatalf("admitted %d of 40 new keys into a table of capacity 2: %v", admitted, got[1:])
	}
	for _, n := range []int{-1, 2} {
		got, err := k.AllowMany(nil, keys, n)
		if err == nil || got != nil {
			t.Fatalf("AllowMany(n=%d) = %v, %v; want an error and nothing decided", n, got, err)
		}
	}
	if _, err := k.AllowMany(nil, keys, 2); !errors.Is(err, librate.ErrInsufficientCapacity) {
		t.Fatalf("n above the limit: %v", err)
	}
	if got, err := k.AllowMany(nil, nil, 1); err != nil || len(got) != 0 {
		t.Fatalf("no keys: %v, %v", got, err)
	}
	k.Close()
	if _, err := k.AllowMany(nil, keys, 1); !errors.Is(err, librate.ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
	var none *librate.Keyed
	if _, err := none.AllowMany(nil, keys, 1); !errors.Is(err, librate.ErrClosed) {
		t.Fatalf("nil: %v", err)
	}
}
