// Command shared shows one limit held across processes: every process that opens the
// same file with the same configuration draws on one budget of 5 requests an hour.
// Run it twice, from this module's directory, after `cargo build --release` at the
// repository root:
//
//	go run ./shared    # pid 4242: 5 of 7 requests admitted
//	go run ./shared    # pid 4243: 0 of 7 requests admitted (the first run took them)
//
// Two runs at the same time share the budget the same way, 5 between them. The file is
// in /dev/shm (memory, gone at reboot); -path names another.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// config is the limit every process must open the file with: another one is refused
// (librate.ErrIncompatible). GCRA, 5 an hour, bursts of 5.
var config = librate.Config{Algorithm: librate.GCRA, Limit: 5, Period: time.Hour}

// tryRequests opens the limiter kept in the file at path (creating it if it is
// missing) and makes n requests on it: how many were admitted.
func tryRequests(path string, n int) (int, error) {
	limiter, err := librate.Open(path, config)
	if err != nil {
		return 0, err
	}
	defer limiter.Close()
	admitted := 0
	for range n {
		if limiter.Allow() {
			admitted++
		}
	}
	return admitted, nil
}

func main() {
	path := flag.String("path", "/dev/shm/librate-example", "the file that holds the shared limiter")
	flag.Parse()
	admitted, err := tryRequests(*path, 7)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("pid %d: %d of 7 requests admitted\n", os.Getpid(), admitted)
}
