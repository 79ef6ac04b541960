package caddymaster

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	_ "github.com/gamegate/gamegate/caddymodule/caddyapp"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
)

// A block is validated once, when read, and Validate's error keeps the
// line of the option it is about; the options are read into the embedded
// Config by their JSON names.
func TestConfigBlockValidatedOnceAtItsOptionsLine(t *testing.T) {
	for _, tc := range []struct {
		name, block, want string
	}{
		{"range at its line", "master {\n\texpiry 100ms\n\tmax_servers 10\n}",
			"master: expiry must be a duration in [1s, 24h0m0s], not 100ms, at Testfile:2"},
		{"cross-field at the option it names", "master {\n\tknown_reply_rate 100\n\tmax_servers 10\n\treply_rate 100\n}",
			"master: known_reply_rate 100: must be less than reply_rate (100), by at least one datagram per 90 years, at Testfile:2"},
		{"name check at its line", "master {\n\tmax_servers 10\n\tname " + strings.Repeat("n", 65) + "\n}",
			"master: name of 65 bytes: must be at most 64, at Testfile:3"},
		{"about an option left out, at the given one it names", "master {\n\texpiry 1s\n}",
			"master: challenge_timeout 2s must not be longer than expiry 1s, at Testfile:2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := new(MasterProtocol)
			err := p.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.block))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}

	// Values that Validate refuses one at a time but accepts together:
	// known_reply_rate is less than the reply_rate given after it.
	p := new(MasterProtocol)
	block := "master {\n\tknown_reply_rate 1500\n\treply_rate 2000\n\texpiry 20m\n\tshared_networks 10.0.0.0/8\n\tshared_networks fd00::/8\n\tname public\n}"
	if err := p.UnmarshalCaddyfile(caddyfile.NewTestDispenser(block)); err != nil {
		t.Fatalf("got %v, want the block read", err)
	}
	if p.KnownReplyRate != 1500 || p.ReplyRate != 2000 || p.Expiry != duration.Duration(20*60e9) ||
		strings.Join(p.SharedNetworks, " ") != "10.0.0.0/8 fd00::/8" || p.Name != "public" {
		t.Fatalf("got %+v", p.Config)
	}

	b := new(ServerBrowser)
	block = "server_browser {\n\tmaster m\n\tgame_query g\n\ttitle \"LAN servers\"\n\tmax_page_size 256KiB\n\thistory_samples 48\n}"
	if err := b.UnmarshalCaddyfile(caddyfile.NewTestDispenser(block)); err != nil {
		t.Fatalf("got %v, want the block read", err)
	}
	if b.Master != "m" || b.GameQuery != "g" || b.Title != "LAN servers" || b.MaxPageSize != 256<<10 || b.HistorySamples != 48 {
		t.Fatalf("got %+v", b.Config)
	}
}

// Provision builds the master from the options as given, the defaults
// being the handler's to derive: a configuration Validate accepts loads
// (reply_burst 1 leaves known_reply_burst to its default).
func TestMasterLoadsWhatValidateAccepts(t *testing.T) {
	config := `{"admin": {"disabled": true}, "apps": {"gamegate": {"udp": [{"listen": ["` + testutil.FreeUDPAddr(t) +
		`"], "protocols": [{"protocol": "master", "reply_burst": 1}]}]}}}`
	var cfg caddy.Config
	if err := caddy.StrictUnmarshalJSON([]byte(config), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := caddy.Validate(&cfg); err != nil {
		t.Fatalf("reply_burst 1: got %v, want it loaded", err)
	}
}
