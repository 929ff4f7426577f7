package librateredis_test

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkRedisClient is the client's own work for one key's decision, each contender's
// (as BenchmarkRedis's conn1/single calls it), apart from the network and the server,
// whose wake-ups and scheduling make most of a real call's client CPU and vary from run
// to run. Each contender's connection goes to a real server for the handshake, the
// script's loading and one decision, whose reply it records; from then on it answers
// every command at once, in the caller's goroutine, with that reply's bytes. So ns/op,
// B/op and allocs/op are a call's work in go-redis and the library: building the
// command, writing it, reading and parsing the reply, and the library's reading of it.
func BenchmarkRedisClient(b *testing.B) {
	addr := startServer(b).addr
	for _, contender := range benchContenders {
		b.Run(contender.name, func(b *testing.B) {
			var conn *replayConn
			client := redis.NewClient(&redis.Options{
				Addr: addr, PoolSize: 1, ContextTimeoutEnabled: true,
				Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
					server, err := (&net.Dialer{}).DialContext(ctx, network, addr)
					conn = &replayConn{Conn: server}
					return conn, err
				},
			})
			defer client.Close()
			decide := contender.new(b, client)
			keys := []string{"user-0"}
			call := func() {
				if admitted, err := decide(keys); err != nil || admitted != 1 {
					b.Fatalf("%s: %d admitted, %v", contender.name, admitted, err)
				}
			}
			// The first call dials and loads the script; the second's reply is recorded.
			call()
			conn.recording = true
			call()
			conn.recording, conn.replaying = false, true
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
		})
	}
}

// replayConn is a connection to a server that records the bytes it reads while
// recording, and while replaying answers each write with them, without the server.
type replayConn struct {
	net.Conn
	recording, replaying bool
	reply, pending       []byte
}

func (c *replayConn) Write(p []byte) (int, error) {
	if !c.replaying {
		return c.Conn.Write(p)
	}
	c.pending = append(c.pending, c.reply...)
	return len(p), nil
}

func (c *replayConn) Read(p []byte) (int, error) {
	if !c.replaying {
		n, err := c.Conn.Read(p)
		if c.recording {
			c.reply = append(c.reply, p[:n]...)
		}
		return n, err
	}
	if len(c.pending) == 0 {
		// Nothing written is waiting for its reply: a read the replay cannot answer.
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}
