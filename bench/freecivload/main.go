// Command freecivload measures the Freeciv guard's pass-through throughput:
// a client streams a JOIN_REQ and then well-formed packets through
//
//   - proxy: a plain caddy-l4 proxy route, and
//   - guard: the freeciv matcher, freeciv_guard and proxy,
//
// to the same TCP sink, in interleaved rounds, and the MB/s of each are
// reported with their ratio. (The splitter's and decompressor's own
// throughput are Go benchmarks: go test -bench . ./wire/freeciv/.) Run it
// with
//
//	go run ./bench/freecivload
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
	"github.com/gamegate/gamegate/wire/freeciv"
)

func main() {
	duration := flag.Duration("duration", 3*time.Second, "streaming time per target per round")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	size := flag.Int("size", 256, "body bytes per packet")
	conns := flag.Int("conns", 4, "client connections at once")
	flag.Parse()

	sink, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		benchutil.Fatal(err)
	}
	var sunk atomic.Int64
	go func() {
		for {
			c, err := sink.Accept()
			if err != nil {
				return
			}
			go func() {
				n, _ := io.Copy(io.Discard, c)
				sunk.Add(n)
				c.Close()
			}()
		}
	}()
	proxyAddr, guardAddr := benchutil.FreeAddr("tcp"), benchutil.FreeAddr("tcp")
	if err := benchutil.StartCaddy(fmt.Sprintf(`{
	layer4 {
		%s {
			route {
				proxy %s
			}
		}
		%s {
			@freeciv freeciv
			route @freeciv {
				freeciv_guard
				proxy %s
			}
		}
	}
}
`, proxyAddr, sink.Addr(), guardAddr, sink.Addr())); err != nil {
		benchutil.Fatal(err)
	}
	defer caddy.Stop() //nolint:errcheck

	join, _ := (&freeciv.JoinReq{Username: []byte("load"), Capability: []byte("+Freeciv-3.0-network"), Major: 3, Patch: 6}).AppendTo(nil)
	var stream []byte
	for len(stream) < 64<<10 {
		stream, _ = freeciv.AppendPacket(stream, 1, 9, make([]byte, *size))
	}

	run := func(addr string, d time.Duration) float64 {
		before := sunk.Load()
		start := time.Now()
		done := make(chan int64, *conns)
		for range *conns {
			go func() {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					benchutil.Fatal(err)
				}
				var sent int64
				if _, err := c.Write(join); err != nil {
					benchutil.Fatal(err)
				}
				for time.Since(start) < d {
					n, err := c.Write(stream)
					sent += int64(n)
					if err != nil {
						benchutil.Fatal(fmt.Errorf("%s: %w", addr, err))
					}
				}
				c.Close()
				done <- sent
			}()
		}
		var sent int64
		for range *conns {
			sent += <-done
		}
		// Wait for the sink to have everything that was sent.
		for deadline := time.Now().Add(10 * time.Second); sunk.Load()-before < sent+int64(*conns*len(join)) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		return float64(sunk.Load()-before) / time.Since(start).Seconds() / 1e6
	}
	run(proxyAddr, 300*time.Millisecond)
	run(guardAddr, 300*time.Millisecond)
	var proxyMB, guardMB float64
	for range *rounds {
		proxyMB += run(proxyAddr, *duration)
		guardMB += run(guardAddr, *duration)
	}
	proxyMB /= float64(*rounds)
	guardMB /= float64(*rounds)
	fmt.Printf("%d connections streaming %d-byte packets, %d rounds × %v per target\n", *conns, *size+3, *rounds, *duration)
	fmt.Printf("proxy                 %8.1f MB/s\n", proxyMB)
	fmt.Printf("freeciv_guard + proxy %8.1f MB/s   ratio %.2f×\n", guardMB, guardMB/proxyMB)
}
