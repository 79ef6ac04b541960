package testutil

import (
	"bufio"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// Vector is one named byte vector from a testdata file.
type Vector struct {
	Name  string
	Kind  string
	Bytes []byte
}

// VectorsByName reads a vector file (see ReadVectors) into a map by name;
// a name may appear once.
func VectorsByName(t testing.TB, path string) map[string]Vector {
	t.Helper()
	m := make(map[string]Vector)
	for _, v := range ReadVectors(t, path) {
		if _, dup := m[v.Name]; dup {
			t.Fatalf("%s: vector %q appears twice", path, v.Name)
		}
		m[v.Name] = v
	}
	return m
}

// VectorFile is where a codec package's tests keep their vectors.
const VectorFile = "testdata/vectors.txt"

// Vectors reads the package's VectorFile by name.
func Vectors(t testing.TB) map[string]Vector {
	t.Helper()
	return VectorsByName(t, VectorFile)
}

// ReadVectors reads a vector file: one vector per line as
// "name kind hex…", with # comments and blank lines ignored.
func ReadVectors(t testing.TB, path string) []Vector {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Vector
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) < 2 {
			t.Fatalf("%s:%d: want name, kind and hex bytes", path, line)
		}
		b, err := hex.DecodeString(strings.Join(fields[2:], ""))
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		out = append(out, Vector{Name: fields[0], Kind: fields[1], Bytes: b})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no vectors", path)
	}
	return out
}
