package testutil

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// DNSZone is what a test's DNS server knows. Names are fully qualified,
// with the final dot, in lower case.
type DNSZone struct {
	// A holds each name's IPv4 address.
	A map[string]netip.Addr
	// SRV holds each owner's records ("_minecraft._tcp.mc.example.com.").
	SRV map[string][]net.SRV
}

// DNSServer is a DNS server on loopback answering from a DNSZone: the
// resolver a test controls, so that no test asks the machine's.
type DNSServer struct {
	Addr netip.AddrPort

	mu    sync.Mutex
	asked map[string]int // questions asked, by "TYPE name"
}

// ServeDNS answers DNS questions over UDP on a fresh loopback socket from
// zone until the test ends: A and SRV records as listed, NXDOMAIN for a
// name the zone does not hold, and an empty answer for other types of a
// name it holds (the AAAA half of a lookup).
func ServeDNS(t testing.TB, zone DNSZone) *DNSServer {
	t.Helper()
	s := new(DNSServer)
	known := func(name string) bool {
		_, a := zone.A[name]
		_, srv := zone.SRV[name]
		return a || srv
	}
	s.Addr = ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		var p dnsmessage.Parser
		h, err := p.Start(req)
		if err != nil || h.Response {
			return nil
		}
		q, err := p.Question()
		if err != nil {
			return nil
		}
		name := strings.ToLower(q.Name.String())
		s.count(q.Type.String() + " " + name)
		rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
		if !known(name) {
			rh.RCode = dnsmessage.RCodeNameError
		}
		b := dnsmessage.NewBuilder(nil, rh)
		b.EnableCompression()
		if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
			return nil
		}
		rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
		switch q.Type {
		case dnsmessage.TypeA:
			if a, ok := zone.A[name]; ok && a.Is4() {
				if b.AResource(rr, dnsmessage.AResource{A: a.As4()}) != nil {
					return nil
				}
			}
		case dnsmessage.TypeSRV:
			for _, r := range zone.SRV[name] {
				target, err := dnsmessage.NewName(r.Target)
				if err != nil {
					t.Errorf("DNS zone: SRV target %q: %v", r.Target, err)
					return nil
				}
				if b.SRVResource(rr, dnsmessage.SRVResource{Priority: r.Priority, Weight: r.Weight, Port: r.Port, Target: target}) != nil {
					return nil
				}
			}
		}
		msg, err := b.Finish()
		if err != nil {
			return nil
		}
		return [][]byte{msg}
	})
	return s
}

func (s *DNSServer) count(question string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asked == nil {
		s.asked = make(map[string]int)
	}
	s.asked[question]++
}

// Asked returns how many times the question "TYPE name" was asked
// ("TypeSRV _minecraft._tcp.mc.example.com.").
func (s *DNSServer) Asked(question string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[question]
}

// Resolver returns a resolver that asks this server only, never the
// machine's.
func (s *DNSServer) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.Addr.String())
	}}
}
