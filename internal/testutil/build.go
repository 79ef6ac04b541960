package testutil

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildGamegate builds the gamegate binary (cmd/gamegate) into the test's
// temporary directory and returns its path. It skips the test under
// -short.
func BuildGamegate(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the gamegate binary")
	}
	bin := filepath.Join(t.TempDir(), "gamegate")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/gamegate/gamegate/cmd/gamegate").CombinedOutput()
	if err != nil {
		t.Fatalf("building gamegate: %v\n%s", err, out)
	}
	return bin
}
