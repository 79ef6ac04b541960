package tests

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// The documentation's game servers given without a port (docs/handlers/
// game_query.md, docs/query/minecraft.md and bedrock.md) load and answer
// through a real Caddy: a Minecraft server named by a bare host name is
// found by its _minecraft._tcp SRV record (asked of a DNS server the test
// runs, never the machine's), and a Bedrock server given as a bare IP
// address is asked on Bedrock's default port, 19132. Each documented line
// is kept as written except that a Bedrock documentation address
// (unreachable by design) becomes loopback, still without a port, and each
// server gets a block naming the test's DNS server and generous timeouts
// for a busy machine.
func TestDocServersWithoutPort(t *testing.T) {
	type line struct{ name, address, protocol string }
	var lines []line
	found := map[string]bool{}
	for _, file := range docFiles(t) {
		doc, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^\s*server (\S+) (\S+) (minecraft|bedrock)\b`).FindAllStringSubmatch(string(doc), -1) {
			l := line{m[1], m[2], m[3]}
			key := l.name + " " + l.address + " " + l.protocol
			if _, _, err := net.SplitHostPort(m[2]); err != nil && !found[key] {
				found[key] = true
				lines = append(lines, l)
			}
		}
	}
	for _, want := range []string{"be 203.0.113.13 bedrock", "network mc.example.com minecraft", "lan 203.0.113.31 bedrock"} {
		if !found[want] {
			t.Fatalf("the documentation no longer has `server %s`; found %v", want, lines)
		}
	}

	mcServer := testutil.FreeTCPAddr(t)
	_, mcPort, _ := net.SplitHostPort(mcServer)
	testutil.StartNodeServer(t, "minecraft-server.js", mcPort, "modern")
	zone := testutil.DNSZone{
		A:   map[string]netip.Addr{"java.minecraft.test.": netip.MustParseAddr("127.0.0.1")},
		SRV: map[string][]net.SRV{},
	}
	for _, l := range lines {
		if l.protocol == "minecraft" {
			zone.SRV["_minecraft._tcp."+l.address+"."] = []net.SRV{{Target: "java.minecraft.test.", Port: uint16(mustAtoi(t, mcPort))}}
		}
	}
	dns := testutil.ServeDNS(t, zone)

	testutil.LockBedrockDefaultPort(t)
	testutil.StartNodeServer(t, "bedrock-server.js", strconv.Itoa(testutil.BedrockDefaultPort), "Gate Rock", "Stone Level", "3", "12")

	var config strings.Builder
	for _, l := range lines {
		switch l.protocol {
		case "minecraft":
			fmt.Fprintf(&config, "\n\t\t\tserver %s %s minecraft {\n\t\t\t\tresolvers %s\n\t\t\t\ttimeout 15s\n\t\t\t}", l.name, l.address, dns.Addr)
		case "bedrock":
			if _, err := netip.ParseAddr(l.address); err != nil {
				t.Fatalf("documented server %s: %s is not an IP address, which this test expects for Bedrock", l.name, l.address)
			}
			fmt.Fprintf(&config, "\n\t\t\tserver %s 127.0.0.1 bedrock {\n\t\t\t\ttimeout 5s\n\t\t\t}", l.name)
		}
	}
	config.WriteString("\n\t\t\tquery_timeout 25s")
	gate := startQueryGate(t, config.String())

	for _, l := range lines {
		var st map[string]any
		r := getJSON(t, gate+"/query/"+l.name, &st)
		want := map[string]any{"name": "Gate Craft", "maxplayers": float64(20)}
		if l.protocol == "bedrock" {
			want = map[string]any{"name": "Gate Rock", "map": "Stone Level", "maxplayers": float64(12)}
		}
		if r.status != 200 {
			t.Errorf("documented server %s (%s %s): GET /query/%s: %d %s", l.name, l.address, l.protocol, l.name, r.status, r.body)
			continue
		}
		for k, v := range want {
			if st[k] != v {
				t.Errorf("documented server %s (%s %s): %s is %v, want %v: %s", l.name, l.address, l.protocol, k, st[k], v, r.body)
			}
		}
		if l.protocol == "minecraft" {
			if q := "TypeSRV _minecraft._tcp." + l.address + "."; dns.Asked(q) == 0 {
				t.Errorf("documented server %s: the test's DNS server was not asked %q", l.name, q)
			}
		}
	}
}
