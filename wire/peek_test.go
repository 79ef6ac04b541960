package wire_test

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire/a2s"
	"github.com/gamegate/gamegate/wire/gqp"
	"github.com/gamegate/gamegate/wire/master"
	"github.com/gamegate/gamegate/wire/qos"
	"github.com/gamegate/gamegate/wire/relay"
)

// peeks are the cheap tests that choose a protocol for a datagram on a
// shared UDP port, by the package whose messages each one claims. The
// master's is every kind master.Peek names, wider than what a master
// serves.
var peeks = map[string]func([]byte) bool{
	"gqp":    gqp.LooksLikeQuery,
	"qos":    qos.LooksLikeRequest,
	"relay":  relay.LooksLikeMessage,
	"a2s":    a2s.LooksLikeRequest,
	"master": func(b []byte) bool { return master.Peek(b) != master.KindNone },
}

// family lists, for a package's messages, the peeks that may claim them:
// their own, and the master's for Quake 3 messages, which are the master's
// own protocol.
var family = map[string][]string{
	"gqp": {"gqp"}, "qos": {"qos"}, "relay": {"relay"}, "a2s": {"a2s"},
	"master": {"master"}, "quake3": {"master"},
	"freeciv": nil, "bedrock": nil, "minecraft": nil, "unreal2": nil, "quake2": nil, "doom3": nil,
	"mumbleping": nil, "openttd": nil, "teeworlds": nil,
}

// otherMessages returns every valid message of the package's test vectors,
// each also with its last byte replaced by EOT (0x04), the way a challenge
// or a timestamp ends one time in 256, and with EOT appended.
//
// Vectors of the kinds in quake3Kinds are Quake 3 messages in another
// package (FiveM's getinfo answer is Quake 3's infoResponse, the master's
// own): they are returned apart, in q3.
func otherMessages(t *testing.T, pkg string) (out, q3 [][]byte) {
	for _, v := range testutil.ReadVectors(t, filepath.Join(pkg, "testdata", "vectors.txt")) {
		if strings.HasPrefix(v.Kind, "bad") || len(v.Bytes) == 0 {
			continue
		}
		b := v.Bytes
		eot := append([]byte(nil), b...)
		eot[len(eot)-1] = gqp.EOT
		msgs := [][]byte{b, eot, append(append([]byte(nil), b...), gqp.EOT)}
		if quake3Kinds[v.Kind] {
			q3 = append(q3, msgs...)
			continue
		}
		out = append(out, msgs...)
	}
	return out, q3
}

// quake3Kinds are the vector kinds of other packages that are Quake 3
// messages.
var quake3Kinds = map[string]bool{"fivem": true}

// encoded returns messages from the packages' encoders whose variable
// numbers end in 0x04: A2S challenges and a QoS client's timestamp.
func encoded(t *testing.T) map[string][][]byte {
	out := map[string][][]byte{}
	for _, typ := range []a2s.Type{a2s.TypeInfoRequest, a2s.TypePlayerRequest, a2s.TypeRulesRequest, a2s.TypeChallengeRequest} {
		for _, ch := range []int32{0x04414243, 0x04202020, 0x04FFFFFF} {
			q := a2s.Request{Type: typ, Challenge: ch, HasChallenge: true}
			b, err := q.AppendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			out["a2s"] = append(out["a2s"], b)
		}
	}
	custom := binary.LittleEndian.AppendUint64([]byte{3, 0xef, 0xbe}, 0x0400_0100_0000_0000)
	for _, title := range []string{"QoS request", "A", "ping"} {
		r := qos.Request{Title: []byte(title), Custom: custom}
		b, err := r.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		out["qos"] = append(out["qos"], b)
	}
	return out
}

// TestPeeksClaimOnlyTheirOwn checks that no protocol's peek claims another
// protocol's valid message, so that a shared port sends each datagram to
// the protocol that sent it whatever order its protocols are listed in.
func TestPeeksClaimOnlyTheirOwn(t *testing.T) {
	msgs := encoded(t)
	for pkg := range family {
		own, q3 := otherMessages(t, pkg)
		msgs[pkg] = append(msgs[pkg], own...)
		msgs["quake3"] = append(msgs["quake3"], q3...)
	}
	for pkg, list := range msgs {
		for name, peek := range peeks {
			allowed := false
			for _, f := range family[pkg] {
				allowed = allowed || f == name
			}
			if allowed {
				continue
			}
			for _, b := range list {
				if peek(b) {
					t.Errorf("the %s peek claims a %s message: % x", name, pkg, b)
				}
			}
		}
	}
	// The own peek claims the package's valid requests: the check above is
	// not vacuous.
	for pkg, want := range map[string][]byte{
		"gqp":   []byte("ping\x04"),
		"qos":   msgs["qos"][0],
		"a2s":   msgs["a2s"][0],
		"relay": msgs["relay"][0],
	} {
		if !peeks[pkg](want) {
			t.Errorf("the %s peek refuses its own message % x", pkg, want)
		}
	}
}
