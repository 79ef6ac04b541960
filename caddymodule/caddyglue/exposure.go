package caddyglue

import (
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/mholt/caddy-l4/layer4"
)

// Secrets that seal relay connection data and tokens that guard the
// allocations API are what keep strangers from binding to other players'
// allocations. Development defaults (the ones Caddyfile.example falls back
// to) and short secrets are fine on loopback, where only the machine's own
// users reach them, and refused anywhere else.

// MinExposedSecret is the shortest secret accepted on a listener beyond
// loopback: 256 bits, the size of the sealing key derived from it.
const MinExposedSecret = 32

// MinExposedToken is the shortest API token accepted on a server that
// listens beyond loopback: 128 bits when drawn at random, far past what
// auth_failure_rate lets anyone try.
const MinExposedToken = 16

// developmentDefaults are the values Caddyfile.example and the docs fall
// back to, with the environment variable that replaces each.
var developmentDefaults = map[string]string{
	"dev-only-relay-secret-change-me": "GAMEGATE_RELAY_SECRET",
	"dev-only-token":                  "GAMEGATE_RELAY_TOKEN",
}

// ListenAddresser is an app that reports the addresses it listens on, so
// that modules inside it can tell whether they face more than loopback.
type ListenAddresser interface {
	ListenAddresses() []string
}

// appListenAddresses returns the listen addresses of the app running the
// module being provisioned (found among the modules that provisioned it),
// or ok false when no known app is among them.
func appListenAddresses(ctx caddy.Context) (addrs []string, ok bool) {
	for _, m := range ctx.Modules() {
		switch app := m.(type) {
		case *layer4.App:
			for _, s := range app.Servers {
				addrs = append(addrs, s.Listen...)
			}
			return addrs, true
		case *caddyhttp.App:
			for _, s := range app.Servers {
				addrs = append(addrs, s.Listen...)
			}
			return addrs, true
		case ListenAddresser:
			return app.ListenAddresses(), true
		}
	}
	return nil, false
}

// beyondLoopback returns the first address that is not loopback-only: an
// unspecified host (every interface), a non-loopback IP or a host name.
// Unix sockets are local.
func beyondLoopback(addrs []string) (string, bool) {
	repl := caddy.NewReplacer()
	for _, a := range addrs {
		na, err := caddy.ParseNetworkAddress(repl.ReplaceKnown(a, ""))
		if err != nil {
			return a, true
		}
		if na.IsUnixNetwork() || na.IsFdNetwork() {
			continue
		}
		if strings.EqualFold(na.Host, "localhost") {
			continue
		}
		ip, err := netip.ParseAddr(na.Host)
		if err != nil || !ip.Unmap().IsLoopback() {
			return a, true
		}
	}
	return "", false
}

// Replaced returns v with its placeholders ({env.X}, {file.Y}, ...)
// Replaced when the module is provisioned, and {env.X:default} with the
// variable X, or default when X is unset or empty (Caddy's {env.X} has no
// default). Unlike the Caddyfile's {$X}, which is replaced when the
// Caddyfile is adapted, these keep the value out of the JSON configuration
// (GET /config/, autosave.json): only the placeholder is stored there. A
// value that comes out empty is refused: an unset environment variable must
// not become an empty key, token, secret or password that anyone can
// present. module and option name the value in the error.
func Replaced(repl *caddy.Replacer, module, option, v string) (string, error) {
	v = envWithDefault.ReplaceAllStringFunc(v, func(m string) string {
		sub := envWithDefault.FindStringSubmatch(m)
		if value := os.Getenv(sub[1]); value != "" {
			return value
		}
		return sub[2]
	})
	r := repl.ReplaceKnown(v, "")
	if r == "" {
		return "", fmt.Errorf("%s: %q is empty after replacing placeholders", optionOf(module, option), v)
	}
	return r, nil
}

// optionOf names option of module in an error; a module's own errors
// (module "") name the option alone, Caddy prefixing the module's ID.
func optionOf(module, option string) string {
	if module == "" {
		return option
	}
	return module + ": " + option
}

// ReplacedEach is replaced for each of values.
func ReplacedEach(module, option string, values []string) ([][]byte, error) {
	repl := caddy.NewReplacer()
	out := make([][]byte, 0, len(values))
	for _, v := range values {
		r, err := Replaced(repl, module, option, v)
		if err != nil {
			return nil, err
		}
		out = append(out, []byte(r))
	}
	return out, nil
}

// envPlaceholder matches {env.X} and {env.X:default}, X in group 1.
var envPlaceholder = regexp.MustCompile(`\{env\.([^}:]+)(?::[^}]*)?\}`)

// envWithDefault matches {env.X:default}: X in group 1, default in group 2.
var envWithDefault = regexp.MustCompile(`\{env\.([A-Za-z_][A-Za-z0-9_]*):([^{}]*)\}`)

// RefuseWeakSecrets refuses development defaults, and values shorter than
// minLen bytes, when the app running the module listens beyond loopback. raw are the configured values (naming the environment variable
// that set them, if any), values the same after placeholders. module and
// option name what is refused.
func RefuseWeakSecrets(ctx caddy.Context, module, option string, raw []string, values [][]byte, minLen int) error {
	addrs, ok := appListenAddresses(ctx)
	if !ok {
		return nil
	}
	exposed, beyond := beyondLoopback(addrs)
	if !beyond {
		return nil
	}
	for i, v := range values {
		variable, isDefault := developmentDefaults[string(v)]
		short := len(v) < minLen
		if !isDefault && !short {
			continue
		}
		if m := envPlaceholder.FindStringSubmatch(raw[i]); m != nil {
			variable = m[1]
		}
		what := fmt.Sprintf("is shorter than %d bytes", minLen)
		if isDefault {
			what = "is a development default"
		}
		hint := ""
		if variable != "" {
			hint = fmt.Sprintf(" (set %s)", variable)
		}
		return fmt.Errorf("%s: value %d %s, and this server listens on %s, beyond loopback: configure a random value of at least %d bytes%s",
			optionOf(module, option), i+1, what, exposed, minLen, hint)
	}
	return nil
}
