package qos

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"
	"time"
)

// Health probes. QoS requests are unauthenticated UDP, so whoever can forge
// a source address can get it banned, and a ban silences the server for
// that address. Discovery's health checker must not be silenced that way:
// a forged burst "from" its address would make every health check fail and
// withhold the region from every player. So the checker proves who it is
// in the custom data, which the protocol leaves to the client and the
// server echoes unchanged: after the checker's own 11 bytes (sequence,
// identifier, send time) come
//
//	"GGHP" | unix seconds u64 LE | HMAC-SHA256(key, the 23 bytes before)[:16]
//
// keyed with a secret only the checker and the engines know (ProcessProbeKey:
// drawn at random per process, so it covers the QoS servers this process
// serves). An engine that holds the key answers a valid probe whatever the
// state of its source (ban, rate, capacity) and without touching that
// state. A probe that anyone could capture (on the path) may be replayed
// only while its time is within ProbeWindow, and the answers to probes are
// themselves bounded (ProbeRate), so a replayed probe gains a forger no more
// than any other request: a response shorter than the request.

// Probe layout, after the checker's custom data.
const (
	probeMarker  = "GGHP"
	probeMACLen  = 16
	probeSigned  = customLen + len(probeMarker) + 8 // the bytes the MAC covers
	probeLen     = probeSigned + probeMACLen        // custom data of a probe
	probeKeySize = 32
)

// ProbeWindow is how far a probe's time may be from the engine's clock.
const ProbeWindow = 30 * time.Second

// ProbeRate and ProbeBurst bound the probes an engine answers as probes,
// per second and at once; past them a probe is an ordinary request. A
// health check sends a few requests per server every interval.
const (
	ProbeRate  = 100
	ProbeBurst = 1000
)

var (
	processKeyOnce sync.Once
	processKey     []byte
)

// ProcessProbeKey returns this process's probe key, drawn at random the
// first time it is asked for.
func ProcessProbeKey() []byte {
	processKeyOnce.Do(func() {
		processKey = make([]byte, probeKeySize)
		_, _ = rand.Read(processKey) // crypto/rand never fails on supported platforms
	})
	return processKey
}

// prober signs and verifies probes with one key. It is safe for concurrent
// use and allocates nothing once warm.
type prober struct{ macs sync.Pool }

type probeMAC struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

func newProber(key []byte) *prober {
	key = append([]byte(nil), key...)
	p := &prober{}
	p.macs.New = func() any { return &probeMAC{h: hmac.New(sha256.New, key)} }
	return p
}

// mac writes the MAC of signed into out.
func (p *prober) mac(out, signed []byte) {
	m := p.macs.Get().(*probeMAC)
	m.h.Reset()
	m.h.Write(signed)
	copy(out, m.h.Sum(m.sum[:0]))
	p.macs.Put(m)
}

// sign completes custom, whose first customLen bytes are set and which is
// at least probeLen long, as a probe sent at now.
func (p *prober) sign(custom []byte, now time.Time) {
	copy(custom[customLen:], probeMarker)
	binary.LittleEndian.PutUint64(custom[customLen+len(probeMarker):], uint64(now.Unix()))
	p.mac(custom[probeSigned:probeLen], custom[:probeSigned])
}

// verify reports whether custom is a probe signed with p's key within
// ProbeWindow of now.
func (p *prober) verify(custom []byte, now time.Time) bool {
	if len(custom) != probeLen || string(custom[customLen:customLen+len(probeMarker)]) != probeMarker {
		return false
	}
	sent := int64(binary.LittleEndian.Uint64(custom[customLen+len(probeMarker):]))
	if d := now.Unix() - sent; d > int64(ProbeWindow/time.Second) || d < -int64(ProbeWindow/time.Second) {
		return false
	}
	var want [probeMACLen]byte
	p.mac(want[:], custom[:probeSigned])
	return hmac.Equal(want[:], custom[probeSigned:probeLen])
}
