package freeciv

import (
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
)

func TestQueryConfigValidate(t *testing.T) {
	testutil.CheckValidate(t, []testutil.ValidateCase{
		{Name: "defaults", Validate: (&QueryConfig{}).Validate, Want: ""},
		{Name: "at the bounds", Validate: (&QueryConfig{Timeout: duration.Duration(time.Hour), LANGroup: "225.1.1.1", LANRequestPort: 65535, LANAnswerPort: 1}).Validate, Want: ""},
		{Name: "username", Validate: (&QueryConfig{Username: strings.Repeat("u", 48)}).Validate, Want: "username must be shorter than 48 bytes"},
		{Name: "join_capability", Validate: (&QueryConfig{JoinCapability: strings.Repeat("c", 512)}).Validate, Want: "join_capability must be shorter than 512 bytes"},
		{Name: "timeout", Validate: (&QueryConfig{Timeout: -1}).Validate, Want: "timeout must be a duration in [1ms, 1h0m0s], not -1ns"},
		{Name: "lan_group", Validate: (&QueryConfig{LANGroup: "not-an-ip"}).Validate, Want: "lan_group 'not-an-ip' is not an IP address"},
		{Name: "lan_request_port", Validate: (&QueryConfig{LANRequestPort: 70000}).Validate, Want: "lan_request_port must be in [1, 65535], not 70000"},
		{Name: "lan_answer_port", Validate: (&QueryConfig{LANAnswerPort: -1}).Validate, Want: "lan_answer_port must be in [1, 65535], not -1"},
		{Name: "lan_wait", Validate: (&QueryConfig{LANWait: duration.Duration(2 * time.Hour)}).Validate, Want: "lan_wait must be a duration in [1ms, 1h0m0s]"},
		{Name: "lan_interface without lan_group", Validate: (&QueryConfig{LANInterface: "eth0"}).Validate, Want: "lan_interface configures the LAN query, which only lan_group enables"},
		{Name: "lan_wait without lan_group", Validate: (&QueryConfig{LANWait: duration.Duration(time.Second)}).Validate, Want: "lan_wait configures the LAN query, which only lan_group enables"},
		{Name: "lan options with lan_group", Validate: (&QueryConfig{LANGroup: "225.1.1.1", LANInterface: "lo", LANWait: duration.Duration(time.Second), LANRequestPort: 4555, LANAnswerPort: 4556}).Validate, Want: ""},
	})
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
