// Package hook lends the tests of librate's subpackages what package librate keeps out
// of its API. Package librate sets every hook when it is initialized, so any package
// importing librate finds them set. (The hooks are typed any: this package cannot name
// librate's types, since librate imports it.)
package hook

// LimiterAt is a
//
//	func(l *librate.Limiter, n int, nowNs, maxWaitNs uint64, reserve bool) (librate.Decision, error)
//
// that is l.AcquireAt (reserve false; maxWaitNs unused) or l.ReserveAt at an instant
// anywhere on librate's uint64 timeline, which the methods, taking a time.Duration, stop
// short of at 2^63 ns: the Redis tier's tests compare decisions up to 2^64.
var LimiterAt any
