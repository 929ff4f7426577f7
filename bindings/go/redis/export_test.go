package librateredis

// The calls at a time anywhere on the scripts' uint64 timeline, for the tests that
// compare decisions up to 2^64 ns, past the time.Duration the methods take.
var (
	AcquireAtNs       = (*Limiter).acquireAtNs
	ReserveAtNs       = (*Limiter).reserveAtNs
	AcquireManyAtNs   = (*Limiter).acquireManyAtNs
	PolicyAcquireAtNs = (*Policy).acquireAtNs
)
