package tests

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/a2sserver"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// listedServer is a server as /servers/ lists it.
type listedServer struct {
	Name       string
	Map        string
	NumPlayers int
	Bots       []struct{ Name string }
	Game       string
	GameID     string `json:"game_id"`
	Join       string
	Region     string
	Protocol   string
	Address    string
}

type listedPage struct {
	Total   int
	Servers []listedServer
}

// The list shows the servers game_query is configured with beside the
// master's: a real OpenArena server that registers with the master and is
// configured in game_query is listed once; another only configured there
// is listed with its region and its bots, from game_query's own cache (a
// GET of it through game_query afterwards is a cache hit), and the region
// filter picks it; the browser's list shows the same servers.
func TestServerListWithGameQueryServers(t *testing.T) {
	udp, web := testutil.FreeUDPAddr(t), testutil.FreeTCPAddr(t)
	config := func(gameQuery string) string {
		return gateConfig{UDP: udp, Protocols: "master", Web: web, Site: `handle_path /game/* {
	game_query {
		` + gameQuery + `
		ttl status 1h
	}
}
handle_path /servers/* {
	server_list
}
handle_path /browser/* {
	server_browser
}`}.String()
	}
	gate := testcaddy.Start(t, config(""))
	registered := gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="registered"}`)
	both := testutil.StartOpenArenaWithMaster(t, udp, "^2Both ^7Arena", 8, "Sarge")
	only := testutil.StartOpenArena(t, "^4Configured ^7Arena", 6, "Grism", "Major")
	testutil.WaitFor(t, "the OpenArena server to register", func() bool {
		return gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="registered"}`) > registered
	})
	// The master's list survives the reload that configures both servers
	// in game_query.
	gate.Load(t, config(fmt.Sprintf("server both %s quake3\n\t\t\tserver only %s openarena\n\t\t\tregion only eu-west", both.Addr, only.Addr)))

	base := "http://" + web + "/servers/"
	var p listedPage
	testutil.WaitFor(t, "both servers' statuses", func() bool {
		if r := getJSON(t, base, &p); r.status != 200 {
			t.Fatalf("GET /servers/: %d %s", r.status, r.body)
		}
		return len(p.Servers) == 2 && p.Servers[0].Name == "Both Arena" && p.Servers[1].Name == "Configured Arena" &&
			len(p.Servers[1].Bots) == 2
	})
	t.Logf("listed: %+v", p.Servers)
	// Both are OpenArena: one by its status (it registered as
	// Quake3Arena, and is configured by protocol), one by its
	// configuration.
	if s := p.Servers[0]; s.Address != both.Addr || s.Game != "OpenArena" || s.GameID != "openarena" || s.Region != "" || len(s.Bots) != 1 {
		t.Fatalf("the registered and configured server: %+v", s)
	}
	if s := p.Servers[1]; s.Region != "eu-west" || s.Address != only.Addr || s.Map != only.Map || s.Protocol != "quake3" || s.NumPlayers != 2 ||
		s.Game != "OpenArena" || s.GameID != "openarena" || s.Join != "" {
		t.Fatalf("the configured server: %+v", s)
	}
	if r := getJSON(t, base+"?region=EU-WEST", &p); r.status != 200 || p.Total != 1 || p.Servers[0].Address != only.Addr {
		t.Fatalf("?region=EU-WEST: %d %+v", r.status, p)
	}
	for _, name := range []string{"both", "only"} {
		r := request(t, "GET", "http://"+web+"/game/"+name)
		if r.status != 200 || r.header.Get("X-Gamegate-Cache") != "hit" {
			t.Fatalf("GET /game/%s after the list: %d, cache %q; want the list's status, a hit", name, r.status, r.header.Get("X-Gamegate-Cache"))
		}
	}
	var bp listedPage
	if r := getJSON(t, "http://"+web+"/browser/servers.json", &bp); r.status != 200 || bp.Total != 2 {
		t.Fatalf("the browser's list: %d %+v", r.status, bp)
	}
	// The page in a real browser: both servers, and the region filter
	// from its query string keeps the configured one.
	for query, want := range map[string][]string{"": {both.Addr, only.Addr}, "?region=eu-west": {only.Addr}} {
		dom := renderedPage(t, "http://"+web+"/browser/"+query)
		var shown []string
		for _, part := range strings.Split(dom, `<tr class="server`)[1:] {
			if _, rest, ok := strings.Cut(part, `data-address="`); ok {
				shown = append(shown, rest[:strings.Index(rest, `"`)])
			}
		}
		slices.Sort(shown)
		slices.Sort(want)
		if !slices.Equal(shown, want) {
			t.Fatalf("/browser/%s shows %v, want %v", query, shown, want)
		}
	}
}

// A game_query server configured with a Steam game is listed with the
// game's catalogue name and a steam://connect URL made of its configured
// address, however hostile what the server says: a real A2S server
// (wire/a2s) naming itself and its game with URLs of other schemes and
// claiming another game port.
func TestServerListJoinURL(t *testing.T) {
	const hostile = `javascript:alert(document.domain)//`
	srv := a2sserver.Start(t, a2sserver.Config{InfoChallenge: true, Info: wirea2s.Info{Protocol: 17,
		Name: []byte(hostile), Map: []byte("de_dust2"), Folder: []byte("data:text/html,x"), Game: []byte(hostile),
		AppID: 730, Players: 1, MaxPlayers: 16, ServerType: 'd', Environment: 'l', Version: []byte(hostile),
		EDF: 0x80, Port: 1}})
	_, _, web := startMasterSite(t, `handle_path /game/* {
	game_query {
		server cs `+srv.Addr+` counterstrike2
	}
}
handle_path /servers/* {
	server_list
}`)
	var p listedPage
	testutil.WaitFor(t, "the server's status", func() bool {
		if r := getJSON(t, "http://"+web+"/servers/", &p); r.status != 200 {
			t.Fatalf("GET /servers/: %d %s", r.status, r.body)
		}
		return len(p.Servers) == 1 && p.Servers[0].Name == hostile
	})
	s := p.Servers[0]
	t.Logf("listed: %+v", s)
	if s.Game != "Counter-Strike 2" || s.GameID != "counterstrike2" || s.Join != "steam://connect/"+srv.Addr {
		t.Fatalf("listed as %q (%q), join %q; want Counter-Strike 2 (counterstrike2), steam://connect/%s", s.Game, s.GameID, s.Join, srv.Addr)
	}
}

// statusServer is a game server on a real socket that registers with the
// master at masterAddr and answers every getstatus with name, counting
// them.
type statusServer struct {
	addr      string
	getstatus atomic.Int32
}

func startStatusServer(t *testing.T, masterAddr, name string) *statusServer {
	t.Helper()
	c := fakeServer(t, masterAddr, "127.0.0.1", `\sv_maxclients\8\clients\1\protocol\71\hostname\`+name)
	s := &statusServer{addr: c.Conn.LocalAddr().String()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := c.Conn.ReadFromUDP(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			// getstatus <challenge>: the answer echoes the challenge.
			if challenge, ok := bytes.CutPrefix(buf[:n], []byte("\xff\xff\xff\xffgetstatus ")); ok {
				s.getstatus.Add(1)
				reply := "\xff\xff\xff\xffstatusResponse\n\\sv_hostname\\" + name + "\\mapname\\q3dm17\\sv_maxclients\\8\\challenge\\" +
					string(bytes.TrimSpace(challenge)) + "\n0 0 \"Visor\"\n"
				_, _ = c.Conn.WriteToUDP([]byte(reply), from)
			}
		}
	}()
	t.Cleanup(func() { c.Conn.Close(); <-done })
	return s
}

// server_list and server_browser of one master share its servers'
// statuses: a server is queried once for both, not once for each.
func TestServerListAndBrowserQueryOnce(t *testing.T) {
	gate, udp, web := startMasterSite(t, `handle_path /servers/* {
	server_list {
		ttl 1h
	}
}
handle_path /browser/* {
	server_browser
}`)
	srv := startStatusServer(t, udp, "Once")
	testutil.WaitFor(t, "the server to register", func() bool { return gate.MustMetric(t, "gamegate_master_servers") == 1 })
	for _, url := range []string{"http://" + web + "/servers/", "http://" + web + "/browser/servers.json"} {
		testutil.WaitFor(t, url+" to show the server's status", func() bool {
			var p listedPage
			getJSON(t, url, &p)
			return len(p.Servers) == 1 && p.Servers[0].Map == "q3dm17"
		})
	}
	if n := srv.getstatus.Load(); n != 1 {
		t.Fatalf("the server got %d getstatus for the list and the browser, want 1", n)
	}
}
