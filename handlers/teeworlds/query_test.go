package teeworlds

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	wiretw "github.com/gamegate/gamegate/wire/teeworlds"
)

const serverToken = 0xaf5d74d9

// serve answers as a 0.7 server does, each answer preceded by one
// addressed to another token (late or spoofed), which must be dropped.
func serve(t *testing.T, info wiretw.Info) netip.AddrPort {
	return testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		if len(req) == (&wiretw.TokenRequest{}).Len() && req[7] == wiretw.CtrlToken {
			to := binary.BigEndian.Uint32(req[8:])
			wrong, _ := (&wiretw.TokenResponse{To: to + 1, Token: 1}).AppendTo(nil)
			right, _ := (&wiretw.TokenResponse{To: to, Token: serverToken}).AppendTo(nil)
			return [][]byte{wrong, right}
		}
		if len(req) > 17 && binary.BigEndian.Uint32(req[1:]) == serverToken {
			// The request is the info's header with gie3 for inf3: read
			// its tokens as an info's.
			probe := append(append(append([]byte(nil), req[:9]...), "\xff\xff\xff\xffinf3"...), req[17:]...)
			_, info.BrowseToken, _ = wiretw.PeekInfo(probe)
			info.To = binary.BigEndian.Uint32(req[5:])
			wrong := info
			wrong.BrowseToken++
			a, _ := wrong.AppendTo(nil)
			b, _ := info.AppendTo(nil)
			return [][]byte{a, b}
		}
		return nil
	})
}

func TestStatus(t *testing.T) {
	var info wiretw.Info
	if err := info.Decode(testutil.VectorsByName(t, "../../wire/teeworlds/testdata/vectors.txt")["info-built"].Bytes); err != nil {
		t.Fatal(err)
	}
	addr := serve(t, info)
	st, err := (&QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 2 * time.Second}}).Status(context.Background(), addr.String())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(st)
	const want = `{"name":"Gate Tee","map":"ctf5","password":true,"numplayers":4,"maxplayers":12,` +
		`"players":[{"name":"nameless tee","raw":{"clan":"Gate","country":276,"score":17,"spectator":false}},{"name":"brainless tee","raw":{"clan":"","country":-1,"score":-3,"spectator":false}},{"name":"watcher","raw":{"clan":"x","country":840,"score":0,"spectator":true}}],` +
		`"bots":[{"name":"bot","raw":{"bot":true,"clan":"","country":-1,"score":100,"spectator":false}}],`
	if got := string(b); len(got) < len(want) || got[:len(want)] != want || st.Raw["max_players"] != int32(6) || st.Raw["gametype"] != "CTF" ||
		st.Connect != addr.String() || st.Version != "0.7.5" {
		t.Errorf("got  %s\nwant %s…", b, want)
	}
}

func TestStatusNoAnswer(t *testing.T) {
	// A server that never issues a token: no info is asked for.
	addr := testutil.ServeUDP(t, func(netip.AddrPort, []byte) [][]byte { return nil })
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 200 * time.Millisecond, Retries: -1}}
	var qe *query.Error
	if _, err := p.Status(context.Background(), addr.String()); !errors.As(err, &qe) || qe.Kind() != query.TypeTimeout {
		t.Errorf("got %v, want a timeout", err)
	}
	if _, err := p.Command(context.Background(), addr.String(), "players", nil); !errors.As(err, &qe) || qe.HTTPStatus != 404 {
		t.Errorf("command: got %v, want a 404", err)
	}
}
