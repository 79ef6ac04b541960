package freeciv

import (
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/duration"
)

func TestQueryConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  QueryConfig
		want string // "" for valid
	}{
		{"defaults", QueryConfig{}, ""},
		{"at the bounds", QueryConfig{Timeout: duration.Duration(time.Hour), LANGroup: "225.1.1.1", LANRequestPort: 65535, LANAnswerPort: 1}, ""},
		{"username", QueryConfig{Username: strings.Repeat("u", 48)}, "username must be shorter than 48 bytes"},
		{"join_capability", QueryConfig{JoinCapability: strings.Repeat("c", 512)}, "join_capability must be shorter than 512 bytes"},
		{"timeout", QueryConfig{Timeout: -1}, "timeout must be a duration in [1ms, 1h0m0s], not -1ns"},
		{"lan_group", QueryConfig{LANGroup: "not-an-ip"}, "lan_group 'not-an-ip' is not an IP address"},
		{"lan_request_port", QueryConfig{LANRequestPort: 70000}, "lan_request_port must be in [1, 65535], not 70000"},
		{"lan_answer_port", QueryConfig{LANAnswerPort: -1}, "lan_answer_port must be in [1, 65535], not -1"},
		{"lan_wait", QueryConfig{LANWait: duration.Duration(2 * time.Hour)}, "lan_wait must be a duration in [1ms, 1h0m0s]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestQueryConfigNewProtocol(t *testing.T) {
	p, err := (&QueryConfig{Username: "probe", LANGroup: "225.1.1.1"}).NewProtocol()
	if err != nil {
		t.Fatal(err)
	}
	q := p.(*QueryProtocol)
	if q.Prober.Username != "probe" || q.LAN == nil || q.LAN.Group.String() != "225.1.1.1" {
		t.Errorf("got prober %+v, LAN %+v; want username probe and group 225.1.1.1", q.Prober, q.LAN)
	}
	if p, err := (&QueryConfig{}).NewProtocol(); err != nil || p.(*QueryProtocol).LAN != nil {
		t.Errorf("zero configuration: got %v, %v; want a protocol without LAN", p, err)
	}
}
