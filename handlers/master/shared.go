package master

import (
	"context"
	"encoding/json"
	"net/netip"
	"time"

	"go.uber.org/zap"

	"github.com/gamegate/gamegate/internal/periodic"
	"github.com/gamegate/gamegate/store"
	wire "github.com/gamegate/gamegate/wire/master"
)

// SharedStore keeps the lists of masters on several nodes (package
// redisstore's Store is one): a server registered on one node is listed
// by every node. Its limits count every node's registrations together.
type SharedStore interface {
	// RegisterServer lists or refreshes the server at addr in list with
	// value until expiry from now, unless it is new and list holds
	// maxServers, or maxPerAddress from its IP address; it returns a store
	// registration outcome (store.Registered…).
	RegisterServer(ctx context.Context, list, addr string, value []byte, expiry time.Duration, maxServers, maxPerAddress int) (int, error)
	// ServerChanges returns at most limit servers of list changed since
	// the cursor, and the cursor to read on from; more says there is
	// more to read now.
	ServerChanges(ctx context.Context, list string, since store.ListCursor, limit int) ([]store.ListedServer, store.ListCursor, bool, error)
}

// SharedPoll is how often a node writes its new registrations to the
// shared store and reads the other nodes': one round trip each way when
// nothing changed. A registration also wakes the writer at once.
const SharedPoll = time.Second

// sharedTimeout bounds one exchange with the store, should the store not
// bound its own operations.
const sharedTimeout = 5 * time.Second

// sharedBatch is how many changes one read takes.
const sharedBatch = 512

// sharing is a Registry's link to its shared store.
type sharing struct {
	store   SharedStore
	list    string
	logger  *zap.Logger
	onError func()
	stop    chan struct{}
	done    chan struct{}
	wake    chan struct{}
	cursor  store.ListCursor
	down    bool
}

// outgoing is a registration waiting to be written to the store.
type outgoing struct {
	value                     []byte
	expires                   int64 // the registry clock's
	maxServers, maxPerAddress int
}

// sharedRecord is what the store keeps of a server: the registry's
// fields, in JSON.
type sharedRecord struct {
	GameName   string `json:"g"`
	Protocol   int    `json:"p"`
	Clients    int    `json:"c"`
	MaxClients int    `json:"m"`
	GameType   int    `json:"t"`
	Info       string `json:"i"`
}

// Share keeps r's servers in s under the list name, shared with every node
// that shares s and the name: a server this node registers is written to
// s (in the background: the datagram that registered it never waits), and
// the servers other nodes registered are read from it every SharedPoll,
// each listed here until its expiry. The store's limits are the Masters'
// max_servers and max_servers_per_address, counted over every node; a
// server the store refuses as over them is taken off this node's list too.
//
// While the store cannot be reached, the node goes on alone: it lists
// what it registers itself and what it read last (each until its expiry),
// keeps its registrations to write once the store answers again, and logs
// the outage's start and end once each; onError (if not nil) is called for
// each exchange with the store that failed. Calling Share again with the
// same store and name does nothing; with others, it replaces them.
// Unshare stops.
func (r *Registry) Share(s SharedStore, name string, logger *zap.Logger, onError func()) {
	if logger == nil {
		logger = zap.NewNop()
	}
	r.shareMu.Lock()
	defer r.shareMu.Unlock()
	if old := r.shared; old != nil {
		if old.store == s && old.list == name {
			return
		}
		r.stopSharing()
	}
	sh := &sharing{store: s, list: name, logger: logger, onError: onError, stop: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1)}
	r.mu.Lock()
	r.shared = sh
	r.mu.Unlock()
	go r.poll(sh)
}

// Unshare stops writing to and reading from the shared store; the servers
// listed stay until their expiry.
func (r *Registry) Unshare() {
	r.shareMu.Lock()
	defer r.shareMu.Unlock()
	r.stopSharing()
}

// stopSharing ends the link; the caller holds shareMu.
func (r *Registry) stopSharing() {
	r.mu.Lock()
	sh := r.shared
	r.shared = nil
	clear(r.outbox)
	r.mu.Unlock()
	if sh != nil {
		close(sh.stop)
		<-sh.done
	}
}

// queueShared records the server at i, just registered, to be written to
// the store. The caller holds mu.
func (r *Registry) queueShared(i int, cfg *Config) {
	sh := r.shared
	if sh == nil {
		return
	}
	s := &r.servers[i]
	if _, ok := r.outbox[s.addr]; !ok && len(r.outbox) >= cfg.MaxServers {
		return // bounded as the list is; its next heartbeat tries again
	}
	b, err := json.Marshal(sharedRecord{GameName: string(s.name), Protocol: s.protocol, Clients: s.clients,
		MaxClients: s.maxClients, GameType: s.gameType, Info: string(s.info)})
	if err != nil {
		return
	}
	r.outbox[s.addr] = outgoing{value: b, expires: s.expires, maxServers: cfg.MaxServers, maxPerAddress: cfg.MaxServersPerAddress}
	select {
	case sh.wake <- struct{}{}:
	default:
	}
}

func (r *Registry) poll(sh *sharing) {
	defer close(sh.done)
	r.sync(sh)
	periodic.RunWoken(sh.stop, sh.wake, SharedPoll, func() { r.sync(sh) })
}

// sync writes the registrations waiting, then reads the changes.
func (r *Registry) sync(sh *sharing) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	err := r.writeShared(ctx, sh)
	if err == nil {
		err = r.readShared(ctx, sh)
	}
	if err != nil && sh.onError != nil {
		sh.onError()
	}
	switch {
	case err != nil && !sh.down:
		sh.down = true
		sh.logger.Warn("master: the shared store cannot be reached; this node lists its own registrations and those it read last until it can", zap.String("list", sh.list), zap.Error(err))
	case err == nil && sh.down:
		sh.down = false
		sh.logger.Info("master: the shared store can be reached again; the list is shared again", zap.String("list", sh.list))
	}
}

// writeShared writes the registrations waiting; those it could not write
// wait for the next round.
func (r *Registry) writeShared(ctx context.Context, sh *sharing) error {
	r.mu.Lock()
	type write struct {
		addr netip.AddrPort
		out  outgoing
	}
	writes := make([]write, 0, len(r.outbox))
	for a, o := range r.outbox {
		writes = append(writes, write{a, o})
	}
	r.mu.Unlock()
	for _, w := range writes {
		now := r.clock.Now()
		if now >= w.out.expires {
			r.mu.Lock()
			if o, ok := r.outbox[w.addr]; ok && o.expires == w.out.expires {
				delete(r.outbox, w.addr)
			}
			r.mu.Unlock()
			continue
		}
		res, err := sh.store.RegisterServer(ctx, sh.list, w.addr.String(), w.out.value, time.Duration(w.out.expires-now),
			w.out.maxServers, w.out.maxPerAddress)
		if err != nil {
			return err
		}
		r.mu.Lock()
		if o, ok := r.outbox[w.addr]; ok && o.expires == w.out.expires {
			delete(r.outbox, w.addr)
		}
		if res == store.ListFull || res == store.ListAddressFull {
			// Over the limits of every node together: not listed here
			// either.
			if i, ok := r.index[w.addr]; ok && r.servers[i].expires == w.out.expires {
				r.remove(i)
			}
		}
		r.mu.Unlock()
	}
	return nil
}

// readShared reads the servers changed since the last read and lists
// them, each until its expiry.
func (r *Registry) readShared(ctx context.Context, sh *sharing) error {
	for range 1 + MaxMaxServers/sharedBatch {
		servers, next, more, err := sh.store.ServerChanges(ctx, sh.list, sh.cursor, sharedBatch)
		if err != nil {
			return err
		}
		for _, s := range servers {
			r.adopt(s)
		}
		sh.cursor = next
		if !more {
			break
		}
	}
	return nil
}

// adopt lists a server read from the store until its expiry there,
// unless this node already lists it for longer, or its list is full, or
// its address is not one this node lists from another's proof
// (mayAdopt). What the store holds is checked as a datagram would be:
// bounded, and read into the same fields.
func (r *Registry) adopt(ls store.ListedServer) {
	addr, err := netip.ParseAddrPort(ls.Addr)
	if err != nil || ls.TTL <= 0 || ls.TTL > MaxExpiry {
		return
	}
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	if !r.mayAdopt(addr) {
		return
	}
	var rec sharedRecord
	if json.Unmarshal(ls.Value, &rec) != nil || len(rec.GameName) > wire.MaxGameName || len(rec.Info) > wire.MaxInfo ||
		rec.MaxClients < 1 || rec.Clients < 0 || rec.Protocol < 0 || rec.GameType < wire.NoGameType ||
		max(rec.Protocol, rec.Clients, rec.MaxClients, rec.GameType) > wire.MaxNumber {
		return
	}
	now := r.clock.Now()
	expires := now + int64(ls.TTL)
	r.mu.Lock()
	defer r.mu.Unlock()
	i, known := r.index[addr]
	if known && r.servers[i].expires >= expires {
		return
	}
	if !known {
		limit := int(r.maxServers.Load())
		if len(r.servers) >= limit {
			r.sweep(now, true)
		}
		if len(r.servers) >= limit {
			return
		}
		i = r.list(addr)
	}
	r.servers[i].set(addr, expires, []byte(rec.GameName), []byte(rec.Info), rec.Protocol, rec.Clients, rec.MaxClients, rec.GameType)
	r.generation.Add(1)
}

// mayAdopt reports whether a server another node proved at addr may be
// listed here: at a public unicast address (the same host from every
// node), or in one of the shared networks configured. A loopback or
// private address names a host of the other node's network: this node
// would list, and query, whatever answers there on its own.
func (r *Registry) mayAdopt(addr netip.AddrPort) bool {
	a := addr.Addr()
	if addr.Port() == 0 || !a.IsValid() {
		return false
	}
	if scope(a) == scopePublic && a.IsGlobalUnicast() {
		return true
	}
	if nets := r.sharedNetworks.Load(); nets != nil {
		for _, n := range *nets {
			if n.Contains(a) {
				return true
			}
		}
	}
	return false
}
