package cache

import (
	"slices"
	"strings"
	"testing"
)

func TestETagDependsOnContentOnly(t *testing.T) {
	a, b := ETag([]byte(`{"servers":[]}`), true), ETag([]byte(`{"servers":[]}`), true)
	if a != b {
		t.Fatalf("same body: got %s and %s, want equal tags", a, b)
	}
	if c := ETag([]byte(`{"servers":[1]}`), true); c == a {
		t.Fatalf("different bodies: both got %s", a)
	}
	if !strings.HasPrefix(a, `W/"`) || !strings.HasSuffix(a, `"`) {
		t.Fatalf("weak tag: got %s, want W/\"…\"", a)
	}
	if s := ETag([]byte("x"), false); !strings.HasPrefix(s, `"`) {
		t.Fatalf("strong tag: got %s, want \"…\"", s)
	}
}

func TestIfNoneMatch(t *testing.T) {
	const etag = `W/"abc123"`
	tests := []struct {
		header string
		want   bool
	}{
		{`W/"abc123"`, true},
		{`"abc123"`, true}, // weak comparison ignores W/
		{`abc123`, true},   // the bare value a shipped client sends back
		{`W/abc123`, true},
		{`*`, true},
		{` * `, true},
		{`"x", W/"abc123"`, true},
		{`"x",W/"abc123" , "y"`, true},
		{`"a,b", "abc123"`, true}, // a comma inside a quoted tag
		{`"x", "y"`, false},
		{`abc12`, false},
		{`"abc1234"`, false},
		{``, false},
		{`,,,`, false},
		{`"abc123`, false},
		{`W/`, false},
		{strings.Repeat(`"x",`, 3000) + `"abc123"`, false}, // over the size bound
	}
	for _, tt := range tests {
		name := tt.header
		if len(name) > 40 {
			name = name[:40] + "…"
		}
		t.Run(name, func(t *testing.T) {
			if got := IfNoneMatch(tt.header, etag); got != tt.want {
				t.Fatalf("IfNoneMatch(%q, %q): got %v, want %v", tt.header, etag, got, tt.want)
			}
		})
	}
	if !IfNoneMatch(`"strong"`, `"strong"`) || !IfNoneMatch(`W/"strong"`, `"strong"`) {
		t.Fatal("strong ETag: want quoted and weak forms to match")
	}
}

func TestIfNoneMatchAllocatesNothing(t *testing.T) {
	h := `"x", W/"y", abc123`
	if n := testing.AllocsPerRun(1000, func() { IfNoneMatch(h, `W/"abc123"`) }); n != 0 {
		t.Fatalf("got %v allocations, want 0", n)
	}
}

func FuzzIfNoneMatch(f *testing.F) {
	for _, s := range []string{`W/"abc"`, `"abc"`, `abc`, `*`, `"a", "b"`, `"a,b", W/c`, `W/`, `"`} {
		f.Add(s, `W/"abc"`)
	}
	f.Fuzz(func(t *testing.T, header, etag string) {
		// Never panics, whatever the input.
		IfNoneMatch(header, etag)
		// A tag always matches itself, and a list of well-formed items that
		// ends with the tag matches it. (An unterminated quote swallows the
		// rest of the header, so the property needs a header without quotes.)
		tag := strings.TrimSpace(etag)
		if tag == "" || strings.ContainsAny(tag, `,"`) || len(header)+len(tag)+2 > maxIfNoneMatch {
			return
		}
		if !IfNoneMatch(tag, tag) {
			t.Fatalf("tag %q does not match itself", tag)
		}
		if !strings.Contains(header, `"`) && !IfNoneMatch(header+", "+tag, tag) {
			t.Fatalf("header %q listing %q does not match it", header+", "+tag, tag)
		}
	})
}

func TestSnapshotsReplace(t *testing.T) {
	var s Snapshots[string]
	if s.Get("a") != nil || s.Len() != 0 {
		t.Fatal("empty store: want no snapshots")
	}
	a1 := NewSnapshot([]byte("one"), "application/json", true)
	changed := s.Replace(map[string]*Snapshot{"a": a1, "b": NewSnapshot([]byte("two"), "application/json", true)})
	slices.Sort(changed)
	if !slices.Equal(changed, []string{"a", "b"}) {
		t.Fatalf("first replace: changed %v, want [a b]", changed)
	}
	// Same content for a (a new but equal snapshot), b removed, c added.
	changed = s.Replace(map[string]*Snapshot{"a": NewSnapshot([]byte("one"), "application/json", true), "c": NewSnapshot([]byte("3"), "application/json", true)})
	slices.Sort(changed)
	if !slices.Equal(changed, []string{"b", "c"}) {
		t.Fatalf("second replace: changed %v, want [b c]", changed)
	}
	if s.Get("a") != a1 {
		t.Fatal("unchanged content: want the original snapshot kept")
	}
	if s.Get("b") != nil || string(s.Get("c").Body) != "3" {
		t.Fatal("want b removed and c added")
	}
	if got := s.Get("a").ContentLength; got != "3" {
		t.Fatalf("content length header: got %s, want 3", got)
	}
}
