package testcaddy

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitSocketsSettled waits until no local address has two of this process's
// listening sockets (TCP in LISTEN, unconnected UDP) bound to it.
//
// Caddy binds a new configuration's listeners with SO_REUSEPORT beside the
// old ones, and caddy.Load returns once the old servers have started shutting
// down, not once their sockets are closed. Until then the kernel may hand a
// new connection or datagram to the old socket, where it is lost: the
// outgoing net/http server closes, unanswered, a connection whose request it
// reads after Shutdown began, and a closing listener resets the connections
// still in its accept queue. A real client meets this too if it connects
// during those milliseconds of a reload (Go's Transport retries an
// idempotent request only on a reused connection, not on a fresh one); it is
// Caddy's and the kernel's, not gamegate's. A test must not: it waits here
// for the old sockets to go.
func waitSocketsSettled(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		dup, err := sharedAddrs()
		if err != nil {
			t.Fatalf("reading this process's sockets: %v", err)
		}
		if len(dup) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after a reload, the previous configuration still holds %s", strings.Join(dup, ", "))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sharedAddrs lists the local addresses (as /proc/net writes them) with more
// than one listening socket of this process.
func sharedAddrs() ([]string, error) {
	mine, err := socketInodes()
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	var dup []string
	for _, proto := range []struct{ file, listening string }{
		{"tcp", "0A"}, {"tcp6", "0A"}, // TCP_LISTEN
		{"udp", "07"}, {"udp6", "07"}, // TCP_CLOSE: bound, not connected
	} {
		f, err := os.Open(filepath.Join("/proc/net", proto.file))
		if os.IsNotExist(err) {
			continue // no IPv6
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != proto.listening || !mine[fields[9]] {
				continue
			}
			key := proto.file + " " + fields[1]
			if count[key]++; count[key] == 2 {
				dup = append(dup, key)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return dup, nil
}

// socketInodes returns the inodes of this process's open sockets.
func socketInodes() (map[string]bool, error) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // closed since the directory was read
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	if len(inodes) == 0 {
		return nil, fmt.Errorf("no socket among /proc/self/fd")
	}
	return inodes, nil
}
