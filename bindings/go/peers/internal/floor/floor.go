// Package floor is what the benchmarks hold librate against besides its peers: the least
// an exact limiter whose state is one word can cost through cgo. Every admission on one
// limiter writes that word, so goroutines on several cores hand its cache line from core
// to core on every call; Swap does that and nothing else (a clock read and one swap of
// a shared word, across one cgo crossing), with none of a limiter's rule or checks.
package floor

/*
#include <stdint.h>
#include <time.h>

// The word every Swap writes, alone on its cache lines.
static _Alignas(128) uint64_t floor_word[16];

// The cheapest clock there is: the TSC unconverted on x86-64, CLOCK_MONOTONIC elsewhere.
#if defined(__x86_64__)
#include <x86intrin.h>
static uint64_t floor_clock(void) { return __rdtsc(); }
#else
static uint64_t floor_clock(void) {
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}
#endif

// An idle GCRA admission's write, max(word, now) + 1, swapped in as librate swaps it.
static void floor_swap(void) {
	uint64_t now = floor_clock();
	uint64_t seen = __atomic_load_n(&floor_word[0], __ATOMIC_RELAXED);
	uint64_t next;
	do {
		next = (seen > now ? seen : now) + 1;
	} while (!__atomic_compare_exchange_n(&floor_word[0], &seen, next, 1, __ATOMIC_RELAXED,
	                                      __ATOMIC_RELAXED));
}

#cgo noescape floor_swap
#cgo nocallback floor_swap
*/
import "C"

// Swap reads the clock and swaps one word that every caller shares, in one cgo crossing.
func Swap() {
	C.floor_swap()
}
