package serverlist

import (
	"bytes"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/handlers/query"
)

// A list's answers are encoded once for each query and client class, and
// served as they are until what they were made of changes: the master's
// servers, their statuses, the gateways and their statuses, the host
// names' lookups (each counts its changes in a generation), or the clock
// reaches a status due for a refresh or a server due to expire. The
// first request after that builds the answer again (and so starts the
// refreshes due), as every request did before.
//
// The answers held are bounded in number and bytes whatever queries
// clients send: past maxAnswers, or maxAnswerBytes in all, one held is
// dropped for each built; a query whose texts are longer than
// maxFilterText, or an answer larger than an eighth of maxAnswerBytes, is
// built for its request alone.
const (
	maxAnswers     = 256
	maxAnswerBytes = 16 << 20
	maxFilterText  = 256
)

// answer is one encoded page with its validators, and the same page
// gzipped (nil for a small one) with its own: a browser, which accepts
// gzip, is sent about a sixth of the bytes, compressed once per answer
// rather than per request.
type answer struct {
	body          []byte
	etag          string
	contentLength string

	gz       []byte
	gzETag   string
	gzLength string
}

// size is what a held answer costs.
func (a *answer) size() int { return len(a.body) + len(a.gz) }

// answerKey is what an answer depends on besides the list's inputs.
type answerKey struct {
	class  visibility
	filter Filter
}

// visibility is the class of clients shown the same servers: those
// master.Visible shows loopback servers to, private ones, and the others.
type visibility uint8

const (
	visiblePublic visibility = iota
	visiblePrivate
	visibleLoopback
	visibilities
)

// classAddrs stand for their classes' clients: master.Visible decides by
// a client's scope alone.
var classAddrs = [visibilities]netip.Addr{
	visiblePublic:   netip.IPv4Unspecified(),
	visiblePrivate:  netip.AddrFrom4([4]byte{10, 0, 0, 1}),
	visibleLoopback: netip.AddrFrom4([4]byte{127, 0, 0, 1}),
}

// classOf is client's visibility class.
func classOf(client netip.Addr) visibility {
	for _, c := range []visibility{visibleLoopback, visiblePrivate} {
		if master.Visible(classAddrs[c], client) {
			return c
		}
	}
	return visiblePublic
}

// inputs are the generations of what a list is made of.
type inputs struct {
	registry, statuses, hosts uint64
	gateways                  []*query.Gateway
	gatewayGenerations        uint64 // their sum: each only grows
}

func (a *inputs) equal(b *inputs) bool {
	return a.registry == b.registry && a.statuses == b.statuses && a.hosts == b.hosts &&
		a.gatewayGenerations == b.gatewayGenerations && slices.Equal(a.gateways, b.gateways)
}

// answers are a list's answers for one generation of its inputs.
type answers struct {
	mu      sync.Mutex
	in      inputs
	until   time.Time // zero: no time bound
	servers [visibilities][]Server
	built   [visibilities]bool
	byKey   map[answerKey]*answer
	bytes   int
}

// inputs reads the generations of l's inputs, and the gateways.
func (l *List) inputs() inputs {
	in := inputs{registry: l.cfg.Registry.Generation(), statuses: l.cfg.Statuses.Generation(),
		hosts: l.hostsGeneration.Load(), gateways: l.cfg.Gateways()}
	for _, gw := range in.gateways {
		in.gatewayGenerations += gw.Generation()
	}
	return in
}

// answer returns the answer to f for clients of class, built now unless
// one built from the current inputs is held.
func (l *List) answer(class visibility, f Filter) (*answer, error) {
	in := l.inputs() // read before what they count is
	now := l.cfg.Now()
	a := &l.answers
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.in.equal(&in) || !a.until.IsZero() && !now.Before(a.until) {
		clear(a.byKey)
		a.servers, a.built, a.bytes, a.until, a.in = [visibilities][]Server{}, [visibilities]bool{}, 0, time.Time{}, in
	}
	key := answerKey{class, f}
	cacheable := len(f.Game)+len(f.Map)+len(f.Region) <= maxFilterText
	if cacheable {
		if ans, ok := a.byKey[key]; ok {
			return ans, nil
		}
	}
	if !a.built[class] {
		var h horizon
		a.servers[class] = l.servers(classAddrs[class], true, &h)
		a.built[class] = true
		if !h.at.IsZero() && (a.until.IsZero() || h.at.Before(a.until)) {
			a.until = h.at
		}
	}
	servers := a.servers[class]
	body, err := l.encode(f.Apply(slices.Clone(servers)), servers)
	if err != nil {
		return nil, err
	}
	ans := &answer{body: body, etag: cache.ETag(body, false), contentLength: strconv.Itoa(len(body))}
	if cacheable && len(body) <= l.maxAnswerBytes/8 {
		ans.body = bytes.Clone(body) // without the room encode left
		if ans.gz = gzipped(body); ans.gz != nil {
			ans.gzETag, ans.gzLength = cache.ETag(ans.gz, false), strconv.Itoa(len(ans.gz))
		}
		for k, old := range a.byKey { // any: a map's order is random
			if len(a.byKey) < maxAnswers && a.bytes+ans.size() <= l.maxAnswerBytes {
				break
			}
			a.bytes -= old.size()
			delete(a.byKey, k)
		}
		if a.byKey == nil {
			a.byKey = make(map[answerKey]*answer)
		}
		a.byKey[key] = ans
		a.bytes += ans.size()
	}
	return ans, nil
}

// heldAnswers is how many answers are held and their bytes.
func (l *List) heldAnswers() (n, bytes int) {
	l.answers.mu.Lock()
	defer l.answers.mu.Unlock()
	return len(l.answers.byKey), l.answers.bytes
}
