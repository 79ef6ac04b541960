package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wire "github.com/gamegate/gamegate/wire/master"
)

// startMaster serves a master on a free loopback port with options.
func startMaster(t *testing.T, options string) (*testcaddy.Caddy, string) {
	t.Helper()
	addr := testutil.FreeUDPAddr(t)
	return testcaddy.Start(t, gateConfig{UDP: addr, Protocols: "master {\n\t" + options + "\n}"}.String()), addr
}

// masterList asks the master for a list with query from c and returns
// the servers, checking each datagram's size and that only the last ends
// the list; it waits up to timeout for the first datagram.
func masterList(t *testing.T, c *testutil.UDPClient, query string) (servers []string, datagrams, bytes int) {
	t.Helper()
	c.Send([]byte(wire.Header + query))
	wait := 2 * time.Second
	for {
		d, ok := c.Recv(wait)
		if !ok {
			if datagrams > 0 {
				t.Fatalf("%s: the list did not end (%d datagrams)", query, datagrams)
			}
			return nil, 0, 0
		}
		wait = time.Second
		datagrams++
		bytes += len(d)
		if len(d) > wire.MaxResponseDatagram {
			t.Fatalf("%s: a list datagram of %d bytes", query, len(d))
		}
		addrs, _, eot, err := wire.DecodeResponse(d, nil)
		if err != nil {
			t.Fatalf("%s: %q: %v", query, d, err)
		}
		for _, a := range addrs {
			servers = append(servers, a.String())
		}
		if eot {
			return servers, datagrams, bytes
		}
	}
}

// quakestatMaster runs quakestat against the master and returns the
// master's server count and the addresses of the servers it then queried
// and found online.
func quakestatMaster(t *testing.T, kind, addr string) (count int, online []string) {
	t.Helper()
	out, err := exec.Command("quakestat", "-json", kind, addr).Output()
	if err != nil {
		t.Fatalf("quakestat %s %s: %v: %s", kind, addr, err, out)
	}
	t.Logf("quakestat %s %s: %s", kind, addr, out)
	var rows []struct {
		Protocol string
		Address  string
		Status   string
		Servers  int
		Name     string
		Map      string
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("quakestat printed %s: %v", out, err)
	}
	for _, r := range rows {
		switch {
		case r.Address == addr:
			count = r.Servers
		case r.Status == "online":
			online = append(online, r.Address)
		}
	}
	return count, online
}

// A real OpenArena server registers through its own heartbeat; qstat
// lists it from the master and queries it; an address that heartbeats but
// never answers getinfo, and answers from the wrong port or too late, are
// never listed; the stopped server leaves the list after the expiry.
func TestMasterWithOpenArena(t *testing.T) {
	testutil.RequireDebianPeer(t, "/usr/bin/quakestat", "qstat")
	t.Logf("independent client: quakestat %s", testutil.QuakestatVersion(t))
	const expiry = 25 * time.Second
	// quakestat and the test's own client ask from 127.0.0.1: list_rate
	// lets them.
	gate, addr := startMaster(t, fmt.Sprintf("expiry %s\nchallenge_timeout 1s\nlist_rate 100", expiry))
	registered := gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="registered"}`)

	oa := testutil.StartOpenArenaWithMaster(t, addr, "^2Master ^7Arena", 8, "Sarge", "Grism")
	client := testutil.DialUDP(t, "127.0.0.1:0", addr)
	testutil.WaitFor(t, "the OpenArena server to register", func() bool {
		return gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="registered"}`) > registered
	})
	listedAt := time.Now()

	for _, kind := range []string{"-openarenam", "-q3m"} {
		count, online := quakestatMaster(t, kind, addr)
		want := 1
		if kind == "-q3m" {
			want = 0 // Quake III's protocol is 68; OpenArena's 71
		}
		if count != want || len(online) != want || want == 1 && online[0] != oa.Addr {
			t.Fatalf("quakestat %s: master lists %d servers, online %v; want %d, %s", kind, count, online, want, oa.Addr)
		}
	}
	if got, n, _ := masterList(t, client, "getserversExt Quake3Arena 71 empty full"); !slices.Equal(got, []string{oa.Addr}) {
		t.Fatalf("getserversExt: got %v in %d datagrams, want [%s]; %v", got, n, oa.Addr, gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="dropped_rate_limited"}`))
	}

	// An address that heartbeats but does not answer: it gets its getinfo
	// (to its exact address), and is never listed, whatever arrives from
	// elsewhere or after the challenge's timeout.
	victim := testutil.DialUDP(t, "127.0.0.3:0", addr)
	challenge := heartbeatChallenge(t, victim)
	victimAddr := victim.Conn.LocalAddr().String()
	info := wire.AppendInfoResponse(nil, []byte(`\sv_maxclients\8\clients\1\protocol\71\gamename\Quake3Arena\challenge\`+string(challenge)))
	other := testutil.DialUDP(t, "127.0.0.3:0", addr) // same host, another port
	unexpected := gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="dropped_unexpected"}`)
	other.Send(info)
	testutil.WaitFor(t, "the challenges to time out", func() bool {
		return gate.MustMetric(t, "gamegate_master_challenges") == 0
	})
	victim.Send(info) // the right challenge, too late
	testutil.WaitFor(t, "the late answers to be refused", func() bool {
		return gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="dropped_unexpected"}`) == unexpected+2
	})
	if got, _, _ := masterList(t, client, "getservers 71 empty full"); slices.Contains(got, victimAddr) || len(got) != 1 {
		t.Fatalf("listed %v; the address %s never answered in time", got, victimAddr)
	}

	// Stopped, the server leaves the list once its expiry has passed.
	oa.Stop()
	var got []string
	for deadline := listedAt.Add(expiry + 10*time.Second); ; time.Sleep(250 * time.Millisecond) {
		if got, _, _ = masterList(t, client, "getservers 71 empty full"); len(got) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still listed %v, %s after it registered with an expiry of %s", got, time.Since(listedAt), expiry)
		}
	}
	if n := gate.MustMetric(t, "gamegate_master_servers"); n != 0 {
		t.Fatalf("gamegate_master_servers %v after the expiry, want 0", n)
	}
}

// fakeServers registers n game servers through real sockets on ip, each
// answering its getinfo as a game server does.
func fakeServers(t *testing.T, addr, ip string, n int) []*testutil.UDPClient {
	t.Helper()
	var cs []*testutil.UDPClient
	for range n {
		cs = append(cs, fakeServer(t, addr, ip, `\sv_maxclients\8\clients\1\protocol\71`))
	}
	return cs
}

// fakeServer registers a game server through a real socket on ip, which
// answers its getinfo with info.
func fakeServer(t *testing.T, addr, ip, info string) *testutil.UDPClient {
	t.Helper()
	c := testutil.DialUDP(t, ip+":0", addr)
	c.Send(wire.AppendInfoResponse(nil, []byte(info+`\challenge\`+string(heartbeatChallenge(t, c)))))
	return c
}

// heartbeatChallenge sends a heartbeat from c and returns the challenge of
// the getinfo that answers it.
func heartbeatChallenge(t *testing.T, c *testutil.UDPClient) []byte {
	t.Helper()
	c.Send(wire.AppendHeartbeat(nil, "QuakeArena-1"))
	d, ok := c.Recv(5 * time.Second)
	if !ok {
		t.Fatalf("%s: no getinfo for its heartbeat", c.Conn.LocalAddr())
	}
	ch, err := wire.DecodeGetInfo(d)
	if err != nil {
		t.Fatalf("getinfo %q: %v", d, err)
	}
	return ch
}

// The list answer is an amplifier by nature: a source gets at most
// list_burst requests' worth of max_reply_datagrams datagrams, however
// many it sends, and sources together at most reply_burst datagrams (here
// all in one network, whose share is made large enough not to matter).
func TestMasterAmplificationBounded(t *testing.T) {
	const (
		servers    = 600 // three and a bit datagrams' worth of IPv4 entries
		replyDgram = 2
		listBurst  = 3
		replyBurst = 20
	)
	gate, addr := startMaster(t, fmt.Sprintf(`max_servers_per_address %d
heartbeat_rate 100000
list_rate 0.001
list_burst %d
max_reply_datagrams %d
reply_rate 0.001
reply_burst %d
network_reply_burst 100`, servers, listBurst, replyDgram, replyBurst))
	fakeServers(t, addr, "127.0.0.1", servers)
	testutil.WaitFor(t, "every server to register", func() bool {
		return gate.MustMetric(t, "gamegate_master_servers") == servers
	})

	// One source asking over and over, then many sources (a spoofer's
	// forged addresses) once each.
	query := []byte(wire.Header + "getservers 71 empty full")
	one := testutil.DialUDP(t, "127.0.0.2:0", addr)
	many := make([]*testutil.UDPClient, 40)
	for i := range many {
		many[i] = testutil.DialUDP(t, fmt.Sprintf("127.0.3.%d:0", i+1), addr)
	}
	handled := func() float64 {
		n := 0.0
		for _, v := range []string{"listed", "list_cut", "dropped_rate_limited", "dropped_over_capacity"} {
			n += gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="`+v+`"}`)
		}
		return n
	}
	before, sentBefore := handled(), gate.MustMetric(t, "gamegate_master_sent_datagrams_total")
	for range 50 {
		one.Send(query)
	}
	testutil.WaitFor(t, "the 50 requests to be handled", func() bool { return handled() == before+50 })
	for _, c := range many {
		c.Send(query)
	}
	testutil.WaitFor(t, "the 40 requests to be handled", func() bool { return handled() == before+90 })
	sentDatagrams := gate.MustMetric(t, "gamegate_master_sent_datagrams_total") - sentBefore

	got := receiveAll(t, append([]*testutil.UDPClient{one}, many...), int(sentDatagrams))
	oneDatagrams, oneBytes := len(got[0]), 0
	for _, d := range got[0] {
		oneBytes += len(d)
	}
	t.Logf("one source: sent %d bytes in 50 requests, got %d bytes in %d datagrams", 50*len(query), oneBytes, oneDatagrams)
	if oneDatagrams != listBurst*replyDgram || oneBytes > listBurst*replyDgram*wire.MaxResponseDatagram {
		t.Fatalf("one source got %d datagrams, %d bytes; want its burst, %d datagrams", oneDatagrams, oneBytes, listBurst*replyDgram)
	}
	manyDatagrams := 0
	for _, ds := range got[1:] {
		manyDatagrams += len(ds)
	}
	t.Logf("40 sources: %d datagrams; %v sent in all", manyDatagrams, sentDatagrams)
	if budget := replyBurst - listBurst*replyDgram; manyDatagrams > budget || sentDatagrams > replyBurst {
		t.Fatalf("40 sources got %d datagrams (%v sent in all); want at most the %d left of reply_burst %d", manyDatagrams, sentDatagrams, budget, replyBurst)
	}
	if manyDatagrams == 0 {
		t.Fatal("no source got a list: the budget was not tested")
	}
}

// List requests forged from 400 addresses in 400 networks of 127/8 drain
// the open part of the master's reply budget (reply_rate 50); a client the
// master knows (it was answered while the budget was calm) still gets its
// whole list, every time it asks while the flood lasts, and the flood gets
// no more than the budget.
func TestMasterSpoofedListFloodKeepsKnownClients(t *testing.T) {
	const servers, replyRate = 600, 50 // a list of four datagrams
	gate, addr := startMaster(t, fmt.Sprintf("max_servers_per_address %d\nheartbeat_rate 100000\nreply_rate %d", servers, replyRate))
	fakeServers(t, addr, "127.0.0.1", servers)
	testutil.WaitFor(t, "every server to register", func() bool {
		return gate.MustMetric(t, "gamegate_master_servers") == servers
	})
	const query = "getservers 71 empty full"
	client := testutil.DialUDP(t, "127.0.200.1:0", addr)
	if got, n, _ := masterList(t, client, query); len(got) != servers {
		t.Fatalf("before the flood: %d servers in %d datagrams, want %d", len(got), n, servers)
	}
	// A source is known once the budget stayed calm this long after its
	// first answer.
	time.Sleep(master.KnownSourceSettle + 100*time.Millisecond)

	target := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr))
	var forged []*net.UDPConn
	for i := range 400 {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, byte(1+i/100), byte(i%100), 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		forged = append(forged, c)
	}
	overCapacity := func() float64 {
		return gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="dropped_over_capacity"}`) +
			gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="dropped_network_over_capacity"}`)
	}
	sentBefore, refusedBefore := gate.MustMetric(t, "gamegate_master_sent_datagrams_total"), overCapacity()
	stop, done := make(chan struct{}), make(chan int)
	started := time.Now()
	go func() {
		requests, b := 0, []byte(wire.Header+query)
		for tick := time.NewTicker(100 * time.Millisecond); ; {
			for _, c := range forged {
				_, _ = c.WriteToUDP(b, target)
				requests++
			}
			select {
			case <-stop:
				tick.Stop()
				done <- requests
				return
			case <-tick.C:
			}
		}
	}()
	testutil.WaitFor(t, "the flood to exhaust the open budget", func() bool { return overCapacity() > refusedBefore+100 })

	answered := 0
	for i := range 3 {
		if i > 0 {
			time.Sleep(time.Second) // the client's own network share: four datagrams per 0.64 s
		}
		got, n, _ := masterList(t, client, query)
		t.Logf("known client, request %d during the flood: %d servers in %d datagrams", i+1, len(got), n)
		if len(got) == servers {
			answered++
		}
	}
	newcomer, _, _ := masterList(t, testutil.DialUDP(t, "127.0.201.1:0", addr), query)
	close(stop)
	requests := <-done
	elapsed := time.Since(started)
	sent := gate.MustMetric(t, "gamegate_master_sent_datagrams_total") - sentBefore
	t.Logf("flood: %d forged requests in %v, %v refused over capacity; %v list datagrams sent in all; a new client got %d servers",
		requests, elapsed.Round(time.Millisecond), overCapacity()-refusedBefore, sent, len(newcomer))
	for _, v := range []string{"listed", "list_cut", "dropped_rate_limited", "dropped_over_capacity", "dropped_network_over_capacity"} {
		t.Logf("%s: %v", v, gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="`+v+`"}`))
	}
	if answered != 3 {
		t.Fatalf("the known client got its whole list %d times of 3 during the flood", answered)
	}
	if limit := replyRate*elapsed.Seconds() + replyRate + 4; sent > limit {
		t.Fatalf("%v list datagrams sent in %v; the budget allows %.0f", sent, elapsed, limit)
	}
}

// receiveAll reads the datagrams each of cs receives until want have
// arrived in all (or 5 s have passed), checking each list datagram's
// size.
func receiveAll(t *testing.T, cs []*testutil.UDPClient, want int) [][][]byte {
	t.Helper()
	got := make([][][]byte, len(cs))
	n := 0
	for deadline := time.Now().Add(5 * time.Second); n < want && time.Now().Before(deadline); {
		for i, c := range cs {
			if d, ok := c.Recv(time.Millisecond); ok {
				if len(d) > wire.MaxResponseDatagram {
					t.Fatalf("a list datagram of %d bytes", len(d))
				}
				got[i] = append(got[i], d)
				n++
			}
		}
	}
	if n != want {
		t.Fatalf("received %d datagrams, the master sent %d", n, want)
	}
	return got
}

// A flood of heartbeats from many addresses and ports, none answering its
// getinfo, and of list requests: every table stays within its bound, no
// getinfo is larger than the heartbeat it answers (the heartbeats' protocol
// strings are 4 to 8 characters: 4 is too short for a challenge, 5 leaves
// room for exactly the shortest), and the master still registers a real
// server afterwards.
func TestMasterFloodBounded(t *testing.T) {
	const maxChallenges, maxSources = 64, 128
	gate, addr := startMaster(t, fmt.Sprintf(`max_challenges %d
max_sources %d
challenge_timeout 1s`, maxChallenges, maxSources))
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	target := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr))
	var senders []*net.UDPConn
	var heartbeats [][]byte // senders[i] sends heartbeats[i]
	for i := range 300 {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, byte(4+i/200), byte(i%200+1))})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		senders = append(senders, c)
		heartbeats = append(heartbeats, wire.AppendHeartbeat(nil, "Q3A-1234"[:4+i%5]))
	}
	list := []byte(wire.Header + "getservers 71 empty full")
	sent := 0
	for range 3 {
		for i, c := range senders {
			_, _ = c.WriteToUDP(heartbeats[i], target)
			_, _ = c.WriteToUDP(list, target)
			sent += len(heartbeats[i]) + len(list)
		}
	}
	// What came back, to all the flooding sockets.
	got, gotMax, getinfos := 0, 0, 0
	buf := make([]byte, 2048)
	for i, c := range senders {
		for {
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			got += n
			gotMax = max(gotMax, n)
			if wire.Peek(buf[:n]) != wire.KindGetInfo {
				continue
			}
			getinfos++
			if n > len(heartbeats[i]) {
				t.Fatalf("a getinfo of %d bytes (%q) answered a heartbeat of %d (%q)", n, buf[:n], len(heartbeats[i]), heartbeats[i])
			}
		}
	}
	t.Logf("flood: %d bytes sent, %d bytes back (largest datagram %d, %d getinfo)", sent, got, gotMax, getinfos)
	if got > sent {
		t.Fatalf("the flood got %d bytes back for %d sent", got, sent)
	}
	if getinfos == 0 {
		t.Fatal("no getinfo came back: the flood did not test their size")
	}
	if n := gate.MustMetric(t, "gamegate_master_challenges"); n > maxChallenges {
		t.Fatalf("%v challenges waiting; want at most %d", n, maxChallenges)
	}
	if n := gate.MustMetric(t, "gamegate_master_servers"); n != 0 {
		t.Fatalf("%v servers listed from heartbeats alone", n)
	}
	if n := gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="challenged_evicting"}`); n == 0 {
		t.Fatal("the challenge table never filled: the flood did not test its bound")
	}
	// A real server registers right after the flood.
	fakeServers(t, addr, "127.0.0.9", 1)
	testutil.WaitFor(t, "a server to register after the flood", func() bool {
		return gate.MustMetric(t, "gamegate_master_servers") == 1
	})
}

// Heartbeats forged from 600 addresses in 600 networks of 127/8, each
// answered with a getinfo nobody answers, overflow the table of waiting
// challenges (max_challenges 64) while a real server's challenge waits: the
// server's answer still lists it at once, not a heartbeat period later.
func TestMasterForgedHeartbeatsDoNotDelayARealServer(t *testing.T) {
	gate, addr := startMaster(t, "max_challenges 64\nchallenge_timeout 10s")
	srv := testutil.DialUDP(t, "127.0.0.9:0", addr)
	challenge := heartbeatChallenge(t, srv)

	target := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr))
	evicting := func() float64 {
		return gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="challenged_evicting"}`)
	}
	hb := wire.AppendHeartbeat(nil, "QuakeArena-1")
	for i := range 600 {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, byte(20+i/100), byte(i%100), 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = c.WriteToUDP(hb, target)
	}
	// 601 challenges into 64 places: 537 forgotten, each chosen among
	// ties with the server's (its network is as quiet as each forged
	// one's), so the server's is forgotten too but for a chance of
	// (63/64)^537, 0.02%.
	testutil.WaitFor(t, "the forged heartbeats to overflow the challenges", func() bool { return evicting() >= 601-64 })
	t.Logf("%v challenges forgotten to make room, %v waiting", evicting(), gate.MustMetric(t, "gamegate_master_challenges"))

	srv.Send(wire.AppendInfoResponse(nil, []byte(`\sv_maxclients\8\clients\1\protocol\71\challenge\`+string(challenge))))
	testutil.WaitForWithin(t, 5*time.Second, "the real server to be listed after the flood", func() bool {
		return gate.MustMetric(t, "gamegate_master_servers") == 1
	})
}

// The HTTP list of a master's servers, under a path prefix: a real
// OpenArena server registered through its heartbeat is listed with its
// map and, once its status is queried, its bots, in the game query
// result shape; filters apply; the ETag answers 304.
func TestServerListWithOpenArena(t *testing.T) {
	gate, udp, web := startMasterSite(t, `handle_path /servers/* {
	server_list {
		ttl 2s
	}
}`)
	registered := gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="registered"}`)
	bots := []string{"Grism", "Sarge"}
	oa := testutil.StartOpenArenaWithMaster(t, udp, "^3List ^7Arena", 8, bots...)
	testutil.WaitFor(t, "the OpenArena server to register", func() bool {
		return gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="registered"}`) > registered
	})

	type server struct {
		Name       string
		Map        string
		Password   bool
		NumPlayers int
		MaxPlayers int
		Players    []struct{ Name string }
		Bots       []struct{ Name string }
		Connect    string
		Game       string
		GameID     string `json:"game_id"`
		Join       *string
		Protocol   string
		Address    string
	}
	type page struct {
		Total   int
		Servers []server
	}
	base := "http://" + web + "/servers/"
	var p page
	testutil.WaitFor(t, "the server's bots to be listed", func() bool {
		r := getJSON(t, base, &p)
		if r.status != 200 {
			t.Fatalf("GET /servers/: %d %s", r.status, r.body)
		}
		return len(p.Servers) == 1 && len(p.Servers[0].Bots) == len(bots)
	})
	s := p.Servers[0]
	t.Logf("listed: %+v", s)
	if p.Total != 1 || s.Address != oa.Addr || s.Connect != oa.Addr || s.Name != "List Arena" || s.Map != oa.Map ||
		s.NumPlayers != 2 || s.MaxPlayers != 8 || s.Password || s.Protocol != "quake3" ||
		s.Bots[0].Name != "Grism" || s.Bots[1].Name != "Sarge" || len(s.Players) != 0 {
		t.Fatalf("listed %+v", s)
	}
	// It heartbeats as Quake3Arena; its status says baseoa: OpenArena,
	// which has no join URL.
	if s.Game != "OpenArena" || s.GameID != "openarena" || s.Join != nil {
		t.Fatalf("listed as the game %q (%q), join %v; want OpenArena (openarena), no join", s.Game, s.GameID, s.Join)
	}
	for query, want := range map[string]int{"?not_empty&not_full&no_password": 1, "?game=Nexuiz": 0, "?map=oa_dm1": 1, "?map=q3dm17": 0,
		"?game=openarena": 1, "?game=OpenArena": 1} {
		if r := getJSON(t, base+query, &p); r.status != 200 || p.Total != want {
			t.Errorf("%s: %d, total %d, want %d", query, r.status, p.Total, want)
		}
	}
	req, _ := http.NewRequest("GET", base, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The status may have been refreshed in between (its ping changes):
	// then the list is new and 200 is right.
	if etag == "" || resp.StatusCode != http.StatusNotModified && resp.Header.Get("ETag") == etag {
		t.Fatalf("If-None-Match %s: %d with ETag %s", etag, resp.StatusCode, resp.Header.Get("ETag"))
	}
	if r := request(t, "GET", "http://"+web+"/elsewhere"); r.status == 200 && strings.Contains(r.body, oa.Addr) {
		t.Fatal("the list answered outside its path prefix")
	}
}

// The list outlives a configuration reload: servers registered before it
// are listed after it, with the new configuration's limits.
func TestMasterListSurvivesReload(t *testing.T) {
	addr := testutil.FreeUDPAddr(t)
	config := func(options string) string {
		return gateConfig{UDP: addr, Protocols: "master {\n\t" + options + "\n}"}.String()
	}
	gate := testcaddy.Start(t, config("expiry 10m"))
	servers := fakeServers(t, addr, "127.0.0.1", 3)
	testutil.WaitFor(t, "the servers to register", func() bool { return gate.MustMetric(t, "gamegate_master_servers") == 3 })
	gate.Load(t, config("expiry 20m"))
	client := testutil.DialUDP(t, "127.0.0.2:0", addr)
	got, _, _ := masterList(t, client, "getservers 71 empty full")
	var want []string
	for _, s := range servers {
		want = append(want, s.Conn.LocalAddr().String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("after the reload: listed %v, want %v", got, want)
	}
	// A name of its own starts an empty list.
	gate.Load(t, config("expiry 20m\nname other"))
	if got, _, _ := masterList(t, client, "getservers 71 empty full"); len(got) != 0 {
		t.Fatalf("a master of another name lists %v", got)
	}
}
