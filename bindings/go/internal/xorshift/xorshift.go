// Package xorshift is Marsaglia's xorshift64: a reproducible pseudo-random stream for
// test runs and benchmark key orders, cheap enough for a benchmark's inner loop, shared
// by the librate module's tests and the peers module's benchmarks.
package xorshift

// Stream is the generator's state. Seed it non-zero: Stream(seed).
type Stream uint64

// Next is a pseudo-random number in [0, bound).
func (x *Stream) Next(bound uint64) uint64 {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return uint64(*x) % bound
}
