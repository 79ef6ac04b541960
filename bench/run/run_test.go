package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
)

// TestMain lets the QoS workloads start this test binary again as their
// clients.
func TestMain(m *testing.M) {
	benchutil.Child()
	os.Exit(m.Run())
}

// bench/run's quickest run writes a page with every workload's section and
// a chart for each that is well-formed SVG. It asserts the page's
// structure, never a figure: the machine may be shared.
func TestQuickRunWritesEveryWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every workload briefly")
	}
	dir := t.TempDir()
	path, err := Run(Options{Quick: true, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Benchmarks", "| CPU |", "| Go |", "| commit |", "load average (1, 5, 15 min) before", "## Summary"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The baselines outside Go are on the page where they can run.
	baselines := map[string]string{"cc": "| C server (recvmmsg/sendmmsg), 1 thread |",
		"turnserver": "| coturn ", "go": "| pion/turn v"}
	for program, row := range baselines {
		if _, err := exec.LookPath(program); err != nil {
			continue
		}
		if !bytes.Contains(page, []byte(row)) {
			t.Errorf("%s is installed, but the page has no row %q", program, row)
		}
	}
	titles := map[string]string{"qos": "QoS echo under load", "qos-rate": "QoS echo at a fixed rate", "qos-one": "QoS echo, one request in flight",
		"relay": "Relay forwarding", "a2s": "A2S shield", "dgram": "dgram's echo benchmark",
		"discovery": "Discovery", "game-query": "Cached game query", "server-list": "Server list"}
	if len(titles) != len(workloadIDs) {
		t.Fatalf("the test knows %d workloads, bench/run runs %d", len(titles), len(workloadIDs))
	}
	for _, id := range workloadIDs {
		if !bytes.Contains(page, []byte("\n## "+titles[id])) {
			t.Errorf("the page has no section for %s (%q)", id, titles[id])
		}
		link := "](bench/charts/" + id + ".svg)"
		if !bytes.Contains(page, []byte(link)) {
			t.Errorf("the page does not show %s's chart (%s)", id, link)
		}
		checkSVG(t, filepath.Join(dir, "bench", "charts", id+".svg"))
	}
}

// checkSVG fails unless file is well-formed XML whose root is an svg
// element in the SVG namespace with at least one bar or line drawn.
func checkSVG(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Error(err)
		return
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	var root *xml.StartElement
	shapes := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Errorf("%s: %v", file, err)
			return
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == nil {
				root = &se
			}
			if se.Name.Local == "rect" || se.Name.Local == "line" {
				shapes++
			}
		}
	}
	if root == nil || root.Name.Local != "svg" || root.Name.Space != "http://www.w3.org/2000/svg" {
		t.Errorf("%s: the root is %v, want an svg element", file, root)
	}
	if shapes < 3 || !strings.Contains(string(b), "</svg>") {
		t.Errorf("%s: %d shapes drawn", file, shapes)
	}
}
