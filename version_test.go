package gamegate

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"a checkout", debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "v0.0.0-20261125205045-91bde9a6d756"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "91bde9a6d7563fbd67734b716fe5032d78c96321"}, {Key: "vcs.modified", Value: "false"}}},
			"gamegate v0.0.0-20261125205045-91bde9a6d756 commit 91bde9a6d7563fbd67734b716fe5032d78c96321"},
		{"a modified checkout", debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "91bde9a"}, {Key: "vcs.modified", Value: "true"}}},
			"gamegate (devel) commit 91bde9a (modified)"},
		{"xcaddy, a tag", debug.BuildInfo{Main: debug.Module{Path: "caddy"},
			Deps: []*debug.Module{{Path: "github.com/mholt/caddy-l4", Version: "v0.1.2"}, {Path: ModulePath, Version: "v1.2.3", Sum: "h1:abc="}}},
			"gamegate v1.2.3 h1:abc="},
		{"xcaddy, a local checkout", debug.BuildInfo{Main: debug.Module{Path: "caddy"},
			Deps: []*debug.Module{{Path: ModulePath, Version: "v0.0.0", Replace: &debug.Module{Path: "/src/gamegate"}}}},
			"gamegate v0.0.0 => /src/gamegate"},
		{"not in the binary", debug.BuildInfo{Main: debug.Module{Path: "caddy"}}, "gamegate unknown"},
	} {
		if got := versionOf(&tc.bi).String(); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
