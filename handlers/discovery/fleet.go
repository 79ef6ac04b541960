// Package discovery is gamegate's QoS discovery service, free of Caddy: it
// keeps the list of QoS servers of each fleet from its sources (inline
// configuration, a watched JSON file, runtime overrides), optionally withholds
// servers that fail health checks, and serves each list as a pre-serialised
// JSON body with an ETag, the way game clients expect:
//
//	GET /v1/fleets/{fleet_id}/servers → {"servers": [...]}
package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"

	"github.com/gamegate/gamegate/handlers/qos"
)

// Server is one QoS server of a fleet, serving one region. The shared
// store keeps admin-set fleets in its untagged JSON encoding, as every
// version has written them: tagging it would leave those unreadable.
type Server struct {
	LocationID int64  // Multiplay location ID
	RegionID   string // region ID, never empty
	IPv4       string // dotted quad, or empty
	IPv6       string // RFC 4291 text, or empty
	Port       int    // 1-65535, the same for both addresses
}

// ConfiguredServer is one QoS server of a fleet as the qos_discovery
// handler's configuration gives it (its fleets). It converts to Server,
// whose untagged encoding the shared store keeps.
type ConfiguredServer struct {
	// Multiplay location ID. Default: 0.
	LocationID int64 `json:"location_id,omitempty"`
	// Region ID. Required.
	RegionID string `json:"region_id,omitempty"`
	// IPv4 address, dotted quad. Give ipv4, ipv6 or both. Default: none.
	IPv4 string `json:"ipv4,omitempty"`
	// IPv6 address. Default: none.
	IPv6 string `json:"ipv6,omitempty"`
	// UDP port of the QoS server, for both addresses. Required.
	Port int `json:"port,omitempty"`
}

// Addr returns the address a QoS probe should use: IPv4 when present.
func (s Server) Addr() netip.AddrPort { return s.AddrPreferring(false) }

// AddrPreferring returns the server's IPv6 address if ipv6 is set and it
// has one, else its IPv4 address if it has one, else its IPv6 address.
func (s Server) AddrPreferring(ipv6 bool) netip.AddrPort {
	ip := s.IPv4
	if (ipv6 && s.IPv6 != "") || ip == "" {
		ip = s.IPv6
	}
	a, _ := netip.ParseAddr(ip)
	return netip.AddrPortFrom(a, uint16(s.Port))
}

// QoSTarget returns the server as the target of a QoS check, at the
// address AddrPreferring(ipv6) picks.
func (s Server) QoSTarget(ipv6 bool) qos.Target {
	return qos.Target{Region: s.RegionID, LocationID: int(s.LocationID), Addr: s.AddrPreferring(ipv6)}
}

// Limits on fleet sources, so a file or an admin request cannot make the
// gateway hold unbounded data.
const (
	MaxFleetFile      = 16 << 20 // bytes of a fleets file
	MaxServersPayload = 1 << 20  // bytes of one fleet's list in an admin request
	MaxServers        = 10000    // servers in one fleet
	MaxFleetIDLength  = 256      // bytes of a fleet ID
	MaxRegionIDLength = 256      // bytes of a region ID
)

// serverJSON is a server as the sources spell it. Either spelling of the ID
// fields is accepted; if both are given they must agree.
type serverJSON struct {
	LocationID  *int64  `json:"location_id"`
	LocationID2 *int64  `json:"locationid"`
	RegionID    *string `json:"region_id"`
	RegionID2   *string `json:"regionid"`
	IPv4        string  `json:"ipv4"`
	IPv6        string  `json:"ipv6"`
	Port        int     `json:"port"`
}

func (j serverJSON) server(i int) (Server, error) {
	where := "servers[" + strconv.Itoa(i) + "]"
	var s Server
	var ok bool
	if s.LocationID, ok = eitherSpelling(j.LocationID, j.LocationID2); !ok {
		return s, fmt.Errorf("%s: location_id and locationid differ", where)
	}
	if s.RegionID, ok = eitherSpelling(j.RegionID, j.RegionID2); !ok {
		return s, fmt.Errorf("%s: region_id and regionid differ", where)
	}
	s.IPv4, s.IPv6, s.Port = j.IPv4, j.IPv6, j.Port
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("%s: %w", where, err)
	}
	return s, nil
}

// eitherSpelling returns the value given under either spelling of a field
// (the zero value if neither), and false if both are given and differ.
func eitherSpelling[T comparable](a, b *T) (T, bool) {
	switch {
	case a != nil && b != nil:
		return *a, *a == *b
	case a != nil:
		return *a, true
	case b != nil:
		return *b, true
	}
	var zero T
	return zero, true
}

// Validate checks one server entry.
func (s Server) Validate() error {
	switch {
	case s.RegionID == "":
		return errors.New("region_id is empty")
	case len(s.RegionID) > MaxRegionIDLength:
		return fmt.Errorf("region_id is longer than %d bytes", MaxRegionIDLength)
	case s.Port < 1 || s.Port > 65535:
		return fmt.Errorf("port %d is outside 1-65535", s.Port)
	case s.IPv4 == "" && s.IPv6 == "":
		return errors.New("neither ipv4 nor ipv6 is set")
	case s.LocationID < 0:
		return errors.New("location_id is negative")
	}
	if s.IPv4 != "" {
		a, err := netip.ParseAddr(s.IPv4)
		if err != nil || !a.Is4() || a.String() != s.IPv4 {
			return fmt.Errorf("ipv4 %q is not a dotted-quad IPv4 address", s.IPv4)
		}
		if a.IsUnspecified() {
			return fmt.Errorf("ipv4 %s means every address of a machine, which no client can reach", s.IPv4)
		}
	}
	if s.IPv6 != "" {
		a, err := netip.ParseAddr(s.IPv6)
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return fmt.Errorf("ipv6 %q is not an IPv6 address", s.IPv6)
		}
		if a.IsUnspecified() {
			return fmt.Errorf("ipv6 %s means every address of a machine, which no client can reach", s.IPv6)
		}
	}
	return nil
}

// Dedupe returns servers without repeated entries, keeping first occurrences
// in order: the discovery contract promises no duplicates.
func Dedupe(servers []Server) []Server {
	out := make([]Server, 0, len(servers))
	seen := make(map[Server]bool, len(servers))
	for _, s := range servers {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// ParseServers reads one fleet's list, {"servers": [...]}, as the admin API
// receives it.
func ParseServers(data []byte) ([]Server, error) {
	if len(data) > MaxServersPayload {
		return nil, fmt.Errorf("server list longer than %d bytes", MaxServersPayload)
	}
	var doc struct {
		Servers *[]serverJSON `json:"servers"`
	}
	if err := decodeStrict(data, &doc); err != nil {
		return nil, err
	}
	if doc.Servers == nil {
		return nil, errors.New(`missing "servers"`)
	}
	return convert(*doc.Servers)
}

func convert(list []serverJSON) ([]Server, error) {
	if len(list) > MaxServers {
		return nil, fmt.Errorf("more than %d servers", MaxServers)
	}
	out := make([]Server, 0, len(list))
	for i, j := range list {
		s, err := j.server(i)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return Dedupe(out), nil
}

// ParseFleets reads a fleets file:
//
//	{"fleets": {"<fleet_id>": {"servers": [{"location_id": 1, "region_id": "…",
//	  "ipv4": "…", "ipv6": "", "port": 9000}, …]}, …}}
//
// Server objects take the seed's field names (location_id, region_id) or
// the Unity client's (locationid, regionid). Unknown fields are errors, so a
// typo does not silently drop data.
func ParseFleets(data []byte) (map[string][]Server, error) {
	if len(data) > MaxFleetFile {
		return nil, fmt.Errorf("fleets file longer than %d bytes", MaxFleetFile)
	}
	var doc struct {
		Fleets *map[string]struct {
			Servers *[]serverJSON `json:"servers"`
		} `json:"fleets"`
	}
	if err := decodeStrict(data, &doc); err != nil {
		return nil, err
	}
	if doc.Fleets == nil {
		return nil, errors.New(`missing "fleets"`)
	}
	out := make(map[string][]Server, len(*doc.Fleets))
	for id, f := range *doc.Fleets {
		if err := ValidateFleetID(id); err != nil {
			return nil, err
		}
		if f.Servers == nil {
			return nil, fmt.Errorf("fleet %q: missing \"servers\"", id)
		}
		servers, err := convert(*f.Servers)
		if err != nil {
			return nil, fmt.Errorf("fleet %q: %w", id, err)
		}
		out[id] = servers
	}
	return out, nil
}

// ValidateFleetID checks a fleet ID: non-empty, bounded, and usable as one
// path segment.
func ValidateFleetID(id string) error {
	switch {
	case id == "":
		return errors.New("empty fleet ID")
	case len(id) > MaxFleetIDLength:
		return fmt.Errorf("fleet ID longer than %d bytes", MaxFleetIDLength)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c == '/' || c < 0x20 || c == 0x7F {
			return fmt.Errorf("fleet ID %q contains a character not allowed in a path segment", id)
		}
	}
	return nil
}

// FieldNames selects how the ID fields of a server are spelled in answers.
type FieldNames uint8

const (
	// BothNames writes location_id and region_id (the protocol document's
	// names) and locationid and regionid (the names the shipped Unity client
	// reads): which one the live service sent is not known, and each reader
	// ignores the other's fields, so both readers work.
	BothNames FieldNames = iota
	// SeedNames writes only location_id and region_id.
	SeedNames
	// UnityNames writes only locationid and regionid.
	UnityNames
)

// ParseFieldNames reads "both", "seed" or "unity".
func ParseFieldNames(s string) (FieldNames, error) {
	switch s {
	case "", "both":
		return BothNames, nil
	case "seed":
		return SeedNames, nil
	case "unity":
		return UnityNames, nil
	}
	return 0, fmt.Errorf("field names must be both, seed or unity, not %q", s)
}

// Render serialises a fleet's answer: {"servers": [...]} with the server
// properties in a fixed order, so equal lists give equal bytes (and ETags).
func Render(servers []Server, names FieldNames) []byte {
	b := make([]byte, 0, 64+len(servers)*160)
	b = append(b, `{"servers":[`...)
	for i, s := range servers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if names != UnityNames {
			b = append(b, `"location_id":`...)
			b = strconv.AppendInt(b, s.LocationID, 10)
			b = append(b, `,"region_id":`...)
			b = appendJSONString(b, s.RegionID)
			b = append(b, ',')
		}
		if names != SeedNames {
			b = append(b, `"locationid":`...)
			b = strconv.AppendInt(b, s.LocationID, 10)
			b = append(b, `,"regionid":`...)
			b = appendJSONString(b, s.RegionID)
			b = append(b, ',')
		}
		b = append(b, `"ipv4":`...)
		b = appendJSONString(b, s.IPv4)
		b = append(b, `,"ipv6":`...)
		b = appendJSONString(b, s.IPv6)
		b = append(b, `,"port":`...)
		b = strconv.AppendInt(b, int64(s.Port), 10)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // strings always marshal
	return append(b, q...)
}
