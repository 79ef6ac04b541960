package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// stderrMu serialises the captures of the process's standard error.
var stderrMu sync.Mutex

// deprecationsDuring runs load with the process's standard error (where
// Caddy's default logger writes) captured, and returns the deprecation
// warnings logged meanwhile (a former option name or syntax), each as its
// message and fields. What was captured is written on to standard error.
func deprecationsDuring(t *testing.T, load func()) []string {
	t.Helper()
	stderrMu.Lock()
	defer stderrMu.Unlock()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := unix.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup2(int(w.Fd()), 2); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&out, r); close(copied) }()
	func() {
		defer func() {
			_ = unix.Dup2(saved, 2)
			_ = unix.Close(saved)
			_ = w.Close()
			<-copied
			_ = r.Close()
		}()
		load()
	}()
	_, _ = os.Stderr.Write(out.Bytes())
	var got []string
	for line := range strings.Lines(out.String()) {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil || e["level"] != "warn" {
			continue
		}
		if msg, _ := e["msg"].(string); strings.HasPrefix(msg, "deprecated") {
			delete(e, "level")
			delete(e, "ts")
			delete(e, "logger")
			b, _ := json.Marshal(e)
			got = append(got, string(b))
		}
	}
	return got
}
