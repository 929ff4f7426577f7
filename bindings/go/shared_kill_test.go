package librate_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// The keyed table the killed inserters share: GCRA, 2 a second, bursts of 2 (T = 500
// ms), for 256 keys.
var killConfig = librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: time.Second}

const (
	killCapacity = 256
	// killMaxKeys is the table's slot count, the most keys it holds at once: Rust's
	// KeyedLimiter::max_keys, 2 × capacity (rate.h: "up to twice that many"); the C ABI
	// has no accessor for it.
	killMaxKeys = 2 * killCapacity
	// roundSpan is how far apart on the timeline the rounds insert: far more than any
	// round's keys span (one every 125 ms, not millions of them), so every key of a
	// round is fresh to the next, which reclaims their slots as it inserts.
	roundSpan = 1_000_000 * time.Second

	progressEnv = "LIBRATE_TEST_PROGRESS"
	roundEnv    = "LIBRATE_TEST_ROUND"
	workerEnv   = "LIBRATE_TEST_WORKER"
)

// insertedKey is the i-th key that goroutine g of worker w inserts in round r, and
// insertedAt the time it does: round r's span, then a key every 125 ms, so a key's state
// (TAT = its time + 500 ms) is fresh again 4 keys later.
func insertedKey(round, worker, g int, i uint64) string {
	return fmt.Sprintf("%d-%d-%d-%d", round, worker, g, i)
}

func insertedAt(round int, i uint64) time.Duration {
	return frozen + time.Duration(round)*roundSpan + time.Duration(i)*time.Second/8
}

// insertUntilKilled, in a child: opens the keyed file and, at the parent's go, runs
// `goroutines` goroutines that insert fresh keys without pause until the process is
// killed. Before each insert, goroutine g writes how many keys it has tried, that one
// included, to word g of the progress file, which it maps: what the parent reads there
// after the kill covers every key the child ever tried. An error other than ErrTableFull
// ends the child with status 1, which the parent reports.
func insertUntilKilled(t *testing.T) {
	round, _ := strconv.Atoi(os.Getenv(roundEnv))
	worker, _ := strconv.Atoi(os.Getenv(workerEnv))
	keyed, err := librate.OpenKeyed(os.Getenv(pathEnv), killConfig, killCapacity)
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.OpenFile(os.Getenv(progressEnv), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	progress, err := syscall.Mmap(int(file.Fd()), 0, 8*goroutines, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	awaitGo(t)
	for g := range goroutines {
		go func() {
			for i := uint64(0); ; i++ {
				binary.NativeEndian.PutUint64(progress[8*g:], i+1)
				_, err := keyed.AcquireAt(insertedKey(round, worker, g, i), 1, insertedAt(round, i))
				if err != nil && !errors.Is(err, librate.ErrTableFull) {
					fmt.Fprintln(os.Stderr, "insert:", err)
					os.Exit(1)
				}
			}
		}()
	}
	select {} // until killed
}

// tried reads a progress file: how many keys each goroutine has tried.
func tried(t *testing.T, path string) []uint64 {
	t.Helper()
	words, err := os.ReadFile(path)
	if err != nil || len(words) != 8*goroutines {
		t.Fatalf("progress file: %d bytes, %v", len(words), err)
	}
	counts := make([]uint64, goroutines)
	for g := range counts {
		counts[g] = binary.NativeEndian.Uint64(words[8*g:])
	}
	return counts
}

// Processes inserting fresh keys into one keyed file (4 × 4 goroutines) are killed with
// SIGKILL at random moments while they insert, round after round. Then every key any of
// them tried still decides, as a key admitted once at its time or as a fresh one; and at
// a much later time, when every old key is fresh, the table takes as many new keys as it
// has slots, each admitted, and then reports ErrTableFull: no slot stays lost to a
// killed process.
func TestKilledInsertersLeaveAUsableTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "table")
	rounds := max(shortened(20), 3)
	counts := make([][][]uint64, rounds) // counts[round][worker][g]: keys tried
	total := uint64(0)
	for round := range counts {
		progress := make([]string, processes)
		for w := range progress {
			progress[w] = filepath.Join(dir, fmt.Sprintf("progress-%d-%d", round, w))
			if err := os.WriteFile(progress[w], make([]byte, 8*goroutines), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		children := startReady(t, helperInsert, func(w int) []string {
			return []string{
				pathEnv + "=" + path,
				progressEnv + "=" + progress[w],
				roundEnv + "=" + strconv.Itoa(round),
				workerEnv + "=" + strconv.Itoa(w),
			}
		})
		for _, child := range children {
			child.stdin.Close()
		}
		// Kill them once every one is inserting, at a random moment up to 20 ms on.
		deadline := time.Now().Add(time.Minute)
		for w := 0; w < processes; {
			if tried(t, progress[w])[0] > 0 {
				w++
			} else if time.Now().After(deadline) {
				t.Fatalf("round %d: worker %d never inserted", round, w)
			} else {
				time.Sleep(time.Millisecond)
			}
		}
		time.Sleep(rand.N(20 * time.Millisecond))
		for _, child := range children {
			if err := child.kill(); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		counts[round] = make([][]uint64, processes)
		for w := range children {
			counts[round][w] = tried(t, progress[w])
			for _, count := range counts[round][w] {
				total += count
			}
		}
	}
	t.Logf("%d keys tried in %d rounds", total, rounds)

	keyed, err := librate.OpenKeyed(path, killConfig, killCapacity)
	if err != nil {
		t.Fatal(err)
	}
	defer keyed.Close()
	// A key tried at its time: admitted there (TAT = time + 500 ms: remaining
	// ⌊(1 s − 500 ms)/500 ms⌋ = 1, reset 500 ms), or fresh (never admitted: killed
	// before, the table full; or reclaimed once fresh at a later time, as may be).
	once := librate.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500 * time.Millisecond}
	fresh := librate.Decision{Allowed: true, Limit: 2, Remaining: 2}
	for round, workers := range counts {
		for w, goroutineCounts := range workers {
			for g, count := range goroutineCounts {
				for i := range count {
					key := insertedKey(round, w, g, i)
					if d, err := keyed.AcquireAt(key, 0, insertedAt(round, i)); err != nil || (d != once && d != fresh) {
						t.Fatalf("query of %q: %+v, %v; want %+v or %+v", key, d, err, once, fresh)
					}
				}
			}
		}
	}
	// Much later every old key is fresh: the table takes killMaxKeys new keys, each
	// admitted as a first request, then is full of live keys; a known key still decides
	// (its second unit: TAT = later + 1 s, remaining 0, reset 1 s).
	later := insertedAt(rounds+1, 0)
	for i := range killMaxKeys {
		key := "after-" + strconv.Itoa(i)
		if d, err := keyed.AcquireAt(key, 1, later); err != nil || d != once {
			t.Fatalf("new key %d of %d: %+v, %v; want %+v", i, killMaxKeys, d, err, once)
		}
	}
	if d, err := keyed.AcquireAt("one too many", 1, later); !errors.Is(err, librate.ErrTableFull) {
		t.Errorf("a new key in the full table: %+v, %v; want ErrTableFull", d, err)
	}
	want := librate.Decision{Allowed: true, Limit: 2, ResetAfter: time.Second}
	if d, err := keyed.AcquireAt("after-0", 1, later); err != nil || d != want {
		t.Errorf("a known key in the full table: %+v, %v; want %+v", d, err, want)
	}
}
