package gamegate

import (
	"runtime/debug"
	"strings"
)

// ModulePath is gamegate's Go module path.
const ModulePath = "github.com/gamegate/gamegate"

// BuildVersion is the gamegate a binary was built from, as Go recorded it.
type BuildVersion struct {
	// Version is the module's version: a tag, a pseudo-version (from the
	// commit, when built in a checkout), or "(devel)".
	Version string
	// Sum is the module's checksum, when it came from the module proxy.
	Sum string
	// Replace is the directory or module that replaced gamegate (an
	// xcaddy build of a local checkout), if any.
	Replace string
	// Revision is the commit, and Modified whether the tree had changes,
	// when gamegate itself was built from a checkout (the main module).
	Revision string
	Modified bool
}

// Version returns the gamegate this binary was built from.
func Version() BuildVersion {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return BuildVersion{}
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) BuildVersion {
	if bi.Main.Path == ModulePath {
		v := BuildVersion{Version: bi.Main.Version, Sum: bi.Main.Sum}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
		return v
	}
	for _, dep := range bi.Deps {
		if dep.Path != ModulePath {
			continue
		}
		v := BuildVersion{Version: dep.Version, Sum: dep.Sum}
		if r := dep.Replace; r != nil {
			v.Replace = r.Path
			if r.Version != "" {
				v.Replace += "@" + r.Version
			}
		}
		return v
	}
	return BuildVersion{}
}

// String is the version as `gamegate version` prints it: "gamegate", the
// version, then what else is known (the replacement, the checksum, the
// commit and whether it was modified).
func (v BuildVersion) String() string {
	version := v.Version
	if version == "" {
		version = "unknown"
	}
	parts := []string{"gamegate", version}
	if v.Sum != "" {
		parts = append(parts, v.Sum)
	}
	if v.Replace != "" {
		parts = append(parts, "=>", v.Replace)
	}
	if v.Revision != "" {
		parts = append(parts, "commit", v.Revision)
		if v.Modified {
			parts = append(parts, "(modified)")
		}
	}
	return strings.Join(parts, " ")
}
