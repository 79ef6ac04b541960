package testcaddy

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitSocketsSettled waits until no local address has both a listening
// socket (TCP in LISTEN, unconnected UDP) of this process that was open
// before the reload (before, from listeningSockets) and one opened since.
// (A configuration may hold several sockets on one address itself: the
// gamegate app opens one SO_REUSEPORT socket per reader.)
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
func waitSocketsSettled(t testing.TB, before map[string]string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		dup, err := sharedAddrs(before)
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

// sharedAddrs lists the local addresses (as /proc/net writes them) that
// have a listening socket of this process from before and one opened since.
func sharedAddrs(before map[string]string) ([]string, error) {
	now, err := listeningSockets()
	if err != nil {
		return nil, err
	}
	old, fresh := map[string]bool{}, map[string]bool{}
	for inode, addr := range now {
		if _, ok := before[inode]; ok {
			old[addr] = true
		} else {
			fresh[addr] = true
		}
	}
	var dup []string
	for addr := range old {
		if fresh[addr] {
			dup = append(dup, addr)
		}
	}
	return dup, nil
}

// listeningSockets maps the inode of each listening socket of this process
// to its local address (as /proc/net writes it, after the protocol).
func listeningSockets() (map[string]string, error) {
	mine, err := socketInodes()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
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
			out[fields[9]] = proto.file + " " + fields[1]
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
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
	return inodes, nil
}
