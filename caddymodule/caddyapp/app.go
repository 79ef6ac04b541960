package caddyapp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/internal/netaddr"
)

func init() {
	caddy.RegisterModule(new(App))
	httpcaddyfile.RegisterGlobalOption("gamegate", parseApp)
}

// App is gamegate's own UDP datagram server: each datagram that arrives on
// one of its addresses goes to the first of the server's protocols (QoS,
// relay, GQP, the A2S shield) that recognises it, on the reader that read it. Unlike a
// caddy-l4 UDP server it keeps no association, goroutine or buffer per
// source, so floods from many (spoofed) sources cost only the protocols'
// own bounded tables. Use it for internet-facing QoS, relay, GQP and A2S
// ports.
type App struct {
	// The UDP servers.
	UDP []*UDPServer `json:"udp,omitempty"`

	ctx      caddy.Context
	held     []string           // the addresses Start counted in heldUDP
	attached []attachedEndpoint // by Start, for Stop to detach
	logger   *zap.Logger
}

// UDPServer serves protocols on UDP addresses.
type UDPServer struct {
	// Addresses to listen on (Caddy network addresses, UDP: "host:port",
	// "udp6/[::]:port", port ranges). Required.
	Listen []string `json:"listen,omitempty"`
	// How the sockets of each address are read and sized: readers,
	// batch, read_buffer, write_buffer.
	dgram.SocketConfig
	// The protocols, in the order each datagram is offered to them. Each
	// has the options of the layer4 handler of the same name.
	ProtocolsRaw []json.RawMessage `json:"protocols,omitempty" caddy:"namespace=gamegate.udp.protocols inline_key=protocol"`

	addrs     []caddy.NetworkAddress
	protocols []string // the protocols' names, for the log
	server    *dgram.Server
}

// CaddyModule returns the Caddy module information.
func (*App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate",
		New: func() caddy.Module { return new(App) },
	}
}

// Provision loads each server's protocols and parses its addresses.
func (a *App) Provision(ctx caddy.Context) error {
	a.ctx = ctx
	a.logger = ctx.Logger()
	if err := a.checkServers(); err != nil {
		return err
	}
	for i, s := range a.UDP {
		s.SocketConfig = s.SocketConfig.WithDefaults()
		if err := s.validate(i); err != nil {
			return err
		}
		mods, err := ctx.LoadModule(s, "ProtocolsRaw")
		if err != nil {
			return fmt.Errorf("udp[%d]: loading protocols: %w", i, err)
		}
		if s.addrs, err = s.listenAddresses(i); err != nil {
			return err
		}
		var protocols []dgram.Protocol
		s.protocols = nil
		for _, m := range mods.([]any) {
			// A protocol whose state is its listener's (QoS without a
			// name) gets its server's: the listen addresses as written.
			p, err := dgram.ProtocolAt(m, strings.Join(s.Listen, ","))
			if err != nil {
				return fmt.Errorf("udp[%d]: %w", i, err)
			}
			protocols = append(protocols, p)
			s.protocols = append(s.protocols, m.(caddy.Module).CaddyModule().ID.Name())
		}
		s.server = &dgram.Server{
			Protocols:   protocols,
			Batch:       s.Batch,
			ReadBuffer:  s.ReadBuffer,
			WriteBuffer: s.WriteBuffer,
			Stats:       caddyglue.UdpStatsOf(s.Listen),
			Logger:      a.logger.With(zap.Strings("listen", s.Listen)),
		}
	}
	return caddyglue.UdpMetrics.Register(ctx.GetMetricsRegistry())
}

// ListenAddresses reports every address the app listens on, so that the
// protocols inside it can tell whether they face more than loopback (the
// relay refuses development secrets there).
func (a *App) ListenAddresses() []string {
	var addrs []string
	for _, s := range a.UDP {
		if s != nil {
			addrs = append(addrs, s.Listen...)
		}
	}
	return addrs
}

// Validate checks the configuration.
func (a *App) Validate() error {
	if err := a.checkServers(); err != nil {
		return err
	}
	for i, s := range a.UDP {
		if err := s.validate(i); err != nil {
			return err
		}
		if _, err := s.listenAddresses(i); err != nil {
			return err
		}
	}
	return nil
}

// checkServers refuses a null server and two servers on one address: the
// kernel would split the port's datagrams between them, so each would
// answer only some of its clients.
func (a *App) checkServers() error {
	var taken []udpListen
	for i, s := range a.UDP {
		if s == nil {
			return fmt.Errorf("udp[%d]: null; want a server with listen and protocols", i)
		}
		for _, l := range s.Listen {
			na, err := parseUDPListen(l)
			if err != nil {
				continue // validate names it
			}
			if err := checkOverlap(taken, na, l); err != nil {
				return fmt.Errorf("udp[%d]: %w", i, err)
			}
			taken = append(taken, udpListen{na, l})
		}
	}
	return nil
}

// udpListen is a parsed listen address and how it was written.
type udpListen struct {
	addr caddy.NetworkAddress
	text string
}

// checkOverlap refuses na when one of taken shares a port with it on an
// address both would receive on.
func checkOverlap(taken []udpListen, na caddy.NetworkAddress, text string) error {
	for _, t := range taken {
		if na.StartPort > t.addr.EndPort || t.addr.StartPort > na.EndPort {
			continue
		}
		if hostsOverlap(na, t.addr) {
			return fmt.Errorf("listen %q: %q listens there already; give each address to one udp server", text, t.text)
		}
	}
	return nil
}

// hostsOverlap reports whether sockets bound to a's and b's hosts would
// share datagrams: the same host, or one of them every address of a family
// the other is in ("udp" on "" or "::" is both families; "udp4" and "udp6",
// an IPv4 and an IPv6 address, are apart).
func hostsOverlap(a, b caddy.NetworkAddress) bool {
	fa, fb := family(a), family(b)
	if fa != 0 && fb != 0 && fa != fb {
		return false
	}
	pa, erra := netip.ParseAddr(a.Host)
	pb, errb := netip.ParseAddr(b.Host)
	switch {
	case a.Host == "" || b.Host == "" || erra == nil && pa.IsUnspecified() || errb == nil && pb.IsUnspecified():
		return true
	case erra == nil && errb == nil:
		return pa.Unmap() == pb.Unmap()
	}
	return strings.EqualFold(strings.TrimSuffix(a.Host, "."), strings.TrimSuffix(b.Host, "."))
}

// family is the IP family a listen address receives on: 4, 6, or 0 for
// both (or a host name, which may be either).
func family(na caddy.NetworkAddress) int {
	switch na.Network {
	case "udp4":
		return 4
	case "udp6":
		return 6
	}
	a, err := netip.ParseAddr(na.Host)
	switch {
	case err != nil || a == netip.IPv6Unspecified():
		return 0
	case a.Unmap().Is4():
		return 4
	}
	return 6
}

// parseUDPListen parses a UDP server's listen address: a UDP network, a
// port (a random one is no game port), and a host that is empty (all
// addresses), an IP address or a host name.
func parseUDPListen(l string) (caddy.NetworkAddress, error) {
	na, err := caddy.ParseNetworkAddressWithDefaults(l, "udp", 0)
	switch {
	case err != nil:
		return na, err
	case na.Network != "udp" && na.Network != "udp4" && na.Network != "udp6":
		return na, errors.New("not a UDP address")
	case na.StartPort == 0:
		return na, errors.New("needs a port")
	}
	if _, err := netip.ParseAddr(na.Host); err != nil && na.Host != "" && !netaddr.IsHostName(na.Host) {
		return na, fmt.Errorf("%q is neither an IP address nor a host name", na.Host)
	}
	return na, nil
}

// validate checks a server's options but its addresses.
func (s *UDPServer) validate(i int) error {
	switch {
	case len(s.Listen) == 0:
		return fmt.Errorf("udp[%d]: listen is required", i)
	case len(s.ProtocolsRaw) == 0 && s.server == nil:
		return fmt.Errorf("udp[%d]: at least one protocol is required", i)
	}
	if err := s.SocketConfig.Validate(); err != nil {
		return fmt.Errorf("udp[%d]: %w", i, err)
	}
	return nil
}

// listenAddresses parses and checks a server's listen addresses.
func (s *UDPServer) listenAddresses(i int) ([]caddy.NetworkAddress, error) {
	addrs := make([]caddy.NetworkAddress, 0, len(s.Listen))
	var taken []udpListen
	for _, l := range s.Listen {
		na, err := parseUDPListen(l)
		if err != nil {
			return nil, fmt.Errorf("udp[%d]: listen %q: %w", i, l, err)
		}
		if err := checkOverlap(taken, na, l); err != nil {
			return nil, fmt.Errorf("udp[%d]: %w", i, err)
		}
		taken = append(taken, udpListen{na, l})
		addrs = append(addrs, na)
	}
	return addrs, nil
}

// Start serves each address through its endpoint: the sockets and
// readers of the address, which outlive configurations. A reload finds
// the endpoint the running configuration serves through and attaches the
// new server to it, so the sockets stay open and nothing queued in them is
// lost; the first configuration to serve an address opens its sockets
// through Caddy's listeners. Each address logs one line when its readers
// serve: its protocols, readers, and the socket buffers asked and granted
// (the smallest of its sockets').
func (a *App) Start() error {
	for _, s := range a.UDP {
		for _, na := range s.addrs {
			for port := range na.PortRangeSize() {
				if err := a.hold(na, port); err != nil {
					_ = a.Stop()
					return err
				}
				key := endpointKey{address: heldKey(na, port), readers: s.Readers, batch: s.Batch}
				v, loaded, err := udpEndpoints.LoadOrNew(key, func() (caddy.Destructor, error) {
					return a.openEndpoint(s, na, port)
				})
				if err != nil {
					_ = a.Stop()
					return err
				}
				ep := v.(*sharedEndpoint)
				granted := ep.granted
				if loaded {
					granted = ep.SetBuffers(s.ReadBuffer, s.WriteBuffer)
				}
				ep.Attach(s.server)
				a.attached = append(a.attached, attachedEndpoint{key, ep, s.server})
				a.logger.Info("serving UDP", zap.Stringer("address", ep.local), zap.Strings("protocols", s.protocols),
					zap.Int("readers", s.Readers), zap.Int("batch", s.Batch), zap.Bool("handed_over", loaded),
					zap.Int("read_buffer", s.ReadBuffer), zap.Int("read_buffer_granted", granted.Read),
					zap.Int("write_buffer", s.WriteBuffer), zap.Int("write_buffer_granted", granted.Write))
			}
		}
	}
	return nil
}

// udpEndpoints holds the endpoint of each address this process serves,
// with how it is read: a reload that keeps an address's readers and batch
// keeps its sockets.
var udpEndpoints = caddy.NewUsagePool()

// endpointKey names an endpoint: the address (heldKey) and how its
// sockets are read. A reload that changes readers or batch opens new
// sockets beside the old ones, which close with the old configuration.
type endpointKey struct {
	address        string
	readers, batch int
}

// sharedEndpoint is an endpoint in udpEndpoints.
type sharedEndpoint struct {
	*dgram.Endpoint
	local   net.Addr
	granted dgram.Buffers // by the sockets when opened
}

// Destruct closes the endpoint's sockets once no configuration serves
// through it.
func (e *sharedEndpoint) Destruct() error { return e.Close() }

// attachedEndpoint is an endpoint a configuration's server is attached to.
type attachedEndpoint struct {
	key    endpointKey
	ep     *sharedEndpoint
	server *dgram.Server
}

// openEndpoint opens s's readers' sockets on na at port offset, each
// read by a reader of a new endpoint.
func (a *App) openEndpoint(s *UDPServer, na caddy.NetworkAddress, port uint) (*sharedEndpoint, error) {
	ep := &sharedEndpoint{Endpoint: dgram.NewEndpoint(dgram.EndpointConfig{
		Batch: s.Batch, ReadBuffer: s.ReadBuffer, WriteBuffer: s.WriteBuffer,
		Logger: a.logger.With(zap.String("address", na.JoinHostPort(port))),
	})}
	for i := range s.Readers {
		ln, err := na.Listen(a.ctx, port, net.ListenConfig{})
		if err != nil {
			ep.Close()
			return nil, fmt.Errorf("listening on %s: %w", na, err)
		}
		pc, ok := ln.(net.PacketConn)
		if !ok {
			if c, ok := ln.(io.Closer); ok {
				c.Close()
			}
			ep.Close()
			return nil, fmt.Errorf("%s is not a packet listener", na)
		}
		local := pc.LocalAddr()
		b, err := ep.Add(pc)
		if err != nil {
			ep.Close()
			return nil, fmt.Errorf("%s: %w", na, err)
		}
		if i == 0 {
			ep.granted, ep.local = b, local
		}
		ep.granted.Read, ep.granted.Write = min(ep.granted.Read, b.Read), min(ep.granted.Write, b.Write)
	}
	return ep, nil
}

// heldUDP counts, per UDP address, this process's running configurations
// that serve it. A reload starts the new configuration before it stops
// the old one, so an address held here is handed over, not checked.
var heldUDP = struct {
	sync.Mutex
	n map[string]int
}{n: make(map[string]int)}

// heldKey names the address na serves at port offset: its network and
// resolved address.
func heldKey(na caddy.NetworkAddress, port uint) string {
	hostport := na.JoinHostPort(port)
	if ua, err := net.ResolveUDPAddr(na.Network, hostport); err == nil {
		return na.Network + "/" + ua.String()
	}
	return na.Network + "/" + hostport
}

// hold counts the address na serves at port offset as this process's and,
// when no configuration of this process serves it yet, refuses it if
// another process does: with SO_REUSEPORT both would bind it, and each
// would get part of its datagrams.
func (a *App) hold(na caddy.NetworkAddress, port uint) error {
	hostport := na.JoinHostPort(port)
	key := heldKey(na, port)
	heldUDP.Lock()
	defer heldUDP.Unlock()
	if heldUDP.n[key] == 0 {
		if err := dgram.CheckUnused(na.Network, hostport); err != nil {
			if errors.Is(err, dgram.ErrAddressInUse) {
				return fmt.Errorf("listening on %s/%s: %w (another gamegate, or another program, serves it; two processes on one UDP address would split its datagrams)", na.Network, hostport, err)
			}
			return fmt.Errorf("listening on %s/%s: %w", na.Network, hostport, err)
		}
	}
	heldUDP.n[key]++
	a.held = append(a.held, key)
	return nil
}

// Stop detaches the servers from their endpoints, returning once no
// reader serves a datagram with them, and closes each endpoint no other
// configuration serves through (a reload's new one has attached itself
// already, and serves on).
func (a *App) Stop() error {
	var errs []error
	for _, at := range a.attached {
		at.ep.Detach(at.server)
		if _, err := udpEndpoints.Delete(at.key); err != nil {
			errs = append(errs, err)
		}
	}
	a.attached = nil
	heldUDP.Lock()
	for _, key := range a.held {
		if heldUDP.n[key]--; heldUDP.n[key] <= 0 {
			delete(heldUDP.n, key)
		}
	}
	heldUDP.Unlock()
	a.held = nil
	return errors.Join(errs...)
}

// parseApp sets up the App from the gamegate global option. Syntax:
//
//	gamegate {
//		udp <address> [<address>...] {
//			readers      <count>
//			batch        <datagrams>
//			read_buffer  <size>
//			write_buffer <size>
//			qos   { <the qos handler's options> }
//			relay { <the relay handler's options> }
//			gqp   { <the gqp handler's options> }
//			a2s_shield <upstream> { <the a2s_shield handler's options> }
//			master { <the master's options> }
//		}
//	}
//
// udp may repeat; protocols are offered each datagram in the order given.
func parseApp(d *caddyfile.Dispenser, existing any) (any, error) {
	app := new(App)
	if existing != nil {
		prev, ok := existing.(httpcaddyfile.App)
		if !ok {
			return nil, d.Errf("unexpected existing value %T", existing)
		}
		if err := json.Unmarshal(prev.Value, app); err != nil {
			return nil, err
		}
	}
	err := caddyglue.ParseModuleBlock(d, "", []string{"udp"}, func(opt string) error {
		if opt != "udp" {
			return caddyglue.UnknownOption(d, "", opt)
		}
		s, err := parseUDPServer(d, app.UDP)
		if err != nil {
			return err
		}
		app.UDP = append(app.UDP, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return httpcaddyfile.App{Name: "gamegate", Value: caddyconfig.JSON(app, nil)}, nil
}

// parseUDPServer parses a udp block; before are the servers above it.
func parseUDPServer(d *caddyfile.Dispenser, before []*UDPServer) (*UDPServer, error) {
	s := &UDPServer{Listen: d.RemainingArgs()}
	if len(s.Listen) == 0 {
		return nil, d.Errf("udp takes one or more addresses")
	}
	var taken []udpListen
	for _, b := range before {
		if b != nil {
			for _, l := range b.Listen {
				if na, err := parseUDPListen(l); err == nil {
					taken = append(taken, udpListen{na, l})
				}
			}
		}
	}
	for _, l := range s.Listen {
		na, err := parseUDPListen(l)
		if err != nil {
			return nil, d.Errf("udp: '%s': %v", l, err)
		}
		if err := checkOverlap(taken, na, l); err != nil {
			return nil, d.Errf("udp: %v", err)
		}
		taken = append(taken, udpListen{na, l})
	}
	protocols := map[string]bool{}
	err := caddyglue.ParseBlock(d, "udp", nil, func(opt string) error {
		var err error
		switch opt {
		case "readers":
			s.Readers, err = caddyglue.ParseIntIn(d, socketRange(opt))
		case "batch":
			s.Batch, err = caddyglue.ParseIntIn(d, socketRange(opt))
		case "read_buffer":
			s.ReadBuffer, err = caddyglue.ParseSize[int](d, socketRange(opt))
		case "write_buffer":
			s.WriteBuffer, err = caddyglue.ParseSize[int](d, socketRange(opt))
		default:
			id := "gamegate.udp.protocols." + opt
			if _, err := caddy.GetModule(id); err != nil {
				return caddyglue.UnknownOption(d, "udp", opt)
			}
			if protocols[opt] {
				return d.Errf("udp: duplicate protocol '%s'", opt)
			}
			protocols[opt] = true
			unm, err := caddyfile.UnmarshalModule(d, id)
			if err != nil {
				return err
			}
			s.ProtocolsRaw = append(s.ProtocolsRaw, caddyconfig.JSONModuleObject(unm, "protocol", opt, nil))
		}
		return err
	})
	return s, err
}

// socketRange is the range a udp server's SocketConfig holds option opt
// to.
func socketRange(opt string) caddyglue.IntRange {
	return caddyglue.ConfigRange[dgram.SocketConfig](opt)
}

// Interface guards
var (
	_ caddy.App                 = (*App)(nil)
	_ caddy.Provisioner         = (*App)(nil)
	_ caddy.Validator           = (*App)(nil)
	_ caddyglue.ListenAddresser = (*App)(nil)
)
