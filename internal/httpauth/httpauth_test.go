package httpauth

import (
	"net/http/httptest"
	"testing"
)

func TestKeys(t *testing.T) {
	keys, err := New([]byte("secret-one"), []byte("secret-two"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		headers []string
		want    bool
	}{
		{"none", nil, false},
		{"bearer", []string{"Authorization", "Bearer secret-one"}, true},
		{"bearer second key", []string{"Authorization", "Bearer secret-two"}, true},
		{"bearer scheme any case", []string{"Authorization", "bEARER secret-one"}, true},
		{"bearer padded", []string{"Authorization", "Bearer   secret-one  "}, true},
		{"x-api-key", []string{"X-Api-Key", "secret-two"}, true},
		{"wrong", []string{"Authorization", "Bearer secret-three"}, false},
		{"prefix", []string{"Authorization", "Bearer secret-on"}, false},
		{"longer", []string{"Authorization", "Bearer secret-one1"}, false},
		{"empty bearer", []string{"Authorization", "Bearer "}, false},
		{"scheme only", []string{"Authorization", "Bearer"}, false},
		{"basic", []string{"Authorization", "Basic secret-one"}, false},
		{"wrong x-api-key", []string{"X-Api-Key", "nope"}, false},
		{"empty x-api-key", []string{"X-Api-Key", ""}, false},
		// The Authorization header is the one checked when both are sent.
		{"both, bearer wrong", []string{"Authorization", "Bearer nope", "X-Api-Key", "secret-one"}, false},
		{"both, bearer right", []string{"Authorization", "Bearer secret-one", "X-Api-Key", "nope"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			for i := 0; i < len(tc.headers); i += 2 {
				r.Header.Set(tc.headers[i], tc.headers[i+1])
			}
			if got := keys.Allow(r); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNoKeysAllowAll(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	for _, k := range []*Keys{nil, {}} {
		if k.Required() || !k.Allow(r) {
			t.Fatalf("%v: want no key required", k)
		}
	}
	k, err := New()
	if err != nil || k.Required() || !k.Allow(r) {
		t.Fatalf("New(): got %v %v, want no key required", k, err)
	}
	if k.Match("") {
		t.Fatal("the empty key matched")
	}
}

func TestEmptyKeyRefused(t *testing.T) {
	if _, err := New([]byte("a"), nil); err == nil {
		t.Fatal("an empty key was accepted")
	}
}
