// Command shared-keyed is an HTTP service that runs as several processes, as prefork
// workers or replicas do, with one per-IP limit across all of them: each client address
// gets 5 requests a minute from the processes together, because they keep the per-IP
// table in one file that every process maps. Run two, from this module's directory,
// after `cargo build --release` at the repository root:
//
//	go run ./shared-keyed -port 8081 &    # pid 4242 listening on http://127.0.0.1:8081/
//	go run ./shared-keyed -port 8082 &    # pid 4243 listening on http://127.0.0.1:8082/
//	for port in 8081 8082 8081 8082 8081 8082; do
//		curl -s -o /dev/null -w '%{http_code} ' http://127.0.0.1:$port/
//	done                                  # 200 200 200 200 200 429
//
// Each process alone would have let all six through. The file is in /dev/shm (memory,
// gone at reboot); -path names another. The processes listen on 127.0.0.1 only.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// config is the limit of each client address, which every process must open the file
// with (another one is refused: librate.ErrIncompatible): GCRA, 5 a minute, bursts of 5.
var config = librate.Config{Algorithm: librate.GCRA, Limit: 5, Period: time.Minute}

// capacity is how many client addresses over or near their limit the table holds, the
// same in every process (32 bytes each, in the file).
const capacity = 100_000

func main() {
	port := flag.Int("port", 8081, "port on 127.0.0.1 (0 picks a free one)")
	path := flag.String("path", "/dev/shm/librate-example-per-ip", "the file that holds the shared per-IP table")
	flag.Parse()
	// Every process opens the same file: the first creates it, the others attach.
	perIP, err := librate.OpenKeyed(*path, config, capacity)
	if err != nil {
		log.Fatal(err)
	}
	defer perIP.Close()
	// The middleware keys on the remote IP, as with a table of the process's own.
	m, err := librate.NewMiddleware(perIP, librate.MiddlewareOptions{})
	if err != nil {
		log.Fatal(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "hello from pid %d\n", os.Getpid())
	})
	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("pid %d listening on http://%s/\n", os.Getpid(), listener.Addr())
	log.Fatal(http.Serve(listener, m.Wrap(hello)))
}
