package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// `gamegate version` built from a checkout names gamegate's version and
// the checkout's commit (and that the tree was modified), then Caddy's
// version line. The checkout is a fresh repository of this tree's files,
// committed, then changed; the binary is built as an operator builds it
// there (go build ./cmd/gamegate, which stamps the commit).
func TestVersionNamesGamegateCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gamegate binary")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=gamegate test", "-c", "user.email=test@example.invalid"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	checkout := filepath.Join(t.TempDir(), "gamegate")
	for _, name := range strings.Split(git(root, "ls-files", "-co", "--exclude-standard"), "\n") {
		src := filepath.Join(root, name)
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted, or a link to installed peers
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(checkout, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	git(checkout, "init", "-q")
	git(checkout, "add", "-A")
	git(checkout, "commit", "-q", "-m", "a checkout")
	commit := git(checkout, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(checkout, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(t.TempDir(), "gamegate")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gamegate")
	build.Dir = checkout
	// The commit is stamped by default; say so, whatever this machine's
	// go env holds.
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	code, out := runGamegate(t, bin, "version")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("gamegate version: exit %d, output %q; want two lines", code, out)
	}
	want := regexp.MustCompile(`^gamegate v\S+ commit ` + commit + ` \(modified\)$`)
	if !want.MatchString(lines[0]) {
		t.Fatalf("first line %q, want %s", lines[0], want)
	}
	if !regexp.MustCompile(`^caddy v2\.11\.9 h1:\S+$`).MatchString(lines[1]) {
		t.Fatalf("second line %q, want Caddy's version line", lines[1])
	}
	t.Logf("gamegate version:\n%s", out)
}
