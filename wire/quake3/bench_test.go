package quake3

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// The benchmarks run the decoder beside a baseline in the same run: the
// decoder most Go code reaches for first (strings.Split, strings.Fields, strconv), reading
// the same answer into the same fields. Report the ratio of the two ns/op
// (testutil.BenchDecodeBeside).

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

func BenchmarkDecodeStatus(b *testing.B) { benchDecode(b, "status-openarena") }

func BenchmarkDecodeStatusDarkPlaces(b *testing.B) { benchDecode(b, "status-darkplaces") }

func benchDecode(b *testing.B, vector string) {
	var r Response
	var base naiveResponse
	testutil.BenchDecodeBeside(b, testutil.Vectors(b)[vector].Bytes, r.Decode, base.decode)
	if len(base.Vars) != len(r.Vars) || len(base.Players) != len(r.Players) {
		b.Fatalf("the baseline read %d vars and %d players, the decoder %d and %d", len(base.Vars), len(base.Players), len(r.Vars), len(r.Players))
	}
}
