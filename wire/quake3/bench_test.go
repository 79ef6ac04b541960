package quake3

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// The benchmarks run the decoder beside a baseline in the same run: the
// decoder most Go code reaches for first (strings.Split, strings.Fields, strconv), reading
// the same answer into the same fields. Report the ratio of the two ns/op.

type naiveResponse struct {
	Vars    map[string]string
	Players []naivePlayer
}

type naivePlayer struct {
	Score, Ping int
	Name        string
}

var errNaive = errors.New("baseline: malformed")

func (r *naiveResponse) decode(b []byte) error {
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "\xff\xff\xff\xff") {
		return errNaive
	}
	kv := strings.Split(strings.TrimPrefix(lines[1], `\`), `\`)
	if len(kv)%2 != 0 {
		return errNaive
	}
	r.Vars = make(map[string]string, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		r.Vars[kv[i]] = kv[i+1]
	}
	r.Players = r.Players[:0]
	for _, line := range lines[2:] {
		if line == "" {
			continue
		}
		// score ping "name", and DarkPlaces' team after the name.
		q, lq := strings.IndexByte(line, '"'), strings.LastIndexByte(line, '"')
		f := strings.Fields(line[:max(q, 0)])
		if q < 0 || lq <= q || len(f) < 2 {
			return errNaive
		}
		score, err1 := strconv.Atoi(f[0])
		ping, err2 := strconv.Atoi(f[1])
		name, err3 := strconv.Unquote(line[q : lq+1])
		if err1 != nil || err2 != nil || err3 != nil {
			return errNaive
		}
		r.Players = append(r.Players, naivePlayer{Score: score, Ping: ping, Name: name})
	}
	return nil
}

func benchDecode(b *testing.B, vector string) {
	v := vectors(b)[vector].Bytes
	var r Response
	var base naiveResponse
	if err := base.decode(v); err != nil || r.Decode(v) != nil || len(base.Vars) != len(r.Vars) || len(base.Players) != len(r.Players) {
		b.Fatalf("the baseline does not decode what the decoder does: %d vars, %d players (%v)", len(base.Vars), len(base.Players), err)
	}
	for _, c := range []struct {
		name string
		run  func() error
	}{{"wire", func() error { return r.Decode(v) }}, {"baseline", func() error { return base.decode(v) }}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(v)))
			for b.Loop() {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeStatus(b *testing.B)           { benchDecode(b, "status-openarena") }
func BenchmarkDecodeStatusDarkPlaces(b *testing.B) { benchDecode(b, "status-darkplaces") }
