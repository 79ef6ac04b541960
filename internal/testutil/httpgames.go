package testutil

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// HTTPGameServer is a fixture game server's web API on loopback: each
// path answers its body (a JSON or XML document as the game's server
// serves it), a 404 otherwise. Hits counts the requests answered.
type HTTPGameServer struct {
	// Routes maps a path with its query ("/info.json",
	// "/feed/dedicated-server-stats.xml?code=…") to its body.
	Routes map[string][]byte
	// Handler, when set, answers instead of Routes.
	Handler http.HandlerFunc
	// Addr is the server's address, set by StartHTTPGame.
	Addr string
	Hits atomic.Int64
}

// StartHTTPGame starts s on a free loopback port (or on s.Addr when it is
// set: a game whose UDP and HTTP answers share a port, or another
// loopback address with port 0), serving until the test ends.
func StartHTTPGame(t testing.TB, s *HTTPGameServer) {
	t.Helper()
	if s.Addr == "" {
		s.Addr = FreeTCPAddr(t)
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String() // its port, where s.Addr named port 0
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Hits.Add(1)
		if s.Handler != nil {
			s.Handler(w, r)
			return
		}
		body, ok := s.Routes[r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	})}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("fixture HTTP server: %v", err)
		}
	}()
	t.Cleanup(func() { _ = srv.Close() })
}

// ExampleFarmingSimulatorFeed is a Farming Simulator 22 dedicated
// server's statistics feed (/feed/dedicated-server-stats.xml) written from
// the feed's documented layout: the Server element with its name, map and
// version, Slots with a Player per slot (two used, one an admin, with
// their uptime in minutes and position), and Mods.
const ExampleFarmingSimulatorFeed = `<?xml version="1.0" encoding="utf-8" standalone="no" ?>
<Server game="Farming Simulator 22" version="1.14.0.0" name="Gate Farm &amp; Friends" mapName="Elmcreek" dayTime="45360000" mapOverviewFilename="data/maps/mapUS/overview.png" mapSize="2048">
 <Slots capacity="16" numUsed="2">
  <Player isUsed="true" isAdmin="true" uptime="42" x="-120.5" y="98.25" z="310">Bauer Ä</Player>
  <Player isUsed="true" isAdmin="false" uptime="7" x="12" y="0.5" z="-3.75">Farmhand</Player>
  <Player isUsed="false"/>
  <Player isUsed="false"/>
 </Slots>
 <Mods>
  <Mod name="FS22_precisionFarming" author="GIANTS Software" version="1.0.0.3" hash="8e5f1c2a">Precision Farming</Mod>
  <Mod name="FS22_seasons" author="Realismus Modding" version="1.2.0.0" hash="0a1b2c3d">Seasons</Mod>
 </Mods>
</Server>
`

// ExampleFarmingSimulator is a Farming Simulator server whose feed answers
// ExampleFarmingSimulatorFeed for token and nothing for any other code.
func ExampleFarmingSimulator(token string) *HTTPGameServer {
	return &HTTPGameServer{Routes: map[string][]byte{
		"/feed/dedicated-server-stats.xml?code=" + token: []byte(ExampleFarmingSimulatorFeed),
	}}
}

// FiveMServer is a fixture FiveM (FXServer) server on loopback, written
// from its documented endpoints: on one port, UDP "getinfo <challenge>"
// is answered FF FF FF FF "infoResponse\n" and an info string (UTF-8,
// the challenge echoed), and HTTP serves /info.json and /players.json.
type FiveMServer struct {
	// Info is the info string's pairs, in order, without the challenge.
	Info [][2]string
	// InfoJSON and PlayersJSON are the documents served.
	InfoJSON, PlayersJSON string
	// Addr is the server's address, UDP and TCP, set by StartFiveM.
	Addr string
	// HTTP is the web side, for its hit count.
	HTTP *HTTPGameServer
}

// StartFiveM starts s, answering until the test ends.
func StartFiveM(t testing.TB, s *FiveMServer) {
	t.Helper()
	// One port for both sides, as FXServer has: a leased one, free for
	// TCP and UDP alike (an ephemeral UDP port may be another socket's
	// TCP port).
	udp := ServeUDPAt(t, FreeTCPAddr(t), func(_ netip.AddrPort, req []byte) [][]byte {
		cmd := strings.TrimRight(string(req), "\x00")
		challenge, ok := strings.CutPrefix(cmd, "\xff\xff\xff\xffgetinfo ")
		if !ok {
			return nil
		}
		var b strings.Builder
		b.WriteString("\xff\xff\xff\xffinfoResponse\n")
		for _, kv := range s.Info {
			fmt.Fprintf(&b, "\\%s\\%s", kv[0], kv[1])
			if kv[0] == "clients" {
				fmt.Fprintf(&b, "\\challenge\\%s", challenge)
			}
		}
		return [][]byte{[]byte(b.String())}
	})
	s.Addr = udp.String()
	s.HTTP = &HTTPGameServer{Addr: s.Addr, Routes: map[string][]byte{
		"/info.json": []byte(s.InfoJSON), "/players.json": []byte(s.PlayersJSON)}}
	StartHTTPGame(t, s.HTTP)
}

// ExampleFiveM is a FiveM server with two players: FXServer's getinfo
// keys (sv_maxclients, clients, gamename, protocol, hostname with a
// non-ASCII character, gametype, mapname, iv), its info.json (server,
// version, resources, vars) and players.json (name, id, ping,
// identifiers, endpoint).
func ExampleFiveM() *FiveMServer {
	return &FiveMServer{
		Info: [][2]string{{"sv_maxclients", "48"}, {"clients", "2"}, {"gamename", "gta5"}, {"protocol", "4"},
			{"hostname", "Gate RP ★ Los Santos"}, {"gametype", "Freeroam"}, {"mapname", "fivem-map-skater"}, {"iv", "-1386442478"}},
		InfoJSON: `{"enhancedHostSupport":true,"icon":"iVBORw0KGgo=","requestSteamTicket":"off",` +
			`"resources":["mapmanager","chat","spawnmanager","sessionmanager","basic-gamemode","hardcap","rconlog"],` +
			`"server":"FXServer-master SERVER v1.0.0.7290 linux",` +
			`"vars":{"sv_enforceGameBuild":"2802","sv_maxClients":"48","sv_projectName":"Gate RP","tags":"roleplay, economy","locale":"en-US"},` +
			`"version":1386442478}`,
		PlayersJSON: `[{"endpoint":"127.0.0.1:55012","id":1,"identifiers":["license:0a1b2c","discord:1234"],"name":"Niko Bellic","ping":42},` +
			`{"endpoint":"127.0.0.1:55020","id":3,"identifiers":["license:ff00"],"name":"Franklin É","ping":87}]`,
	}
}
