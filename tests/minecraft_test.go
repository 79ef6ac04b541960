package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
)

// mcsuStatus is minecraft-server-util's answer, as its script prints it.
type mcsuStatus struct {
	Version string
	Result  struct {
		Version struct {
			Name     string
			Protocol int
		}
		Players struct {
			Online, Max int
			Sample      []struct{ Name, ID string }
		}
		MOTD struct{ Clean string }
	}
}

func startMinecraftGate(t *testing.T, mode string) (gate, server string) {
	t.Helper()
	server = testutil.FreeTCPAddr(t)
	_, port, _ := net.SplitHostPort(server)
	testutil.StartNodeServer(t, "minecraft-server.js", port, mode)
	return startQueryGate(t, fmt.Sprintf(`
			server mc %s minecraft {
				timeout 15s
			}
			query_timeout 25s`, server)), server
}

// A real Minecraft server (npm minecraft-protocol) asked through the
// gateway, by GameDig and by minecraft-server-util: field by field.
func TestMinecraftAgainstRealServer(t *testing.T) {
	t.Logf("independent clients: gamedig %s, minecraft-server-util %s; server: minecraft-protocol %s",
		testutil.NpmVersion(t, "gamedig"), testutil.NpmVersion(t, "minecraft-server-util"), testutil.NpmVersion(t, "minecraft-protocol"))
	gate, server := startMinecraftGate(t, "modern")

	var st query.Status
	r := getJSON(t, gate+"/query/mc", &st)
	if r.status != 200 {
		t.Fatalf("GET /query/mc: %d %s", r.status, r.body)
	}
	t.Logf("gamegate: %s", r.body)

	var gd struct {
		Name       string
		Version    string
		NumPlayers int
		MaxPlayers int
		Players    []struct{ Name string }
	}
	t.Logf("gamedig: %s", testutil.Gamedig(t, "minecraft", server, &gd))

	var mu mcsuStatus
	minecraftServerUtil(t, "java", server, &mu)

	names := func(ps []query.Player) string {
		var n []string
		for _, p := range ps {
			n = append(n, p.Name)
		}
		slices.Sort(n)
		return strings.Join(n, ",")
	}
	var gdn, mun []string
	for _, p := range gd.Players {
		gdn = append(gdn, p.Name)
	}
	for _, p := range mu.Result.Players.Sample {
		mun = append(mun, p.Name)
	}
	slices.Sort(gdn)
	slices.Sort(mun)
	for _, c := range []struct {
		field      string
		us, gd, mu any
	}{
		{"name", st.Name, gd.Name, mu.Result.MOTD.Clean},
		{"version", st.Version, gd.Version, mu.Result.Version.Name},
		{"max players", st.MaxPlayers, gd.MaxPlayers, mu.Result.Players.Max},
		{"player count", st.NumPlayers, gd.NumPlayers, mu.Result.Players.Online},
		{"player names", names(st.Players), strings.Join(gdn, ","), strings.Join(mun, ",")},
	} {
		if fmt.Sprint(c.us) != fmt.Sprint(c.gd) || fmt.Sprint(c.us) != fmt.Sprint(c.mu) {
			t.Errorf("%s: gamegate %v, gamedig %v, minecraft-server-util %v", c.field, c.us, c.gd, c.mu)
		}
	}
	// And what the server was started with.
	if st.Name != "Gate Craft" || st.MaxPlayers != 20 || st.NumPlayers != 3 || names(st.Players) != "alice,bob,carol" ||
		st.Protocol != "minecraft" || st.Raw["version"].(map[string]any)["protocol"] != float64(mu.Result.Version.Protocol) {
		t.Errorf("gamegate's status: got %s", r.body)
	}
	if _, ok := st.Raw["favicon"]; ok {
		t.Errorf("the favicon is in the status's raw data by default")
	}
	// The raw command has it.
	var raw map[string]any
	if r := getJSON(t, gate+"/query/mc/raw", &raw); r.status != 200 || !strings.HasPrefix(fmt.Sprint(raw["favicon"]), "data:image/png;base64,") {
		t.Errorf("GET /query/mc/raw: %d %.300s", r.status, r.body)
	}
}

// A real Minecraft server (npm minecraft-protocol) with two players logged
// in (minecraft-protocol clients, in offline mode): gamegate's status has
// GameDig's shape, field by field, with the people who logged in.
func TestMinecraftGamedigShapeWithLogins(t *testing.T) {
	gamedigVersion := testutil.NpmVersion(t, "gamedig")
	gate, server := startMinecraftGate(t, "logins")
	host, port, _ := net.SplitHostPort(server)
	testutil.StartNodeServer(t, "minecraft-client.js", host, port, "alice", "bob")

	var st query.Status
	r := getJSON(t, gate+"/query/mc", &st)
	if r.status != 200 {
		t.Fatalf("GET /query/mc: %d %s", r.status, r.body)
	}
	t.Logf("gamegate: %s", r.body)
	var gd map[string]any
	gdOut := testutil.Gamedig(t, "minecraft", server, &gd)
	t.Logf("gamedig: %.2000s", gdOut)
	compareGamedig(t, "Minecraft Java with 2 players logged in: gamegate minecraft against gamedig "+gamedigVersion+" --type minecraft",
		[]byte(r.body), gdOut, nil)
	var names []string
	for _, p := range st.Players {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if st.NumPlayers != 2 || strings.Join(names, ",") != "alice,bob" || len(st.Bots) != 0 || st.Connect != server {
		t.Errorf("gamegate's status: got %s, want alice and bob logged in", r.body)
	}
}

// A server that refuses the modern ping (as servers before 1.7 do not
// know it) is asked the legacy FE 01 ping.
// A two-line MOTD is named as GameDig names it: every run of white space,
// the line break too, one space, then the § codes removed (so the space
// before a code and the one after it stay); raw keeps the line break.
func TestMinecraftTwoLineMOTDAsGamedig(t *testing.T) {
	gate, server := startMinecraftGate(t, "two-lines")
	var st query.Status
	if r := getJSON(t, gate+"/query/mc", &st); r.status != 200 {
		t.Fatalf("GET /query/mc: %d %s", r.status, r.body)
	}
	var gd struct{ Name string }
	out := testutil.Gamedig(t, "minecraft", server, &gd)
	if st.Name != gd.Name || st.Name != "Gate Craft  second line" {
		t.Errorf("name: gamegate %q, gamedig %q (%s), want both \"Gate Craft  second line\"", st.Name, gd.Name, out)
	}
	if d, _ := st.Raw["description"].(map[string]any); d == nil || d["text"] != "Gate Craft\n" {
		t.Errorf("raw description: got %v, want the MOTD as sent", st.Raw["description"])
	}
}

func TestMinecraftLegacyAgainstRealServer(t *testing.T) {
	t.Logf("independent client: minecraft-server-util %s; server: minecraft-protocol %s",
		testutil.NpmVersion(t, "minecraft-server-util"), testutil.NpmVersion(t, "minecraft-protocol"))
	gate, server := startMinecraftGate(t, "legacy-only")
	var st query.Status
	r := getJSON(t, gate+"/query/mc", &st)
	if r.status != 200 {
		t.Fatalf("GET /query/mc: %d %s", r.status, r.body)
	}
	t.Logf("gamegate: %s", r.body)
	var mu mcsuStatus
	out := minecraftServerUtil(t, "legacy", server, &mu)
	if st.Raw["legacy"] != true || st.Name != mu.Result.MOTD.Clean || st.Name != "Gate Craft" || st.Version != mu.Result.Version.Name ||
		st.MaxPlayers != mu.Result.Players.Max || st.NumPlayers != mu.Result.Players.Online ||
		st.Raw["protocol"] != float64(mu.Result.Version.Protocol) {
		t.Errorf("gamegate %s, minecraft-server-util %s", r.body, out)
	}
	// The raw command answers such a server too: the status's raw data
	// (it was 502 bad_answer, asking only the Server List Ping).
	var raw map[string]any
	if r := getJSON(t, gate+"/query/mc/raw", &raw); r.status != 200 || raw["legacy"] != true || raw["motd"] == nil || raw["max"] != float64(st.MaxPlayers) {
		t.Errorf("GET /query/mc/raw on a legacy-only server: %d %s, want 200 with the legacy fields", r.status, r.body)
	}
}

// minecraftServerUtil asks server with minecraft-server-util in mode (java,
// legacy or bedrock), prints and decodes its JSON into into, and returns it.
func minecraftServerUtil(t *testing.T, mode, server string, into any) []byte {
	t.Helper()
	host, port, _ := net.SplitHostPort(server)
	out := testutil.RunNode(t, 30*time.Second, "minecraft-server-util-status.js", mode, host, port)
	t.Logf("minecraft-server-util %s: %s", mode, out)
	if err := json.Unmarshal(out, into); err != nil {
		t.Fatalf("minecraft-server-util %s: %v in %s", mode, err, out)
	}
	return out
}
