// Package httpload measures gamegate's HTTP handlers answering from their
// caches, in requests per second, against baselines served by the same
// Caddy in the same rounds:
//
//   - discovery: qos_discovery's 200 and 304 answers against Caddy's own
//     file_server serving the same JSON body with its ETag;
//   - game query: game_query's cached answers (a GQP command, and an A2S
//     server's normalised status through a2s_shield) against
//     qos_discovery's 200;
//   - server list: server_list's answer listing the servers registered with
//     the gamegate app's master (each answering its status queries) against
//     qos_discovery's 200, and against file_server serving the same bytes.
//
// The client keeps a number of keep-alive connections busy, one request at
// a time each, as wrk does. Everything listens on loopback.
package httpload

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
	"github.com/gamegate/gamegate/internal/testutil/a2sserver"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
	"github.com/gamegate/gamegate/wire/master"
	"github.com/gamegate/gamegate/wire/quake3"
)

// Workload IDs.
const (
	Discovery  = "discovery"
	GameQuery  = "game-query"
	ServerList = "server-list"
)

// Config is one run's load and rounds.
type Config struct {
	Conns     int      // connections kept busy
	Servers   int      // game servers registered with the master
	Workloads []string // which of Discovery, GameQuery, ServerList; all if empty
	benchutil.Schedule
}

type target struct {
	name, label string
	addr, path  string
	req         []byte
	want        int
	rates       []float64
	lat         []time.Duration
	workloads   []string // the workloads that report it
}

// Run starts the game servers and one Caddy serving every handler in this
// process, measures them and stops them. It returns a workload per ID asked
// for.
func Run(cfg Config) ([]*benchutil.Workload, error) {
	if len(cfg.Workloads) == 0 {
		cfg.Workloads = []string{Discovery, GameQuery, ServerList}
	}
	dir, err := os.MkdirTemp("", "gamegate-httpload")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fleets := filepath.Join(dir, "fleets.json")
	if err := os.WriteFile(fleets, fleetsJSON, 0o644); err != nil {
		return nil, err
	}
	game, err := a2sserver.Listen(a2sserver.Config{InfoChallenge: true, Info: wirea2s.Info{
		Protocol: 17, Name: []byte("gamegate bench"), Map: []byte("de_dust2"), Folder: []byte("csgo"),
		Game: []byte("Counter-Strike 2"), AppID: 730, Players: 12, MaxPlayers: 24, ServerType: 'd',
		Environment: 'l', VAC: 1, Version: []byte("1.40.1.2"),
	}})
	if err != nil {
		return nil, err
	}
	defer game.Close()
	var files, web, queries, discoveries, lists, gqp, shield, masterAddr string
	if err := benchutil.StartCaddyOnFreePorts(func() string {
		files, web = benchutil.FreeAddr("tcp"), benchutil.FreeAddr("tcp")
		queries, discoveries, lists = benchutil.FreeAddr("tcp"), benchutil.FreeAddr("tcp"), benchutil.FreeAddr("tcp")
		gqp, shield, masterAddr = benchutil.FreeAddr("udp"), benchutil.FreeAddr("udp"), benchutil.FreeAddr("udp")
		return fmt.Sprintf(`{
	default_bind 127.0.0.1
	gamegate {
		udp %[3]s {
			gqp {
				identify benchgame 1.0 1
			}
		}
		udp %[4]s {
			a2s_shield %[5]s {
				ttl 1h
			}
		}
		udp %[6]s {
			master {
				max_servers_per_address %[9]d
				heartbeat_rate 1000
				heartbeat_burst %[9]d
			}
		}
	}
}
http://%[1]s {
	root * %[7]s
	file_server
}
http://%[2]s {
	qos_discovery {
		fleets_file %[8]s
		field_names seed
	}
	handle_path /query/* {
		# Named apart from server_list's default, so that the list holds
		# the master's servers only.
		game_query {
			name bench_query
			server bench %[3]s
			server cs2 %[4]s a2s
			ttl status 1h
			ttl identify 1h
			upstream_rate 1000
		}
	}
	handle_path /mounted/* {
		qos_discovery {
			fleets_file %[8]s
			field_names seed
		}
	}
	handle_path /servers/* {
		server_list {
			ttl 1h
		}
	}
}
# server_list the whole of a site of its own, as qos_discovery is above.
http://%[12]s {
	server_list {
		ttl 1h
	}
}
# game_query and qos_discovery each the whole of a site of its own: one
# route each, no matcher before it.
http://%[11]s {
	qos_discovery {
		fleets_file %[8]s
		field_names seed
	}
}
http://%[10]s {
	game_query {
		name bench_query_site
		server bench %[3]s
		server cs2 %[4]s a2s
		ttl status 1h
		ttl identify 1h
		upstream_rate 1000
	}
}
`, files, web, gqp, shield, game.Addr, masterAddr, filepath.Join(dir, "www"), fleets, max(cfg.Servers, 1), queries, discoveries, lists)
	}); err != nil {
		return nil, err
	}
	defer caddy.Stop() //nolint:errcheck

	want := func(id string) bool { return slices.Contains(cfg.Workloads, id) }
	var targets []*target
	add := func(name, label, addr, path string, code int, workloads []string, header ...string) {
		if slices.ContainsFunc(workloads, want) {
			targets = append(targets, &target{name: name, label: label, addr: addr, path: path, req: request(addr, path, header...), want: code, workloads: workloads})
		}
	}
	const fleet = "/v1/fleets/bench-fleet/servers"
	body, detag, err := waitBody(web, fleet)
	if err != nil {
		return nil, fmt.Errorf("qos_discovery: %w", err)
	}
	// file_server serves the very body qos_discovery answers.
	if err := os.MkdirAll(filepath.Join(dir, "www", filepath.Dir(fleet)), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "www", fleet), body, 0o644); err != nil {
		return nil, err
	}
	fbody, fetag, err := waitBody(files, fleet)
	if err != nil {
		return nil, fmt.Errorf("file_server: %w", err)
	}
	if string(fbody) != string(body) {
		return nil, errors.New("file_server and qos_discovery answer different bodies")
	}
	add("file-200", "Caddy `file_server`, 200", files, fleet, 200, []string{Discovery})
	add("disc-200", "`qos_discovery`, 200", web, fleet, 200, []string{Discovery, ServerList})
	add("file-304", "Caddy `file_server`, 304", files, fleet, 304, []string{Discovery}, "If-None-Match: "+fetag)
	add("disc-304", "`qos_discovery`, 304", web, fleet, 304, []string{Discovery}, "If-None-Match: "+detag)
	add("disc-200-mounted", "`qos_discovery`, 200, behind `handle_path`", web, "/mounted"+fleet, 200, []string{ServerList})
	add("disc-200-site", "`qos_discovery`, 200, a site of its own", discoveries, fleet, 200, []string{ServerList})
	add("disc-2", "`qos_discovery`, 200, a fleet of two, after the site's handle_path routes", web, "/v1/fleets/two/servers", 200, []string{GameQuery})
	add("disc-2-site", "`qos_discovery`, 200, a fleet of two, a site of its own", discoveries, "/v1/fleets/two/servers", 200, []string{GameQuery})
	add("disc-2-mounted", "`qos_discovery`, 200, a fleet of two, behind `handle_path`", web, "/mounted/v1/fleets/two/servers", 200, []string{GameQuery})
	add("gq", "`game_query` cached GQP command, behind `handle_path`", web, "/query/bench/identify", 200, []string{GameQuery})
	add("a2s", "`game_query` cached A2S status, behind `handle_path`", web, "/query/cs2", 200, []string{GameQuery})
	add("gq-site", "`game_query` cached GQP command, a site of its own", queries, "/bench/identify", 200, []string{GameQuery})
	add("a2s-site", "`game_query` cached A2S status, a site of its own", queries, "/cs2", 200, []string{GameQuery})
	var listBytes, gzBytes int
	if want(ServerList) {
		listed := make(chan struct{})
		stop, err := startQuake3Servers(masterAddr, cfg.Servers, listed)
		if err != nil {
			return nil, err
		}
		defer stop()
		listBytes, err = waitList(web, cfg.Servers)
		close(listed)
		if err != nil {
			return nil, err
		}
		add("list", fmt.Sprintf("`server_list`, %d servers, behind `handle_path`", cfg.Servers), web, "/servers/", 200, []string{ServerList})
		add("list-site", fmt.Sprintf("`server_list`, %d servers, a site of its own", cfg.Servers), lists, "/", 200, []string{ServerList})
		// What browsers, Go's and Node's HTTP clients ask: the held answer
		// gzipped.
		add("list-gzip", fmt.Sprintf("`server_list`, %d servers, behind `handle_path`, `Accept-Encoding: gzip`", cfg.Servers), web, "/servers/", 200,
			[]string{ServerList}, "Accept-Encoding: gzip")
		if _, _, zbody, err := get(web, "/servers/", "Accept-Encoding: gzip"); err != nil || len(zbody) == 0 {
			return nil, fmt.Errorf("server_list answers no gzip: %v", err)
		} else {
			gzBytes = len(zbody)
		}
		// file_server serves the very bytes of the list's answer: what
		// any handler answering that many bytes can hope for.
		_, _, lbody, err := get(web, "/servers/")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "www", "list.json"), lbody, 0o644); err != nil {
			return nil, err
		}
		if fbody, _, err := waitBody(files, "/list.json"); err != nil || !bytes.Equal(fbody, lbody) {
			return nil, fmt.Errorf("file_server does not serve the list's body: %v", err)
		}
		add("list-file", "Caddy `file_server`, the list's body", files, "/list.json", 200, []string{ServerList})
		// A bare net/http server answering the list's bytes and
		// discovery's from memory, with the same headers: what those
		// bytes cost any Go HTTP server on this machine, without Caddy.
		bare, stopBare, err := serveBare(map[string][]byte{"/list.json": lbody, "/fleet.json": body})
		if err != nil {
			return nil, err
		}
		defer stopBare()
		add("bare-list", "bare `net/http`, the list's body", bare, "/list.json", 200, []string{ServerList})
		add("bare-disc", "bare `net/http`, discovery's body", bare, "/fleet.json", 200, []string{ServerList})
	}
	loads, err := benchutil.Measure(cfg.Schedule, targets, func(t *target) string { return t.name },
		func(_ int, t *target) error {
			_, _, err := load(t.addr, t.req, t.want, cfg.Conns, max(cfg.Warmup, 50*time.Millisecond))
			return err
		},
		func(_, _ int, t *target) error {
			rate, lat, err := load(t.addr, t.req, t.want, cfg.Conns, cfg.Duration)
			t.rates = append(t.rates, rate)
			t.lat = append(t.lat, lat...)
			return err
		})
	if err != nil {
		return nil, err
	}
	if n := game.ReceivedOf(wirea2s.TypeInfoRequest); n > 4 {
		return nil, fmt.Errorf("the A2S game server was asked %d times: the answers did not come from the cache", n)
	}

	command := fmt.Sprintf("go run ./bench/run -only %%s -rounds %d -http-duration %v -conns %d", cfg.Rounds, cfg.Duration, cfg.Conns)
	workloads := map[string]*benchutil.Workload{
		Discovery: {ID: Discovery, Command: fmt.Sprintf(command, Discovery), Comparisons: []benchutil.Comparison{
			{Target: "disc-200", Baseline: "file-200", Goal: 1}, {Target: "disc-304", Baseline: "file-304", Goal: 1}},
			Notes: []string{fmt.Sprintf("The body: a fleet of eight servers in four regions, %d bytes of JSON.", len(body))}},
		// The goal compares handlers routed alike: each a site of its
		// own, and each behind a handle_path of the same site. game_query
		// behind its handle_path is also compared with discovery as the
		// docs mount it (the site's last route, after the handle_paths),
		// and the routes' own costs show against the site of its own.
		GameQuery: {ID: GameQuery, Command: fmt.Sprintf(command, GameQuery), Comparisons: []benchutil.Comparison{
			{Target: "gq-site", Baseline: "disc-2-site", Goal: 0.95}, {Target: "a2s-site", Baseline: "disc-2-site", Goal: 0.95},
			{Target: "gq", Baseline: "disc-2-mounted", Goal: 0.95}, {Target: "a2s", Baseline: "disc-2-mounted", Goal: 0.95},
			{Target: "gq", Baseline: "disc-2"}, {Target: "a2s", Baseline: "disc-2"},
			{Target: "disc-2", Baseline: "disc-2-site"}, {Target: "disc-2-mounted", Baseline: "disc-2-site"}},
			Notes: []string{bodySizes(targets)}},
		ServerList: {ID: ServerList, Command: fmt.Sprintf(command, ServerList), Comparisons: []benchutil.Comparison{
			{Target: "list", Baseline: "disc-200-mounted", Goal: 0.8}, {Target: "list-site", Baseline: "disc-200-site", Goal: 0.8},
			{Target: "list-gzip", Baseline: "disc-200-mounted", Goal: 0.8},
			{Target: "list", Baseline: "disc-200"}, {Target: "disc-200-mounted", Baseline: "disc-200"},
			{Target: "list", Baseline: "list-file"}, {Target: "list-file", Baseline: "disc-200"},
			{Target: "list", Baseline: "bare-list"}, {Target: "bare-list", Baseline: "bare-disc"}},
			Notes: []string{fmt.Sprintf("The list: %d servers registered with the master, each answering its status "+
				"queries (cached for an hour), %d bytes of JSON, %d gzipped (held so, compressed once per answer); "+
				"the discovery answer is %d bytes.", cfg.Servers, listBytes, gzBytes, len(body))}},
	}
	var out []*benchutil.Workload
	for _, id := range cfg.Workloads {
		w := workloads[id]
		if w == nil {
			return nil, fmt.Errorf("no HTTP workload %q", id)
		}
		w.Unit, w.Loads = "requests/s", loads
		for _, t := range targets {
			if slices.Contains(t.workloads, id) {
				sorted := benchutil.Sorted(t.lat)
				w.Targets = append(w.Targets, &benchutil.Target{Name: t.name, Label: t.label, Rates: t.rates,
					P50: benchutil.Percentile(sorted, 0.5), P99: benchutil.Percentile(sorted, 0.99)})
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// bodySizes says how long the game-query workload's answers are, for the
// page: the handlers are compared with answers of the same size class.
func bodySizes(targets []*target) string {
	var parts []string
	for _, name := range []string{"disc-2", "gq", "a2s"} {
		for _, t := range targets {
			if t.name != name {
				continue
			}
			if _, _, body, err := get(t.addr, t.path); err == nil {
				parts = append(parts, fmt.Sprintf("%s %d bytes", t.label, len(body)))
			}
		}
	}
	return "Answer bodies: " + strings.Join(parts, "; ") + "."
}

// fleetsJSON holds a fleet of eight servers in four regions (about 1 KB of
// JSON, the size of a real discovery answer) and one of two. bench/discovery.sh
// serves the same file.
//
//go:embed fleets.json
var fleetsJSON []byte

// waitBody waits up to 10 s for path to answer 200 and returns its body
// and ETag.
func waitBody(addr, path string) ([]byte, string, error) {
	var err error
	for range 100 {
		var code int
		var etag string
		var body []byte
		if code, etag, body, err = get(addr, path); err == nil && code == 200 && len(body) > 0 {
			return body, etag, nil
		} else if err == nil {
			err = fmt.Errorf("GET %s: %d %s", path, code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, "", err
}

// waitList waits up to 20 s for the server list to show n servers, each
// with its queried status (its players), and returns the answer's size.
func waitList(addr string, n int) (int, error) {
	var last string
	for range 200 {
		_, _, body, err := get(addr, "/servers/?limit=1000")
		if err != nil {
			return 0, err
		}
		var p struct {
			Total   int
			Servers []struct{ Players []json.RawMessage }
		}
		if json.Unmarshal(body, &p) == nil && p.Total == n && !slices.ContainsFunc(p.Servers, func(s struct{ Players []json.RawMessage }) bool {
			return len(s.Players) == 0
		}) {
			_, _, body, err := get(addr, "/servers/")
			return len(body), err
		}
		last = fmt.Sprintf("total %d", p.Total)
		time.Sleep(100 * time.Millisecond)
	}
	return 0, fmt.Errorf("server_list did not list %d servers with their status (%s)", n, last)
}

// startQuake3Servers starts n Quake 3 game servers on loopback that
// register with the master (heartbeat, getinfo, infoResponse) and answer
// getstatus with two players, and returns a function that stops them. They
// heartbeat every second until listed is closed: on a loaded machine an
// answer may come after the master's challenge_timeout.
func startQuake3Servers(masterAddr string, n int, listed <-chan struct{}) (func(), error) {
	maddr, err := net.ResolveUDPAddr("udp", masterAddr)
	if err != nil {
		return nil, err
	}
	var conns []*net.UDPConn
	stop := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for i := range n {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			stop()
			return nil, err
		}
		conns = append(conns, c)
		go serveQuake3(c, i)
		go func() {
			for {
				if _, err := c.WriteToUDP(master.AppendHeartbeat(nil, "QuakeArena-1"), maddr); err != nil {
					return
				}
				select {
				case <-listed:
					return
				case <-time.After(time.Second):
				}
			}
		}()
	}
	return stop, nil
}

func serveQuake3(c *net.UDPConn, i int) {
	name, mapName := []byte("bench server "+strconv.Itoa(i)), []byte([]string{"q3dm17", "oa_dm1", "q3tourney2"}[i%3])
	buf := make([]byte, 2048)
	for {
		k, from, err := c.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if ch, err := master.DecodeGetInfo(buf[:k]); err == nil {
			info := fmt.Sprintf(`\sv_maxclients\16\clients\2\protocol\71\gamename\Quake3Arena\mapname\%s\hostname\%s\challenge\%s`, mapName, name, ch)
			_, _ = c.WriteToUDP(master.AppendInfoResponse(nil, []byte(info)), from)
			continue
		}
		const getstatus = "\xff\xff\xff\xffgetstatus"
		if k < len(getstatus) || string(buf[:len(getstatus)]) != getstatus {
			continue
		}
		r := quake3.Response{Kind: quake3.KindStatus, Vars: []quake3.Var{
			{Key: []byte("sv_hostname"), Value: name}, {Key: []byte("mapname"), Value: mapName},
			{Key: []byte("sv_maxclients"), Value: []byte("16")}, {Key: []byte("g_needpass"), Value: []byte("0")},
			{Key: []byte("version"), Value: []byte("ioq3 1.36")}, {Key: []byte("protocol"), Value: []byte("71")},
		}, Players: []quake3.Player{{Score: 12, Ping: 48, Name: []byte("alice")}, {Score: 7, Ping: 61, Name: []byte("bob")}}}
		if ch := buf[len(getstatus):k]; len(ch) > 1 {
			r.Vars = append(r.Vars, quake3.Var{Key: []byte("challenge"), Value: ch[1:]})
		}
		out, err := r.AppendTo(nil)
		if err == nil {
			_, _ = c.WriteToUDP(out, from)
		}
	}
}

// serveBare starts a plain net/http server on loopback answering each
// path of bodies with its bytes, as the list does (Content-Type,
// Content-Length, ETag, Cache-Control, Vary), and returns its address and
// a function that stops it.
func serveBare(bodies map[string][]byte) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	type answer struct {
		body []byte
		h    http.Header
	}
	answers := make(map[string]answer, len(bodies))
	for path, b := range bodies {
		answers[path] = answer{b, http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(b))},
			"Etag": {`"bare"`}, "Cache-Control": {"no-cache"}, "Vary": {"Accept-Encoding"}}}
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		for k, v := range a.h {
			h[k] = v
		}
		_, _ = w.Write(a.body)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}
