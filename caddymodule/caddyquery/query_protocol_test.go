package caddyquery

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/handlers/nadeo"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
)

// testProtocolConfig has an option of each kind the generic Caddyfile
// parser reads.
type testProtocolConfig struct {
	query.Attempts
	Size   int               `json:"size,omitempty"`
	Wait   duration.Duration `json:"wait,omitempty"`
	Label  string            `json:"label,omitempty"`
	Flag   bool              `json:"flag,omitempty"`
	Names  []string          `json:"names,omitempty"`
	Ratio  float64           `json:"ratio,omitempty"`
	Body   int64             `json:"max_body_size,omitempty"`
	hidden int
}

func (c *testProtocolConfig) Validate() error {
	return bounds.First(c.Attempts.Validate(), bounds.Int("size", c.Size, 2, 9), bounds.Int("max_body_size", c.Body, 1024, 1<<20),
		bounds.Duration("wait", c.Wait.Std(), 1e9, 60e9))
}

func (c *testProtocolConfig) NewProtocol() (query.Protocol, error) { return nil, nil }

func TestQueryProtocolModuleCaddyfile(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{"size 3\nwait 2s\nlabel x\nflag\nnames a b\nretries -1\nattempt_timeout 0.01d",
			`{"attempt_timeout":864000000000,"retries":-1,"size":3,"wait":2000000000,"label":"x","flag":true,"names":["a","b"]}`},
		{"timeout 2s", `{"attempt_timeout":2000000000}`},
		{"max_body_size 64KiB", `{"max_body_size":65536}`},
		{"max_body_size 2MiB", "error: option 'max_body_size': want a size in [1024, 1048576] bytes (such as 65536 or 64KiB), got '2MiB'"},
		{"max_body_size lots", "error: option 'max_body_size': want a size in [1024, 1048576] bytes (such as 65536 or 64KiB), got 'lots'"},
		{"size 10", "error: option 'size': want an integer in [2, 9], got '10'"},
		{"size x", "error: option 'size': want an integer in [2, 9], got 'x'"},
		{"size 99999999999999999999", "error: option 'size': want an integer in [2, 9], got '99999999999999999999'"},
		{"retries 1.5", "error: option 'retries': want an integer in [-1, 10], got '1.5'"},
		{"wait 500ms", "error: option 'wait': want a positive duration from 1s to 1m0s, got '500ms'"},
		{"attempt_timeout 0s", "error: option 'attempt_timeout': want a positive duration up to 1h0m0s, got '0s'"},
		{"timeout 2h", "error: option 'timeout': want a positive duration up to 1h0m0s, got '2h'"},
		{"flag on", "error: option 'flag' takes no value, got 'on'"},
		{"label", "error: option 'label' needs a value"},
		{"names", "error: option 'names' needs at least one value"},
		{"ratio 2", "error: option 'ratio' cannot be set in a Caddyfile: use JSON"},
		{"hidden 2", "error: game_query test: unrecognized option 'hidden'"},
		{"size 3\nsize 4", "error: game_query test: duplicate option 'size'"},
	} {
		t.Run(strings.ReplaceAll(tc.block, "\n", ";"), func(t *testing.T) {
			m := &QueryProtocolModule[testProtocolConfig, *testProtocolConfig]{name: "test"}
			err := m.UnmarshalCaddyfile(caddyfile.NewTestDispenser("test {\n" + tc.block + "\n}"))
			if want, isErr := strings.CutPrefix(tc.want, "error: "); isErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("got %v, want an error containing %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(m)
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s (%v), want %s", got, err, tc.want)
			}
			back := &QueryProtocolModule[testProtocolConfig, *testProtocolConfig]{name: "test"}
			if err := json.Unmarshal(got, back); err != nil {
				t.Fatalf("its JSON does not load: %v", err)
			}
		})
	}
}

func TestQueryProtocolModuleRefusesUnknownJSON(t *testing.T) {
	m := &QueryProtocolModule[testProtocolConfig, *testProtocolConfig]{name: "test"}
	if err := json.Unmarshal([]byte(`{"size": 3, "sise": 4}`), m); err == nil || !strings.Contains(err.Error(), `unknown field "sise"`) {
		t.Fatalf("got %v, want the unknown field named", err)
	}
}

// A protocol's secrets are given to it with their placeholders replaced,
// and the module's configuration keeps the placeholder.
func TestQueryProtocolSecretsReplacedOnACopy(t *testing.T) {
	const secret = "tm-user-secret-0123456789"
	t.Setenv("GAMEGATE_TEST_TM_PASSWORD", secret)
	s := testutil.ExampleNadeo()
	s.Password = secret
	testutil.StartNadeo(t, s)
	m := &QueryProtocolModule[nadeo.Config, *nadeo.Config]{name: "nadeo"}
	if err := m.UnmarshalJSON([]byte(`{"login":"User","password":"{env.GAMEGATE_TEST_TM_PASSWORD}"}`)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := m.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := m.MarshalJSON(); strings.Contains(string(b), secret) || !strings.Contains(string(b), "{env.GAMEGATE_TEST_TM_PASSWORD}") {
		t.Errorf("the module's configuration: %s, want the placeholder", b)
	}
	if st, err := m.Status(context.Background(), s.Addr); err != nil || st.Name == "" {
		t.Errorf("status with the replaced password: %v, %v", st, err)
	}
}
