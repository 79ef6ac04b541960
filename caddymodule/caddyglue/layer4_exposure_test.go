package caddyglue

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestExposedLayer4UDP decides from addresses which layer4 servers running
// gamegate's UDP handlers face more than loopback.
func TestExposedLayer4UDP(t *testing.T) {
	qos := []string{"qos"}
	for _, c := range []struct {
		name     string
		listen   []string
		handlers []string
		want     string // the address warned about; "" for none
	}{
		{"loopback IPv4", []string{"udp/127.0.0.1:27015"}, qos, ""},
		{"loopback /8", []string{"udp/127.5.6.7:27015"}, qos, ""},
		{"loopback IPv6", []string{"udp/[::1]:27015"}, qos, ""},
		{"localhost", []string{"udp/localhost:27015"}, qos, ""},
		{"every interface", []string{"udp/0.0.0.0:27015"}, qos, "udp/0.0.0.0:27015"},
		{"no host", []string{"udp/:27015"}, qos, "udp/:27015"},
		{"IPv6 any", []string{"udp6/[::]:27015"}, []string{"relay"}, "udp6/[::]:27015"},
		{"public IP", []string{"udp/127.0.0.1:1", "udp4/192.0.2.10:27015"}, []string{"a2s_shield", "gqp"}, "udp4/192.0.2.10:27015"},
		{"host name", []string{"udp/game.example.com:27015"}, qos, "udp/game.example.com:27015"},
		{"TCP beyond loopback", []string{"tcp/0.0.0.0:5556", "udp/127.0.0.1:27015"}, qos, ""},
		{"no gamegate handler", []string{"udp/0.0.0.0:53"}, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := exposedLayer4UDP([]layer4Server{{name: "srv0", listen: c.listen, handlers: c.handlers}})
			switch {
			case c.want == "" && len(got) != 0:
				t.Fatalf("got %+v, want no warning", got)
			case c.want != "" && (len(got) != 1 || got[0].address != c.want || got[0].server != "srv0" || !slices.Equal(got[0].handlers, c.handlers)):
				t.Fatalf("got %+v, want a warning for %s", got, c.want)
			}
		})
	}
}

// TestLayer4HandlersIn finds gamegate's UDP handlers in routes, subroutes
// included, and nothing else.
func TestLayer4HandlersIn(t *testing.T) {
	raw := []json.RawMessage{
		json.RawMessage(`{"handler":"subroute","routes":[{"handle":[{"handler":"relay","secret":"x"},{"handler":"proxy"}]}]}`),
		json.RawMessage(`{"handler":"qos","name":"handler"}`),
		json.RawMessage(`{"handler":"echo"}`),
	}
	got := layer4HandlersIn(raw, []string{"qos"})
	if !slices.Equal(got, []string{"qos", "relay"}) {
		t.Fatalf("got %v, want [qos relay]", got)
	}
	if got := layer4HandlersIn([]json.RawMessage{json.RawMessage(`{"handler":"tls"}`)}, nil); len(got) != 0 {
		t.Fatalf("got %v, want none", got)
	}
}
