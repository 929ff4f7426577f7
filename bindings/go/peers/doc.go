// Package peers holds the benchmarks that pit librate against its Go peers
// (golang.org/x/time/rate) in the same run. It is a module of its own, so that the
// librate module needs nothing beyond the standard library.
package peers
