package farmingsimulator

import (
	"fmt"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

func TestDecodeVectors(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		t.Run(name, func(t *testing.T) {
			var s Stats
			err := s.Decode(v.Bytes)
			if got, want := err == nil, v.Kind == "stats"; got != want {
				t.Fatalf("decoded %v (%v), want ok %v", err == nil, err, want)
			}
			testutil.Decodes(t, v.Bytes, s.Decode)
		})
	}
	var s Stats
	if err := s.Decode(testutil.Vectors(t)["stats"].Bytes); err != nil {
		t.Fatal(err)
	}
	want := Stats{Name: "Gate Farm & Friends", MapName: "Elmcreek", Version: "1.14.0.0", HasName: true, HasMap: true, HasVersion: true,
		NumUsed: "2", Capacity: "16", Players: []Player{
			{Name: "Bauer Ä", IsUsed: "true", IsAdmin: "true", Uptime: "42", X: "-120.5", Y: "98.25", Z: "310", HasIsUsed: true},
			{Name: "Farmhand", IsUsed: "true", IsAdmin: "false", Uptime: "7", X: "12", Y: "0.5", Z: "-3.75", HasIsUsed: true},
			{IsUsed: "false", HasIsUsed: true}, {IsUsed: "false", HasIsUsed: true}},
		Mods: []Mod{{Title: "Precision Farming", Name: "FS22_precisionFarming", Author: "GIANTS Software", Version: "1.0.0.3", Hash: "8e5f1c2a", HasName: true},
			{Title: "Seasons", Name: "FS22_seasons", Author: "Realismus Modding", Version: "1.2.0.0", Hash: "0a1b2c3d", HasName: true}}}
	if got := fmt.Sprintf("%+v", s); got != fmt.Sprintf("%+v", want) {
		t.Errorf("got %v, want %v", got, fmt.Sprintf("%+v", want))
	}
}

// Every prefix of a feed, up to its closing tag, is refused cleanly.
func TestDecodeTruncated(t *testing.T) {
	b := testutil.Vectors(t)["stats"].Bytes
	end := len(b) - len("</Server>\n")
	var s Stats
	for n := range end {
		if testutil.Decodes(t, b[:n], s.Decode) {
			t.Fatalf("a feed cut to %d of %d bytes decoded", n, len(b))
		}
	}
}

func TestDecodeBounds(t *testing.T) {
	b := []byte("<Server><Slots>")
	for range MaxPlayers + 1 {
		b = append(b, `<Player isUsed="true">p</Player>`...)
	}
	b = append(b, "</Slots></Server>"...)
	var s Stats
	if testutil.Decodes(t, b, s.Decode) {
		t.Errorf("%d players decoded, want at most %d", len(s.Players), MaxPlayers)
	}
	deep := []byte("<Server>")
	for range maxDepth {
		deep = append(deep, "<a>"...)
	}
	if testutil.Decodes(t, deep, s.Decode) {
		t.Errorf("a document nested %d deep decoded", maxDepth+1)
	}
}

func FuzzDecode(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var s, s2 Stats
		if !testutil.Decodes(t, b, s.Decode) {
			return
		}
		if len(s.Players) > MaxPlayers || len(s.Mods) > MaxMods {
			t.Fatalf("%d players, %d mods: past the bounds", len(s.Players), len(s.Mods))
		}
		if err := s2.Decode(b); err != nil || fmt.Sprint(s) != fmt.Sprint(s2) {
			t.Fatalf("a second decode differs: %v", err)
		}
	})
}
