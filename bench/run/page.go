package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
)

// Page is BENCHMARKS.md: the machine, and every workload measured.
type Page struct {
	Machine               Machine
	Quick                 bool
	Started, Finished     time.Time
	LoadBefore, LoadAfter string
	Workloads             []*benchutil.Workload
	// Notes are remarks on the whole run (a baseline left out), shown
	// before the summary.
	Notes []string
}

// Machine is what the figures were measured on.
type Machine struct {
	CPU    string
	Cores  int
	Go     string
	Kernel string
	Commit string
}

// ChartDir is where the charts go, relative to the page.
const ChartDir = "bench/charts"

func machine() Machine {
	m := Machine{CPU: "unknown", Cores: runtime.NumCPU(), Go: runtime.Version(), Kernel: "unknown", Commit: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.Join(strings.Fields(v), " ")
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(out)) > 0 {
			m.Commit += " with uncommitted changes"
		}
	}
	return m
}

// loadAverages returns the 1, 5 and 15 minute load averages.
func loadAverages() string {
	if l := benchutil.LoadAverages(); l != nil {
		return strings.Join(l, ", ")
	}
	return "unknown"
}

// Write writes BENCHMARKS.md into dir and the charts into dir/ChartDir,
// and returns the page's path.
func (p *Page) Write(dir string) (string, error) {
	charts := filepath.Join(dir, ChartDir)
	if err := os.MkdirAll(charts, 0o755); err != nil {
		return "", err
	}
	var b bytes.Buffer
	p.markdown(&b)
	for _, w := range p.Workloads {
		svg, err := chart(w)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(charts, w.ID+".svg"), svg, 0o644); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, "BENCHMARKS.md")
	return path, os.WriteFile(path, b.Bytes(), 0o644)
}

func (p *Page) markdown(b *bytes.Buffer) {
	m := p.Machine
	fmt.Fprintf(b, "# Benchmarks\n\n")
	if p.Quick {
		fmt.Fprintf(b, "**A quick run** (`-quick`: one short round of each workload). It checks that every workload runs; its figures mean nothing.\n\n")
	}
	fmt.Fprintf(b, "Written by `go run ./bench/run` on %s UTC in %v.\n\n", p.Started.UTC().Format("2006-01-02 15:04"),
		p.Finished.Sub(p.Started).Round(time.Second))
	b.WriteString(`Every workload measures gamegate beside its baseline in the same run, in rounds: each
target once per round, the order reversed every other round, a pause between rounds, so that
a change of the machine's load hits both. A ratio is a target's figure over its baseline's
in the same round; the page gives the median and the range (lowest–highest) over the rounds.
The load generators run on the same CPUs as the servers, over loopback, in a process of their
own (but for QoS with one request in flight and dgram's benchmarks, whose clients run beside the
servers), so absolute figures say more about the machine than about gamegate: compare the ratios. On a loaded machine wall-clock throughput mostly measures how many threads a path
keeps runnable; read the load averages below before the figures.

`)
	fmt.Fprintf(b, "| machine | |\n|---|---|\n")
	fmt.Fprintf(b, "| CPU | %s, %d cores (as Go sees them) |\n", mdEscape(m.CPU), m.Cores)
	fmt.Fprintf(b, "| system | %s |\n| Go | %s |\n| commit | %s |\n", m.Kernel, m.Go, m.Commit)
	fmt.Fprintf(b, "| load average (1, 5, 15 min) before | %s |\n| load average (1, 5, 15 min) after | %s |\n\n", p.LoadBefore, p.LoadAfter)

	for _, n := range p.Notes {
		fmt.Fprintf(b, "%s\n\n", n)
	}
	fmt.Fprintf(b, "## Summary\n\n| workload | target | over | ratio: median (range) | goal |\n|---|---|---|---|---|\n")
	for _, w := range p.Workloads {
		for _, c := range w.Comparisons {
			xs, _ := w.Ratios(c)
			fmt.Fprintf(b, "| [%s](#%s) | %s | %s | %s | %s |\n", w.Title, anchor(w.Title), w.Target(c.Target).Label,
				over(w, c), benchutil.FormatSpread(xs), goal(c, xs))
		}
	}
	b.WriteString("\n" + baselinesText + "\n\n")
	for _, w := range p.Workloads {
		fmt.Fprintf(b, "## %s\n\n%s\n\n", w.Title, strings.TrimSpace(w.About))
		fmt.Fprintf(b, "![%s: ratios, median and range](%s/%s.svg)\n\n", w.Title, ChartDir, w.ID)
		fmt.Fprintf(b, "| target | over | ratio: median (range) | goal |\n|---|---|---|---|\n")
		for _, c := range w.Comparisons {
			xs, _ := w.Ratios(c)
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", w.Target(c.Target).Label, over(w, c), benchutil.FormatSpread(xs), goal(c, xs))
		}
		latency := false
		for _, t := range w.Targets {
			latency = latency || t.P50 > 0
		}
		b.WriteString("\n| target | " + w.Unit + ": median (range) |")
		sep := "|---|---|"
		if latency {
			b.WriteString(" latency p50 | latency p99 |")
			sep += "---|---|"
		}
		b.WriteString(" other |\n" + sep + "---|\n")
		for _, t := range w.Targets {
			med, lo, hi := benchutil.Spread(t.Rates)
			fmt.Fprintf(b, "| %s | %.0f (%.0f–%.0f) |", t.Label, med, lo, hi)
			if latency {
				fmt.Fprintf(b, " %s | %s |", micros(t.P50), micros(t.P99))
			}
			fmt.Fprintf(b, " %s |\n", t.Extra)
		}
		fmt.Fprintf(b, "\nLoad average (1 min) before the rounds and after each: %s. ", strings.Join(w.Loads, ", "))
		fmt.Fprintf(b, "Rounds: %d. Alone: `%s`.\n\n", len(w.Targets[0].Rates), w.Command)
		for _, n := range w.Notes {
			fmt.Fprintf(b, "%s\n\n", n)
		}
	}
}

// over names a comparison's baseline, and what is divided where it is not
// the rate.
func over(w *benchutil.Workload, c benchutil.Comparison) string {
	switch c.Metric {
	case benchutil.P99:
		return w.Target(c.Baseline).Label + " (p99: the baseline's over the target's)"
	case benchutil.CPU:
		return w.Target(c.Baseline).Label + " (CPU per message: the baseline's over the target's)"
	}
	return w.Target(c.Baseline).Label
}

func goal(c benchutil.Comparison, xs []float64) string {
	if c.Goal == 0 {
		return ""
	}
	m, _, _ := benchutil.Spread(xs)
	verdict := "met"
	if m < c.Goal {
		verdict = "**not met**"
	}
	return fmt.Sprintf("≥ %.2f×: %s", c.Goal, verdict)
}

func micros(us float64) string {
	if us <= 0 {
		return "–"
	}
	if us >= 10000 {
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}

// anchor is the fragment GitHub gives a heading.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// chart draws a workload's ratios as an SVG: a bar to each comparison's
// median, a line over its range, a dashed line at 1.0× and a mark at the
// goal.
func chart(w *benchutil.Workload) ([]byte, error) {
	const (
		width, left, right, top, row, bar = 820.0, 390.0, 40.0, 44.0, 36.0, 14.0
	)
	type line struct {
		label, over string
		m, lo, hi   float64
		goal        float64
		met, hasAny bool
	}
	var lines []line
	scale := 1.25
	for _, c := range w.Comparisons {
		xs, err := w.Ratios(c)
		if err != nil {
			return nil, err
		}
		m, lo, hi := benchutil.Spread(xs)
		lines = append(lines, line{label: w.Target(c.Target).Label, over: "over " + over(w, c),
			m: m, lo: lo, hi: hi, goal: c.Goal, met: m >= c.Goal, hasAny: len(xs) > 0})
		scale = math.Max(scale, hi*1.1)
	}
	scale = math.Ceil(scale*4) / 4
	height := top + row*float64(len(lines)) + 36
	plot := width - left - right
	x := func(v float64) float64 { return left + plot*v/scale }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<title>%s</title>`+"\n", xmlEscape(w.Title+": ratios over the baseline, median and range"))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", xmlEscape(w.Title))
	fmt.Fprintf(&b, `<text x="10" y="36" fill="#555555">ratio over the baseline in the same round: bar at the median, line over the range</text>`+"\n")
	bottom := top + row*float64(len(lines))
	for v := 0.0; v <= scale+1e-9; v += 0.25 {
		stroke := "#e0e0e0"
		if math.Mod(v, 1) == 0 {
			stroke = "#c0c0c0"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x(v), top-4, x(v), bottom, stroke)
		if math.Mod(v, 0.5) == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555555">%.1f×</text>`+"\n", x(v), bottom+16, v)
		}
	}
	for i, l := range lines {
		y := top + row*float64(i)
		cy := y + row/2
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-8, cy-2, xmlEscape(clip(l.label, 60)))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="10" fill="#555555">%s</text>`+"\n", left-8, cy+11, xmlEscape(clip(l.over, 72)))
		if !l.hasAny {
			continue
		}
		fill := "#4c78a8"
		if l.goal > 0 && !l.met {
			fill = "#e45756"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
			left, cy-bar/2, x(l.m)-left, bar, fill, fmt.Sprintf("%.2f× (%.2f–%.2f)", l.m, l.lo, l.hi))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222222" stroke-width="2"/>`+"\n", x(l.lo), cy, x(l.hi), cy)
		for _, v := range []float64{l.lo, l.hi} {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222222" stroke-width="2"/>`+"\n", x(v), cy-5, x(v), cy+5)
		}
		if l.goal > 0 {
			fmt.Fprintf(&b, `<path d="M%.1f %.1f l-5 -7 h10 z" fill="#222222"><title>goal %.2f×</title></path>`+"\n", x(l.goal), cy-bar/2, l.goal)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" dominant-baseline="middle" fill="#222222">%.2f×</text>`+"\n", x(l.hi)+6, cy, l.m)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222222" stroke-dasharray="4 3"/>`+"\n", x(1), top-4, x(1), bottom)
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func xmlEscape(s string) string {
	s = strings.ReplaceAll(s, "&", "&amp;")
	s = strings.ReplaceAll(s, "<", "&lt;")
	s = strings.ReplaceAll(s, ">", "&gt;")
	s = strings.ReplaceAll(s, "`", "")
	return strings.ReplaceAll(s, `"`, "&quot;")
}
