package caddymodule

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/internal/testutil"
)

// deprecationWarnings returns, from gamegate's JSON log lines, the
// warnings about former option names, each as "module option→current"
// with " file:line" when it names one.
func deprecationWarnings(out string) []string {
	var got []string
	for line := range strings.Lines(out) {
		var e struct {
			Level, Msg, Module, Option, Current, File string
			Line                                      int
		}
		if json.Unmarshal([]byte(line), &e) != nil || e.Level != "warn" || !strings.HasPrefix(e.Msg, "deprecated option name") {
			continue
		}
		w := e.Module + " " + e.Option + "→" + e.Current
		if e.File != "" {
			w += " " + filepath.Base(e.File) + ":" + strconv.Itoa(e.Line)
		}
		got = append(got, w)
	}
	slices.Sort(got)
	return got
}

// A configuration load warns once about each former option name it uses,
// however many modules and elements use it: here two gqp servers and an
// a2s server give their attempt timeout as timeout, two A2S shields their
// stale_ttl and upstream_timeout, and two game_query
// handlers give upstream_rate as rate_limit, two relay_allocations
// handlers joincode_rate. A Caddyfile adapts former names to the current
// JSON keys, warning at each line to change, and what it adapts to loads
// without a warning.
func TestRenamedOptionsWarnOnce(t *testing.T) {
	bin := testutil.BuildGamegate(t)
	dir := t.TempDir()
	t.Setenv("RELAY_SECRET", strings.Repeat("s", 32))
	t.Setenv("RELAY_TOKEN", strings.Repeat("t", 32))

	// The shield's stale_ttl became both stale_while_revalidate and
	// stale_if_error.
	shield := `{"handler": "a2s_shield", "upstream": "127.0.0.1:27015", "stale_ttl": "20s", "upstream_timeout": "800ms"}`
	relay := `{"handler": "relay_allocations", "secrets": ["{env.RELAY_SECRET}"], "tokens": ["{env.RELAY_TOKEN}"], "public_address": "127.0.0.1:7777", "joincode_rate": 2}`
	config := `{"apps": {"http": {"servers": {"s": {"listen": ["127.0.0.1:0"], "routes": [
		{"handle": [{"handler": "game_query", "rate_limit": 5, "servers": {
			"a": {"address": "127.0.0.1:7777", "protocol": {"protocol": "gqp", "timeout": "500ms"}},
			"b": {"address": "127.0.0.1:7778", "protocol": {"protocol": "gqp", "timeout": "500ms"}},
			"c": {"address": "127.0.0.1:7779", "protocol": {"protocol": "a2s", "timeout": "500ms"}}}}]},
		{"handle": [{"handler": "game_query", "rate_limit": 5}]},
		{"match": [{"path": ["/a/*"]}], "handle": [` + relay + `]},
		{"match": [{"path": ["/b/*"]}], "handle": [` + relay + `]}
	]}}}, "layer4": {"servers": {"l": {"listen": ["udp/127.0.0.1:0"], "routes": [
		{"handle": [` + shield + `]},
		{"handle": [` + shield + `]}
	]}}}}}`
	path := filepath.Join(dir, "old.json")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "validate", "--config", path, "--adapter", "").CombinedOutput()
	if err != nil {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	got := deprecationWarnings(string(out))
	want := []string{"a2s_shield stale_ttl→stale_while_revalidate and stale_if_error", "a2s_shield upstream_timeout→attempt_timeout",
		"game_query a2s timeout→attempt_timeout", "game_query gqp timeout→attempt_timeout", "game_query rate_limit→upstream_rate",
		"relay_allocations joincode_rate→join_code_rate"}
	if !slices.Equal(got, want) {
		t.Fatalf("JSON load: got warnings %q, want each once: %q\n%s", got, want, out)
	}
	t.Logf("JSON load warns: %q", got)

	caddyfile := `:8080 {
	handle_path /query/* {
		game_query {
			server a 127.0.0.1:7777 gqp {
				timeout 500ms
			}
			server b 127.0.0.1:7778 gqp {
				timeout 500ms
			}
			rate_limit 5
		}
	}
	handle_path /relay/* {
		relay_allocations {
			secrets {env.RELAY_SECRET}
			tokens {env.RELAY_TOKEN}
			public_address 127.0.0.1:7777
			joincode_rate 2
			any_client_joincode
		}
	}
}
`
	path = filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(caddyfile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "adapt", "--config", path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	adapted, err := cmd.Output()
	if err != nil {
		t.Fatalf("adapt: %v\n%s", err, stderr.String())
	}
	got = deprecationWarnings(stderr.String())
	want = []string{"game_query gqp timeout→attempt_timeout Caddyfile:5", "game_query gqp timeout→attempt_timeout Caddyfile:8", "game_query rate_limit→upstream_rate Caddyfile:10",
		"relay_allocations any_client_joincode→any_client_join_code Caddyfile:19", "relay_allocations joincode_rate→join_code_rate Caddyfile:18"}
	if !slices.Equal(got, want) {
		t.Fatalf("Caddyfile adaptation: got warnings %q, want one per line to change: %q\n%s", got, want, stderr.String())
	}
	t.Logf("Caddyfile adaptation warns: %q", got)
	for _, old := range []string{`"timeout"`, `"rate_limit"`, `"joincode_rate"`, `"any_client_joincode"`} {
		if strings.Contains(string(adapted), old) {
			t.Errorf("the adapted JSON has the former key %s: %s", old, adapted)
		}
	}
	path = filepath.Join(dir, "adapted.json")
	if err := os.WriteFile(path, adapted, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(bin, "validate", "--config", path, "--adapter", "").CombinedOutput()
	if err != nil {
		t.Fatalf("validate the adapted Caddyfile: %v\n%s", err, out)
	}
	if got := deprecationWarnings(string(out)); len(got) != 0 {
		t.Fatalf("the adapted Caddyfile warns again when loaded: %q", got)
	}
}

// An option given twice under the same name is reported under the name
// the Caddyfile gives, former or current; given under both names, the
// error names both.
func TestCaddyfileRepeatedOptionNamesTheGivenName(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{"timeout 1s\ntimeout 2s", "duplicate option 'timeout'"},
		{"attempt_timeout 1s\nattempt_timeout 2s", "duplicate option 'attempt_timeout'"},
		{"timeout 1s\nattempt_timeout 2s", "timeout is the former name of attempt_timeout: give only attempt_timeout"},
	} {
		d := caddyfile.NewTestDispenser("quake3 {\n" + tc.block + "\n}")
		info, err := caddy.GetModule("gamegate.query.quake3")
		if err != nil {
			t.Fatal(err)
		}
		err = info.New().(caddyfile.Unmarshaler).UnmarshalCaddyfile(d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.block, err, tc.want)
		}
	}
}

// The sizes and counts renamed to the naming rule (max_<things>, a size
// with _size) load under their former JSON keys: each warns once, and its
// value is the current option's, so an out-of-range one is refused naming
// the current option.
func TestFormerSizeAndCountNamesLoad(t *testing.T) {
	bin := testutil.BuildGamegate(t)
	dir := t.TempDir()
	config := func(gameQuery, query, gqpResponder, shield, guard string) string {
		return `{"apps": {"http": {"servers": {"s": {"listen": ["127.0.0.1:0"], "routes": [
			{"handle": [{"handler": "game_query"` + gameQuery + `, "servers": {
				"a": {"address": "127.0.0.1:7777", "protocol": {"protocol": "gqp"` + query + `}},
				"c": {"address": "127.0.0.1:7779", "protocol": {"protocol": "a2s"` + query + `}}}}]}
		]}}}, "layer4": {"servers": {
			"u": {"listen": ["udp/127.0.0.1:0"], "routes": [
				{"handle": [{"handler": "gqp"` + gqpResponder + `}]},
				{"handle": [{"handler": "a2s_shield", "upstream": "127.0.0.1:27015"` + shield + `}]}]},
			"t": {"listen": ["127.0.0.1:0"], "routes": [{"handle": [{"handler": "freeciv_guard"` + guard + `}]}]}
		}}}}`
	}
	validate := func(name, config string) (string, error) {
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "validate", "--config", path, "--adapter", "").CombinedOutput()
		return string(out), err
	}

	out, err := validate("former", config(
		`, "max_ad_hoc": 16, "max_ad_hoc_per_network": 2, "max_batch": 50, "max_batch_answer": 524288`,
		`, "max_response": 65536`,
		`, "max_authorized": 16, "max_datagram": 1200`,
		`, "max_response": 65536`,
		`, "max_chunk": 65536, "max_decompressed": 65536`))
	if err != nil {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	want := []string{
		"game_query a2s max_response→max_response_size",
		"a2s_shield max_response→max_response_size",
		"freeciv_guard max_chunk→max_chunk_size",
		"freeciv_guard max_decompressed→max_decompressed_size",
		"game_query max_ad_hoc→max_ad_hoc_queries",
		"game_query max_ad_hoc_per_network→max_ad_hoc_queries_per_network",
		"game_query max_batch→max_batch_queries",
		"game_query max_batch_answer→max_batch_answer_size",
		"gqp max_authorized→max_sources",
		"gqp max_datagram→max_datagram_size",
		"game_query gqp max_response→max_response_size",
	}
	slices.Sort(want)
	if got := deprecationWarnings(out); !slices.Equal(got, want) {
		t.Fatalf("got warnings %q, want each once: %q\n%s", got, want, out)
	}

	for _, tc := range []struct {
		name, current                        string
		gameQuery, query, gqp, shield, guard string
	}{
		{"max_ad_hoc", "max_ad_hoc_queries", `, "max_ad_hoc": 100000`, "", "", "", ""},
		{"max_ad_hoc_per_network", "max_ad_hoc_queries_per_network", `, "max_ad_hoc_per_network": -1`, "", "", "", ""},
		{"max_batch", "max_batch_queries", `, "max_batch": -1`, "", "", "", ""},
		{"max_batch_answer", "max_batch_answer_size", `, "max_batch_answer": 100`, "", "", "", ""},
		{"max_response", "max_response_size", "", `, "max_response": 10`, "", "", ""},
		{"max_authorized", "max_sources", "", "", `, "max_authorized": -1`, "", ""},
		{"max_datagram", "max_datagram_size", "", "", `, "max_datagram": 10`, "", ""},
		{"a2s_shield max_response", "max_response_size", "", "", "", `, "max_response": 10`, ""},
		{"max_chunk", "max_chunk_size", "", "", "", "", `, "max_chunk": 8`},
		{"max_decompressed", "max_decompressed_size", "", "", "", "", `, "max_decompressed": 8`},
	} {
		out, err := validate(strings.ReplaceAll(tc.name, " ", "_"), config(tc.gameQuery, tc.query, tc.gqp, tc.shield, tc.guard))
		if err == nil || !strings.Contains(out, tc.current+" must be in") {
			t.Errorf("%s out of range: got %v, want it refused naming %s:\n%s", tc.name, err, tc.current, out)
		}
	}
}

// A former name's warning names its block: game_query's gqp protocol as
// "game_query gqp", the GQP responder (the gamegate app protocol and the
// layer4 handler alike, one set of options) as "gqp", so an operator can
// tell which block to change. The responder's warning comes once however
// many of its blocks use the former name.
func TestGQPWarningsNameTheirBlock(t *testing.T) {
	bin := testutil.BuildGamegate(t)
	// validate provisions without listening, so the app's port is only
	// parsed.
	config := `{"apps": {
		"gamegate": {"udp": [{"listen": ["127.0.0.1:9000"], "protocols": [{"protocol": "gqp", "max_datagram": 1200}]}]},
		"layer4": {"servers": {"l": {"listen": ["udp/127.0.0.1:0"], "routes": [
			{"handle": [{"handler": "gqp", "max_datagram": 1200}]}]}}},
		"http": {"servers": {"s": {"listen": ["127.0.0.1:0"], "routes": [
			{"handle": [{"handler": "game_query", "servers": {
				"a": {"address": "127.0.0.1:7777", "protocol": {"protocol": "gqp", "timeout": "500ms", "max_response": 65536}}}}]}]}}}}}`
	path := filepath.Join(t.TempDir(), "gqp.json")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "validate", "--config", path, "--adapter", "").CombinedOutput()
	if err != nil {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	want := []string{"game_query gqp max_response→max_response_size", "game_query gqp timeout→attempt_timeout", "gqp max_datagram→max_datagram_size"}
	if got := deprecationWarnings(string(out)); !slices.Equal(got, want) {
		t.Fatalf("got warnings %q, want %q\n%s", got, want, out)
	}

	caddyfile := `{
	gamegate {
		udp 127.0.0.1:9000 {
			gqp {
				max_datagram 1200
			}
		}
	}
}

:8080 {
	game_query {
		server a 127.0.0.1:7777 gqp {
			timeout 500ms
		}
	}
}
`
	path = filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(path, []byte(caddyfile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "adapt", "--config", path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if _, err := cmd.Output(); err != nil {
		t.Fatalf("adapt: %v\n%s", err, stderr.String())
	}
	want = []string{"game_query gqp timeout→attempt_timeout Caddyfile:14", "gqp max_datagram→max_datagram_size Caddyfile:5"}
	if got := deprecationWarnings(stderr.String()); !slices.Equal(got, want) {
		t.Fatalf("Caddyfile adaptation: got warnings %q, want %q\n%s", got, want, stderr.String())
	}
}
