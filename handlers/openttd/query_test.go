package openttd

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
)

// serveTCP answers every connection that sends the game-info request
// with answer, until the test ends.
func serveTCP(t *testing.T, answer []byte) string {
	return testutil.ServeTCP(t, func(c net.Conn) {
		var req [3]byte
		if _, err := c.Read(req[:]); err == nil && req == [3]byte{3, 0, 7} && answer != nil {
			_, _ = c.Write(answer)
		}
		_, _ = c.Read(req[:]) // until the client closes
	})
}

func vectors(t *testing.T) map[string]testutil.Vector {
	return testutil.VectorsByName(t, "../../wire/openttd/testdata/vectors.txt")
}

func TestStatus(t *testing.T) {
	addr := serveTCP(t, vectors(t)["info-openttd-13.0"].Bytes)
	st, err := (&QueryProtocol{Timeout: 2 * time.Second}).Status(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(st.Raw)
	if st.Name != "Unnamed Server" || st.Version != "13.0" || st.MaxPlayers != 25 || st.NumPlayers != 0 || st.Password ||
		st.Map != "" || st.Connect != addr || st.Protocol != "openttd" ||
		string(raw) != `{"date_current":"1950-01-04","date_start":"1950-01-01","dedicated":true,"game_info_version":6,"gamescript_name":"","gamescript_version":4294967295,"grfs":[],"landscape":"temperate","map_height":256,"map_width":256,"maxcompanies":15,"maxspectators":25,"newgrf_serialisation":1,"numcompanies":0,"numspectators":0,"ticks_playing":222}` {
		t.Errorf("got %+v\nraw %s", st, raw)
	}

	addr = serveTCP(t, vectors(t)["info-v7-built"].Bytes)
	st, err = (&QueryProtocol{Timeout: 2 * time.Second}).Status(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if grfs, _ := json.Marshal(st.Raw["grfs"]); !st.Password || st.NumPlayers != 3 || st.Raw["ticks_playing"] != uint64(123456) ||
		st.Raw["landscape"] != "arctic" || string(grfs) != `[{"id":"01014d4e","md5":"000102030405060708090a0b0c0d0e0f","name":"OpenGFX+ Trains"}]` {
		t.Errorf("v7: got %+v, grfs %s", st, grfs)
	}
}

func TestStatusFailures(t *testing.T) {
	v := vectors(t)
	p := &QueryProtocol{Timeout: 300 * time.Millisecond, Retries: -1}
	for _, c := range []struct {
		name   string
		answer []byte
		want   query.ErrorType
	}{
		{"another packet type", v["bad-type"].Bytes, query.TypeBadAnswer},
		{"a newer game info", v["bad-version-8"].Bytes, query.TypeBadAnswer},
		{"a packet cut short", v["info-openttd-13.0"].Bytes[:20], query.TypeTimeout},
		{"no answer", nil, query.TypeTimeout},
	} {
		addr := serveTCP(t, c.answer)
		_, err := p.Status(context.Background(), addr)
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Kind() != c.want {
			t.Errorf("%s: got %v, want %s", c.name, err, c.want)
		}
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	var qe *query.Error
	if _, err := p.Status(context.Background(), addr); !errors.As(err, &qe) || qe.Kind() != query.TypeRefused {
		t.Errorf("closed port: got %v, want refused", err)
	}
	if _, err := p.Command(context.Background(), addr, "players", nil); !errors.As(err, &qe) || qe.HTTPStatus != 404 {
		t.Errorf("command: got %v, want a 404", err)
	}
}

func TestConfig(t *testing.T) {
	c := Config{}
	c.Retries = -2
	if err := c.Validate(); err == nil {
		t.Error("retries -2: no error")
	}
	c.Retries = 3
	p, err := c.NewProtocol()
	if err != nil || p.(*QueryProtocol).Retries != 3 || p.Name() != "openttd" {
		t.Errorf("got %+v, %v", p, err)
	}
}
