package qos

import (
	"errors"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gamegate/gamegate/dgram"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

// SweepInterval is how often a table made for a Service forgets idle
// sources.
const SweepInterval = 10 * time.Second

// Tables lends source tables to Services, so that a table can outlive the
// Service that made it: a configuration reload hands the tables, and the
// bans in them, to the Service that replaces the old one. The Caddy glue
// keeps them in a caddy.UsagePool.
type Tables interface {
	// Acquire returns the table of key, made with
	// NewSourceTable(limit, nil, SweepInterval) the first time, and holds
	// it until Release(key). listener is the listener the table is for,
	// "" for a named service's.
	Acquire(key, listener string, limit int) (*SourceTable, error)
	// Release gives up one Acquire of key.
	Release(key string) error
}

// Service is the QoS echo service: a dgram.ListenerScoped whose
// ForListener returns the Server of each listener, on the listener's own
// source table, or on the one table of its Name; each listener's verdicts
// are counted apart (Config.Count) either way. It is safe for concurrent
// use.
type Service struct {
	cfg    Config // with defaults
	tables Tables
	suffix string // what every table key ends in: the table's settings

	mu      sync.Mutex
	engines map[string]*Engine // by table key; nil once closed
	servers map[string]*Server // by listener
}

// NewService returns a service for cfg (which should have passed
// Validate), lending its tables from tables; nil: tables of its own.
func NewService(cfg Config, tables Tables) *Service {
	cfg = cfg.WithDefaults()
	if tables == nil {
		tables = &ownTables{byKey: make(map[string]*ownTable)}
	}
	return &Service{
		cfg:    cfg,
		tables: tables,
		// Two services share a table only if it holds what both want.
		suffix:  "/" + strconv.Itoa(cfg.MaxSources) + "/" + cfg.SourceKey + "/" + strconv.Itoa(cfg.ClientIPv6Prefix),
		engines: make(map[string]*Engine),
		servers: make(map[string]*Server),
	}
}

// ForListener returns the Server of the listener named listener: the one
// of the service's Name if it has one, else the listener's own, made (and
// its table acquired) the first time.
func (s *Service) ForListener(listener string) (dgram.Protocol, error) {
	return s.Server(listener)
}

// TableKey is the key of the table the service's Server for listener
// uses (Tables).
func (s *Service) TableKey(listener string) string {
	if s.cfg.Name != "" {
		return s.cfg.Name + s.suffix
	}
	return "qos@" + listener + s.suffix
}

// Server is ForListener with its concrete type.
func (s *Service) Server(listener string) (*Server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.engines == nil {
		return nil, errors.New("the QoS service is closed")
	}
	if srv := s.servers[listener]; srv != nil {
		return srv, nil
	}
	engine, err := s.engine(listener)
	if err != nil {
		return nil, err
	}
	srv := &Server{
		engine:     engine,
		byPort:     s.cfg.SourceKey == SourceKeyIPPort,
		ipv6Prefix: s.cfg.ClientIPv6Prefix,
		count:      s.cfg.Count(listener),
		logger:     s.cfg.Logger,
	}
	s.servers[listener] = srv
	return srv, nil
}

// engine returns the engine of listener's table, acquiring the table the
// first time. s.mu is held.
func (s *Service) engine(listener string) (*Engine, error) {
	key := s.TableKey(listener)
	if e := s.engines[key]; e != nil {
		return e, nil
	}
	if s.cfg.Name != "" {
		listener = ""
	}
	table, err := s.tables.Acquire(key, listener, s.cfg.MaxSources)
	if err != nil {
		return nil, err
	}
	e, err := NewEngine(s.cfg, table)
	if err != nil {
		return nil, errors.Join(err, s.tables.Release(key))
	}
	s.engines[key] = e
	return e, nil
}

// Close releases the service's tables; its Servers must not be used after.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for key := range s.engines {
		errs = append(errs, s.tables.Release(key))
	}
	s.engines, s.servers = nil, nil
	return errors.Join(errs...)
}

// Server answers the QoS echo requests of one listener with one engine: a
// dgram.Protocol.
type Server struct {
	engine     *Engine
	byPort     bool
	ipv6Prefix int
	count      func(Verdict)
	logger     *zap.Logger
}

// Engine returns the server's engine.
func (s *Server) Engine() *Engine { return s.engine }

// Match reports whether the datagram looks like a QoS echo request.
func (s *Server) Match(datagram []byte) bool { return wireqos.LooksLikeRequest(datagram) }

// ServeDatagram answers one QoS request, appending the response to w.
// Anything malformed is dropped, with its verdict counted.
func (s *Server) ServeDatagram(w *dgram.Writer, src netip.AddrPort, datagram []byte) {
	source := SourceOfAddrPort(src, s.byPort, s.ipv6Prefix)
	resp, v := s.engine.Handle(source, datagram, w.Buffer(wireqos.MaxPacket))
	s.count(v)
	if v == BannedRate || v == BannedCapacity {
		if ce := s.logger.Check(zap.DebugLevel, "banned QoS source"); ce != nil {
			ce.Write(zap.Stringer("source", source), zap.Stringer("cause", v))
		}
	}
	if resp != nil {
		w.WriteTo(resp, src)
	}
}

// ownTables are the tables of a Service given none to borrow from.
type ownTables struct {
	mu    sync.Mutex
	byKey map[string]*ownTable
}

type ownTable struct {
	*SourceTable
	holds int
}

func (o *ownTables) Acquire(key, _ string, limit int) (*SourceTable, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.byKey[key]
	if t == nil {
		t = &ownTable{SourceTable: NewSourceTable(limit, nil, SweepInterval)}
		o.byKey[key] = t
	}
	t.holds++
	return t.SourceTable, nil
}

func (o *ownTables) Release(key string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.byKey[key]
	if t == nil {
		return nil
	}
	if t.holds--; t.holds == 0 {
		delete(o.byKey, key)
		return t.Destruct()
	}
	return nil
}

// Interface guards
var (
	_ dgram.ListenerScoped = (*Service)(nil)
	_ dgram.Protocol       = (*Server)(nil)
)
