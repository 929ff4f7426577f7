package librateredis_test

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// The package on a Redis Cluster of three masters the test starts on loopback ports
// (docs/redis.md), through a *redis.ClusterClient: keys on every master decide as the
// in-process limiter, one at a time and in batches; one key's Redis keys share a slot
// whatever the prefix; and a master that lost its scripts gets them again.

// keysOnEveryMaster returns perMaster user keys ("user-0", "user-1"…) whose Redis keys
// under l live on each master, master by master.
func (c *cluster) keysOnEveryMaster(t testing.TB, l *librateredis.Limiter, perMaster int) []string {
	t.Helper()
	found := make([][]string, len(c.nodes))
	for k := 0; slices.ContainsFunc(found, func(keys []string) bool { return len(keys) < perMaster }); k++ {
		key := "user-" + strconv.Itoa(k)
		if m := c.master(t, l.Key(key)); len(found[m]) < perMaster {
			found[m] = append(found[m], key)
		}
	}
	return slices.Concat(found...)
}

// model is an in-process limiter for many keys: key's decision for n units at now.
type model func(key string, n int, now time.Duration) librate.Decision

// inProcess is the model of the keys of a Limiter of config: a librate.Keyed, closed
// when t ends.
func inProcess(t testing.TB, config librate.Config) model {
	local, err := librate.NewKeyed(config, 256)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	return func(key string, n int, now time.Duration) librate.Decision {
		t.Helper()
		d, err := local.AcquireAt(key, n, now)
		if err != nil {
			t.Fatalf("in process, %q: n=%d at %v: %v", key, n, now, err)
		}
		return d
	}
}

// threeAnHour is a limit of 3 an hour: the steps and rounds below admit and deny, and
// no key expires by the server's clock while the test runs (the shortest time to live
// they leave is about a second, before a step that starts a new window anyway).
func threeAnHour(algorithm librate.Algorithm) librate.Config {
	return librate.Config{Algorithm: algorithm, Limit: 3, Period: time.Hour}
}

// hour10 is 10 h on the caller's timeline: the start of a window.
const hour10 = 10 * time.Hour

// call is a cost n at a time after hour10.
type call struct {
	at time.Duration
	n  int
}

// eachAlgorithm runs body in a subtest for each algorithm with a Redis script, with a
// Limiter of threeAnHour under prefix and the algorithm's name, and its model.
func eachAlgorithm(t *testing.T, client redis.UniversalClient, prefix string,
	body func(t *testing.T, remote *librateredis.Limiter, local model)) {
	for _, algorithm := range algorithms {
		t.Run(algorithm.String(), func(t *testing.T) {
			config := threeAnHour(algorithm)
			if remote := newLimiter(t, client, config, prefix+algorithm.String()+":"); remote != nil {
				body(t, remote, inProcess(t, config))
			}
		})
	}
}

func TestCluster(t *testing.T) {
	c := startCluster(t)
	client := c.client(t)
	t.Run("KeysOnEveryMasterDecideAsInProcess", func(t *testing.T) { keysDecideAsInProcess(t, c, client) })
	t.Run("BatchesOverEveryMaster", func(t *testing.T) { batchesOverEveryMaster(t, c, client) })
	t.Run("OneKeysRedisKeysShareASlot", func(t *testing.T) { oneKeysRedisKeysShareASlot(t, c, client) })
	t.Run("FlushedScriptsAreLoadedAgain", func(t *testing.T) { flushedScriptsAreLoadedAgain(t, c, client) })
	t.Run("PoliciesOnEveryMaster", func(t *testing.T) { policiesOnEveryMaster(t, c, client) })
	t.Run("LeasesOnEveryMaster", func(t *testing.T) { leasesOnEveryMaster(t, c, client) })
}

// A policy's keys on every master, and keys whose hash tag is odd (empty, braces in
// it): every rule of a key in the key's one slot, each decision librate.Policy's, and a
// reset through the Cluster client.
func policiesOnEveryMaster(t *testing.T, c *cluster, client *redis.ClusterClient) {
	rules := []librate.Config{gcra2, threeAnHour(librate.SlidingWindow)}
	p := newPolicy(t, client, rules, "cluster:policy:")
	limiter := newLimiter(t, client, gcra2, "cluster:policy:")
	keys := append(c.keysOnEveryMaster(t, limiter, 2), "", "}", "{x}")
	for _, key := range keys {
		local, err := librate.NewPolicy(rules...)
		if err != nil {
			t.Fatal(err)
		}
		for step := range 4 {
			now := time.Duration(step) * time.Second / 4
			want, _ := local.AcquireAt(1, now)
			if got, err := p.AcquireAt(ctx, key, 1, now); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%q step %d: %+v, %v\nwant %+v", key, step, got, err, want)
			}
		}
		redisKeys := p.Keys(key)
		if c.master(t, redisKeys[0]) != c.master(t, redisKeys[1]) ||
			librate.RedisSlot(redisKeys[0]) != librate.RedisSlot(redisKeys[1]) {
			t.Errorf("%q: %q in two slots", key, redisKeys)
		}
		if err := p.Reset(ctx, key); err != nil {
			t.Fatal(err)
		}
		if d, err := p.AcquireAt(ctx, key, 2, 0); err != nil || !d.Allowed {
			t.Errorf("%q after reset: %+v, %v", key, d, err)
		}
	}
}

// Two keys on each master, every algorithm, a short walk of explicit times and costs
// (the steps interleave the keys): each decision through the Cluster client is the
// in-process limiter's for that key, field for field.
func keysDecideAsInProcess(t *testing.T, c *cluster, client *redis.ClusterClient) {
	steps := []call{
		{0, 1}, {0, 1}, {time.Second, 1}, {2 * time.Second, 1}, {2 * time.Second, 0}, {30 * time.Minute, 2},
		{59*time.Minute + 59*time.Second, 1}, {time.Hour, 3}, {time.Hour + time.Minute, 1}, {150 * time.Minute, 2},
	}
	eachAlgorithm(t, client, "cluster:", func(t *testing.T, remote *librateredis.Limiter, local model) {
		keys := c.keysOnEveryMaster(t, remote, 2)
		var decided [2]int // denials, admissions
		for i, step := range steps {
			now := hour10 + step.at
			for _, key := range keys {
				want := local(key, step.n, now)
				got, err := remote.AcquireAt(ctx, key, step.n, now)
				if err != nil || got != want {
					t.Fatalf("step %d, %q on master %d: n=%d at %v: %+v, %v\nwant %+v",
						i, key, c.master(t, remote.Key(key)), step.n, step.at, got, err, want)
				}
				decided[btoi(want.Allowed)]++
			}
		}
		if decided[0] == 0 || decided[1] == 0 {
			t.Errorf("%d denials and %d admissions: the walk must take both", decided[0], decided[1])
		}
	})
}

// 50 keys (and the first five again, decided twice in order) in one batch a round,
// three rounds, every algorithm: each key's Result is its in-process decision, and each
// key lives on the master of its slot, every master holding some.
func batchesOverEveryMaster(t *testing.T, c *cluster, client *redis.ClusterClient) {
	rounds := []call{{0, 1}, {time.Second, 1}, {2 * time.Second, 2}}
	eachAlgorithm(t, client, "cluster:batch:", func(t *testing.T, remote *librateredis.Limiter, local model) {
		var keys []string
		for k := range 50 {
			keys = append(keys, "batch-"+strconv.Itoa(k))
		}
		keys = append(keys, keys[:5]...)
		for r, round := range rounds {
			batchAsModel(t, "round "+strconv.Itoa(r), remote, local, keys, round)
		}
		held := c.holders(t, remote, keys[:50])
		t.Logf("keys a master: %v", held)
		if slices.Contains(held, 0) {
			t.Errorf("keys a master %v: every master must hold some", held)
		}
	})
}

// batchAsModel takes c.n units for each of keys in one batch at hour10 + c.at: each
// key's Result must be its decision by local, the batch's err nil.
func batchAsModel(t testing.TB, what string, remote *librateredis.Limiter, local model, keys []string, c call) {
	t.Helper()
	now := hour10 + c.at
	results, err := remote.AcquireManyAt(ctx, keys, c.n, now)
	if err != nil || len(results) != len(keys) {
		t.Fatalf("%s: %d results for %d keys, %v", what, len(results), len(keys), err)
	}
	for i, key := range keys {
		if want := (librateredis.Result{Decision: local(key, c.n, now)}); results[i] != want {
			t.Fatalf("%s, key %d %q: %+v\nwant %+v", what, i, key, results[i], want)
		}
	}
}

// holders counts, master by master, the keys of l among keys held there: each key must
// exist on the master of its slot, and there only (the others answer MOVED).
func (c *cluster) holders(t testing.TB, l *librateredis.Limiter, keys []string) []int {
	t.Helper()
	held := make([]int, len(c.admin))
	for _, key := range keys {
		redisKey := l.Key(key)
		want := c.master(t, redisKey)
		for i, admin := range c.admin {
			n, err := admin.Exists(ctx, redisKey).Result()
			switch {
			case i == want && (err != nil || n != 1):
				t.Errorf("%q is not on master %d, its slot's: %d, %v", redisKey, i, n, err)
			case i != want && (err == nil || !strings.HasPrefix(err.Error(), "MOVED ")):
				t.Errorf("master %d answers for %q, of master %d's slot: %d, %v", i, redisKey, want, n, err)
			case i == want:
				held[i]++
			}
		}
	}
	return held
}

// A user's Redis keys under two prefixes share one slot, the slot of the user key
// itself (their hash tag), for keys on every master.
func oneKeysRedisKeysShareASlot(t *testing.T, c *cluster, client *redis.ClusterClient) {
	perSecond := newLimiter(t, client, gcra2, "cluster:second:")
	perHour := newLimiter(t, client, threeAnHour(librate.SlidingWindow), "cluster:hour:")
	for _, key := range c.keysOnEveryMaster(t, perSecond, 3) {
		a, b := perSecond.Key(key), perHour.Key(key)
		if want := "cluster:second:{" + key + "}"; a != want {
			t.Errorf("Key(%q) = %q, want %q", key, a, want)
		}
		var slots []int64
		for _, redisKey := range []string{a, b, key} {
			slot, err := client.ClusterKeySlot(ctx, redisKey).Result()
			if err != nil {
				t.Fatalf("CLUSTER KEYSLOT %q: %v", redisKey, err)
			}
			slots = append(slots, slot)
		}
		if slots[0] != slots[1] || slots[1] != slots[2] {
			t.Errorf("%q: slots %v of %q, %q and the key itself, want one", key, slots, a, b)
		}
	}
}

// SCRIPT FLUSH on every master: the next single call on each master and the next batch
// over all of them load the script again and decide. Then on one master only: a batch
// sends again only that master's keys, so no key is decided twice.
func flushedScriptsAreLoadedAgain(t *testing.T, c *cluster, client *redis.ClusterClient) {
	config := threeAnHour(librate.GCRA)
	remote := newLimiter(t, client, config, "cluster:flush:")
	local := inProcess(t, config)
	script, err := librate.PrepareRedis(config)
	if err != nil {
		t.Fatal(err)
	}
	sha := redis.NewScript(script.Source).Hash()
	keys := c.keysOnEveryMaster(t, remote, 2)
	flush := func(masters ...int) {
		t.Helper()
		for _, i := range masters {
			if err := c.admin[i].ScriptFlush(ctx).Err(); err != nil {
				t.Fatalf("master %d: SCRIPT FLUSH: %v", i, err)
			}
		}
	}
	loaded := func(master int) bool {
		t.Helper()
		exists, err := c.admin[master].ScriptExists(ctx, sha).Result()
		if err != nil {
			t.Fatalf("master %d: SCRIPT EXISTS: %v", master, err)
		}
		return exists[0]
	}

	flush(0, 1, 2)
	for i, key := range keys {
		// keys holds two keys a master, master by master: the first of each finds its
		// master without the script (NOSCRIPT, then EVAL), the second with it.
		master := c.master(t, remote.Key(key))
		if flushed := !loaded(master); flushed != (i%2 == 0) {
			t.Fatalf("%q, key %d on master %d: script flushed %v", key, i, master, flushed)
		}
		want := local(key, 1, hour10)
		if got, err := remote.AcquireAt(ctx, key, 1, hour10); err != nil || got != want {
			t.Fatalf("%q on master %d after SCRIPT FLUSH: %+v, %v\nwant %+v", key, master, got, err, want)
		}
		if !loaded(master) {
			t.Errorf("%q on master %d: the script is not loaded after the call", key, master)
		}
	}
	flush(0, 1, 2)
	batchAsModel(t, "a batch after SCRIPT FLUSH on every master", remote, local, keys, call{time.Second, 1})
	for i := range c.admin {
		if !loaded(i) {
			t.Errorf("master %d: the script is not loaded after the batch", i)
		}
	}
	flush(1)
	batchAsModel(t, "a batch after SCRIPT FLUSH on master 1", remote, local, keys, call{2 * time.Second, 1})
	if !loaded(1) {
		t.Errorf("master 1: the script is not loaded after the batch")
	}
}
