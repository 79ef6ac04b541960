// Package games is gamegate's catalogue of games, free of Caddy: every game
// ID of GameDig's catalogue (and its v4 IDs), with its name, GameDig's
// protocol for it, its default ports, and the gamegate query protocol that
// serves it. The facts are GameDig's (gamedig.json, generated from the
// pinned npm package by scripts/games-catalogue.mjs); gamegate's own
// decisions, each with why, are in gamegate.json.
//
// Which protocols are registered is not the catalogue's to know: a game is
// queryable when the gamegate protocol it names is registered (see
// Coverage).
package games

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gamegate/gamegate/internal/netaddr"
)

// Game is one game of the catalogue.
type Game struct {
	// ID is GameDig's game ID (its --type).
	ID string `json:"id"`
	// Name is the game's display name.
	Name string `json:"name"`
	// OldIDs are the game's GameDig v4 IDs, still accepted.
	OldIDs []string `json:"old_ids,omitempty"`
	// Protocol is GameDig's protocol for the game.
	Protocol string `json:"protocol"`
	// GamegateProtocol is the gamegate query protocol (the name of a
	// gamegate.query module) that speaks to the game: Protocol itself
	// unless gamegate.json maps it.
	GamegateProtocol string `json:"gamegate_protocol"`
	// Port is the game's default game port, the one players connect to;
	// 0 when GameDig names none.
	Port int `json:"port,omitempty"`
	// QueryPort is the game's default query port; 0 when it has none of
	// its own.
	QueryPort int `json:"port_query,omitempty"`
	// QueryPortOffsets are the query port's offsets from the game port,
	// in GameDig's order of trying them.
	QueryPortOffsets []int `json:"port_query_offset,omitempty"`
	// ReleaseYear is the year GameDig gives.
	ReleaseYear int `json:"release_year,omitempty"`
	// Join is the kind of URL that starts the game and joins a server
	// (JoinURL): "steam", or "" for none known.
	Join string `json:"-"`
}

// Catalogue is the games by ID, with their v4 IDs.
type Catalogue struct {
	// GamedigVersion is the version of the GameDig catalogue the facts
	// come from.
	GamedigVersion string
	games          []Game // sorted by ID
	byID           map[string]int
	byOldID        map[string]int
	// byStatusName finds a game by what its servers' statuses name it,
	// under its gamegate protocol: the game folders of gamegate.json,
	// then the games' IDs and names, lower-cased.
	byStatusName map[statusName]int
}

type statusName struct{ protocol, name string }

//go:embed gamedig.json
var gamedigJSON []byte

//go:embed gamegate.json
var gamegateJSON []byte

// gamedigFile is gamedig.json.
type gamedigFile struct {
	Source         string `json:"source"`
	GamedigVersion string `json:"gamedig_version"`
	Games          []Game `json:"games"`
}

// Decisions is gamegate.json: gamegate's departures from GameDig.
type Decisions struct {
	Source string `json:"source"`
	// Protocols maps GameDig protocols to the gamegate protocols serving
	// them, where the names differ.
	Protocols map[string]Override `json:"protocols"`
	// Games overrides single games.
	Games map[string]Override `json:"games"`
	// StatusGameNames are what servers' statuses name their game by
	// where it is neither its ID nor its name (a Quake 3 game's folder).
	StatusGameNames map[string]StatusGameName `json:"status_game_names"`
}

// StatusGameName is the game a status's game name tells.
type StatusGameName struct {
	Game string `json:"game"`
	// Why says how it is known, for people.
	Why string `json:"why"`
}

// Override is one departure from GameDig's catalogue. A nil field keeps
// GameDig's value.
type Override struct {
	GamegateProtocol string `json:"gamegate_protocol,omitempty"`
	Protocol         string `json:"protocol,omitempty"`
	Port             *int   `json:"port,omitempty"`
	QueryPort        *int   `json:"port_query,omitempty"`
	QueryPortOffsets []int  `json:"port_query_offset,omitempty"`
	// Join is the kind of join URL the games have (Game.Join).
	Join string `json:"join,omitempty"`
	// Why says the reason, for people.
	Why string `json:"why"`
}

var (
	loadOnce  sync.Once
	loaded    *Catalogue
	decisions Decisions
	loadErr   error
)

// Default returns the catalogue built into gamegate.
func Default() *Catalogue {
	loadOnce.Do(func() {
		loaded, decisions, loadErr = parse(gamedigJSON, gamegateJSON)
	})
	if loadErr != nil {
		// The files are embedded and checked by the tests: this is a
		// build that was never tested.
		panic("games: the embedded catalogue does not load: " + loadErr.Error())
	}
	return loaded
}

// GamegateDecisions returns gamegate.json as built in.
func GamegateDecisions() Decisions {
	Default()
	return decisions
}

// parse builds a catalogue from GameDig's facts and gamegate's decisions.
func parse(facts, own []byte) (*Catalogue, Decisions, error) {
	var f gamedigFile
	if err := json.Unmarshal(facts, &f); err != nil {
		return nil, Decisions{}, fmt.Errorf("gamedig.json: %w", err)
	}
	var d Decisions
	if err := json.Unmarshal(own, &d); err != nil {
		return nil, Decisions{}, fmt.Errorf("gamegate.json: %w", err)
	}
	c := &Catalogue{GamedigVersion: f.GamedigVersion, games: f.Games,
		byID: make(map[string]int, len(f.Games)), byOldID: make(map[string]int)}
	slices.SortFunc(c.games, func(a, b Game) int { return strings.Compare(a.ID, b.ID) })
	for i := range c.games {
		g := &c.games[i]
		if o, ok := d.Games[g.ID]; ok {
			o.apply(g)
		}
		if o, ok := d.Protocols[g.Protocol]; ok && g.Join == "" {
			g.Join = o.Join
		}
		if g.GamegateProtocol == "" {
			g.GamegateProtocol = g.Protocol
			if o, ok := d.Protocols[g.Protocol]; ok {
				g.GamegateProtocol = o.GamegateProtocol
			}
		}
		if err := g.check(); err != nil {
			return nil, Decisions{}, err
		}
		if _, dup := c.byID[g.ID]; dup {
			return nil, Decisions{}, fmt.Errorf("game %q: listed twice", g.ID)
		}
		c.byID[g.ID] = i
	}
	for i, g := range c.games {
		for _, old := range g.OldIDs {
			if _, dup := c.byOldID[old]; dup {
				return nil, Decisions{}, fmt.Errorf("game %q: v4 ID %q is another game's too", g.ID, old)
			}
			c.byOldID[old] = i
		}
	}
	for id, o := range d.Games {
		if _, ok := c.byID[id]; !ok {
			return nil, Decisions{}, fmt.Errorf("gamegate.json: no game %q", id)
		}
		if o.Why == "" {
			return nil, Decisions{}, fmt.Errorf("gamegate.json: game %q: no why", id)
		}
	}
	for p, o := range d.Protocols {
		if o.Why == "" || o.GamegateProtocol == "" {
			return nil, Decisions{}, fmt.Errorf("gamegate.json: protocol %q: needs gamegate_protocol and why", p)
		}
	}
	c.byStatusName = make(map[statusName]int)
	for i, g := range c.games { // IDs first: an ID wins over another game's name
		c.byStatusName[statusName{g.GamegateProtocol, g.ID}] = i
	}
	for i, g := range c.games {
		k := statusName{g.GamegateProtocol, strings.ToLower(g.Name)}
		if _, taken := c.byStatusName[k]; !taken {
			c.byStatusName[k] = i
		}
	}
	for name, s := range d.StatusGameNames {
		i, ok := c.byID[s.Game]
		if !ok || s.Why == "" || name != strings.ToLower(name) {
			return nil, Decisions{}, fmt.Errorf("gamegate.json: status game name %q: needs a known game, a why, and lower case", name)
		}
		c.byStatusName[statusName{c.games[i].GamegateProtocol, name}] = i
	}
	return c, d, nil
}

func (o Override) apply(g *Game) {
	if o.GamegateProtocol != "" {
		g.GamegateProtocol = o.GamegateProtocol
	}
	if o.Protocol != "" {
		g.Protocol = o.Protocol
	}
	if o.Port != nil {
		g.Port = *o.Port
	}
	if o.QueryPort != nil {
		g.QueryPort = *o.QueryPort
	}
	if o.QueryPortOffsets != nil {
		g.QueryPortOffsets = o.QueryPortOffsets
	}
	if o.Join != "" {
		g.Join = o.Join
	}
}

// check refuses a game whose ports could not be used.
func (g *Game) check() error {
	switch {
	case !IsID(g.ID):
		return fmt.Errorf("game %q: not an ID (lower-case letters and digits)", g.ID)
	case g.Name == "" || g.Protocol == "":
		return fmt.Errorf("game %q: needs a name and a protocol", g.ID)
	case g.Port < 0 || g.Port > 65535 || g.QueryPort < 0 || g.QueryPort > 65535:
		return fmt.Errorf("game %q: a port outside 0 to 65535", g.ID)
	}
	for _, o := range g.QueryPortOffsets {
		if o < -65535 || o > 65535 {
			return fmt.Errorf("game %q: offset %d", g.ID, o)
		}
	}
	return nil
}

// IsID reports whether s has the form of a game ID: 1 to 64 lower-case
// ASCII letters and digits.
func IsID(s string) bool {
	return s != "" && len(s) <= 64 && !strings.ContainsFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
}

// Games returns every game, sorted by ID. The caller must not change them.
func (c *Catalogue) Games() []Game { return c.games }

// Lookup finds a game by its ID, or else by one of its GameDig v4 IDs
// (GameDig's checkOldIDs).
func (c *Catalogue) Lookup(id string) (Game, bool) {
	if i, ok := c.byID[id]; ok {
		return c.games[i], true
	}
	if i, ok := c.byOldID[id]; ok {
		return c.games[i], true
	}
	return Game{}, false
}

// ByStatusName finds the game a server of the gamegate query protocol
// protocol names in its status or its heartbeat (a Quake 3 family
// server's gamename): a game folder gamegate.json knows (baseoa is
// OpenArena), else a game's ID or name, case-insensitively, among the
// games of that protocol. Quake 3's own heartbeat name, Quake3Arena,
// which every ioquake3 game sends, tells none.
func (c *Catalogue) ByStatusName(protocol, name string) (Game, bool) {
	if name == "" || len(name) > maxStatusName {
		return Game{}, false
	}
	if i, ok := c.byStatusName[statusName{protocol, strings.ToLower(name)}]; ok {
		return c.games[i], true
	}
	return Game{}, false
}

// maxStatusName is longer than every game's name and ID: a longer name
// is none of them, and is not lower-cased.
const maxStatusName = 128

// JoinURL returns the URL that starts g and joins its server at host and
// port, or "" when g has none: steam://connect/host:port for a Steam game
// (Join "steam") whose query port is its game port, as Source and GoldSrc
// games' are (Steam looks the server up at that address before it starts
// the game; a game that answers queries on another port is left out).
// host must be an IP address or a DNS host name (netaddr.IsHostName) and
// port from 1 to 65535, else there is none: the URL is made of
// nothing else, so no text of a server's can reach it.
func (g Game) JoinURL(host string, port int) string {
	if g.Join != "steam" || g.QueryPort != 0 || len(g.QueryPortOffsets) > 0 {
		return ""
	}
	hostPort, ok := joinAddress(host, port)
	if !ok {
		return ""
	}
	return "steam://connect/" + hostPort
}

// joinAddress is host:port for a URL if host is an IP address or a DNS
// name and port a port.
func joinAddress(host string, port int) (string, bool) {
	if port < 1 || port > 65535 {
		return "", false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return "", false // a zone is the client's own, not a server's
		}
		return netip.AddrPortFrom(a.Unmap(), uint16(port)).String(), true
	}
	if !netaddr.IsHostName(host) {
		return "", false
	}
	return host + ":" + strconv.Itoa(port), true
}

// ErrNoPort is the error of an address without a port for a game with no
// default port.
var ErrNoPort = errors.New("the game has no default port: give host:port")

// QueryPortFor returns the port to query for a server of g whose address
// names port given (0: none), following GameDig's rules and keeping the
// first port GameDig would try that can answer:
//
//   - a given port is the game port: the query port is given plus the
//     first offset; without offsets, the game's query port when given is
//     its default game port (GameDig tries that one second, after the game
//     port itself, which does not answer queries), else given itself;
//   - no port: the game's query port, else its default game port plus the
//     first offset (or itself), else ErrNoPort.
//
// GameDig's --givenPortOnly has no counterpart here: name the protocol
// instead of the game to query the given port itself.
func (g Game) QueryPortFor(given int) (int, error) {
	offset := 0
	if len(g.QueryPortOffsets) > 0 {
		offset = g.QueryPortOffsets[0]
	}
	var p int
	switch {
	case given > 0 && len(g.QueryPortOffsets) > 0:
		p = given + offset
	case given > 0 && g.QueryPort > 0 && given == g.Port:
		p = g.QueryPort
	case given > 0:
		p = given
	case g.QueryPort > 0:
		p = g.QueryPort
	case g.Port > 0:
		p = g.Port + offset
	default:
		return 0, ErrNoPort
	}
	if p < 1 || p > 65535 {
		return 0, fmt.Errorf("the query port %d (game port %d with offset %d) is outside 1 to 65535", p, given, offset)
	}
	return p, nil
}

// Coverage counts the games the registered gamegate protocols serve.
type Coverage struct {
	Games     int     `json:"games"`
	Queryable int     `json:"queryable"`
	Percent   float64 `json:"percent"` // of Games, rounded to 0.1
}

// Coverage counts the games whose gamegate protocol registered reports
// as registered.
func (c *Catalogue) Coverage(registered func(protocol string) bool) Coverage {
	cov := Coverage{Games: len(c.games)}
	for _, g := range c.games {
		if registered(g.GamegateProtocol) {
			cov.Queryable++
		}
	}
	if cov.Games > 0 {
		cov.Percent = math.Round(float64(cov.Queryable)*1000/float64(cov.Games)) / 10
	}
	return cov
}
