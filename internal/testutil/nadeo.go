package testutil

import (
	"encoding/binary"
	"fmt"
	"html"
	"io"
	"net"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
)

// NadeoServer is a fixture TrackMania dedicated server's XML-RPC port on
// loopback, written from Nadeo's GbxRemote documentation (the handshake:
// a length and "GBXRemote 2"; then messages of a size, a handle and
// XML-RPC XML, answers echoing their call's handle) and the XML-RPC
// specification. It answers the calls GameDig's nadeo protocol makes,
// after Authenticate with its Login and Password (other calls before it
// are a fault, as a server answers them), and sends a callback message
// before each GetPlayerList answer, as servers send events to every
// connection that enabled them.
type NadeoServer struct {
	Login, Password string
	// ServerOptions, ChallengeInfo, GameInfo and Version are the
	// answers' struct members, each an XML-RPC value's XML.
	ServerOptions, ChallengeInfo, GameInfo, Version map[string]string
	// Players are GetPlayerList's structs.
	Players []map[string]string
	// Addr is the address, set by StartNadeo.
	Addr string
	// Connections counts the connections accepted; Authenticated the
	// connections that authenticated.
	Connections, Authenticated atomic.Int64
}

// xmlRPCStruct is a struct value's XML, its members in name order.
func xmlRPCStruct(members map[string]string) string {
	names := make([]string, 0, len(members))
	for k := range members {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("<struct>")
	for _, k := range names {
		fmt.Fprintf(&b, "<member><name>%s</name><value>%s</value></member>", k, members[k])
	}
	b.WriteString("</struct>")
	return b.String()
}

// XMLRPCString is s as an XML-RPC string value's XML.
func XMLRPCString(s string) string { return "<string>" + html.EscapeString(s) + "</string>" }

var (
	xmlRPCMethod = regexp.MustCompile(`<methodName>([^<]*)</methodName>`)
	xmlRPCParam  = regexp.MustCompile(`<param>\s*<value>\s*(?:<string>)?([^<]*)`)
)

// StartNadeo starts s, answering until the test ends.
func StartNadeo(t testing.TB, s *NadeoServer) {
	t.Helper()
	s.Addr = ServeTCP(t, func(c net.Conn) {
		s.Connections.Add(1)
		s.serve(c)
	})
}

func gbxMessage(handle uint32, xml string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(xml)))
	b = binary.LittleEndian.AppendUint32(b, handle)
	return append(b, xml...)
}

func (s *NadeoServer) serve(c net.Conn) {
	hello := binary.LittleEndian.AppendUint32(nil, 11)
	if _, err := c.Write(append(hello, "GBXRemote 2"...)); err != nil {
		return
	}
	authed := false
	for {
		var h [8]byte
		if _, err := io.ReadFull(c, h[:]); err != nil {
			return
		}
		size := binary.LittleEndian.Uint32(h[:])
		if size > 1<<20 {
			return
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		handle := binary.LittleEndian.Uint32(h[4:])
		m := xmlRPCMethod.FindSubmatch(body)
		if m == nil {
			return
		}
		method := string(m[1])
		var params []string
		for _, p := range xmlRPCParam.FindAllSubmatch(body, -1) {
			params = append(params, html.UnescapeString(string(p[1])))
		}
		value := ""
		switch {
		case method == "Authenticate":
			if len(params) == 2 && params[0] == s.Login && params[1] == s.Password {
				authed = true
				s.Authenticated.Add(1)
				value = "<boolean>1</boolean>"
			}
		case !authed:
		case method == "GetServerOptions":
			value = xmlRPCStruct(s.ServerOptions)
		case method == "GetCurrentChallengeInfo":
			value = xmlRPCStruct(s.ChallengeInfo)
		case method == "GetCurrentGameInfo":
			value = xmlRPCStruct(s.GameInfo)
		case method == "GetVersion":
			value = xmlRPCStruct(s.Version)
		case method == "GetPlayerList":
			event := `<?xml version="1.0" encoding="UTF-8"?><methodCall><methodName>TrackMania.PlayerChat</methodName><params><param><value><i4>0</i4></value></param></params></methodCall>`
			if _, err := c.Write(gbxMessage(7, event)); err != nil {
				return
			}
			var b strings.Builder
			b.WriteString("<array><data>")
			for _, p := range s.Players {
				b.WriteString("<value>" + xmlRPCStruct(p) + "</value>")
			}
			b.WriteString("</data></array>")
			value = b.String()
		}
		answer := `<?xml version="1.0" encoding="UTF-8"?>` + "\n<methodResponse>\n<params>\n<param><value>" + value + "</value></param>\n</params>\n</methodResponse>"
		if value == "" {
			answer = `<?xml version="1.0" encoding="UTF-8"?><methodResponse><fault><value><struct><member><name>faultCode</name><value><int>-1000</int></value></member><member><name>faultString</name><value><string>Permission denied.</string></value></member></struct></value></fault></methodResponse>`
		}
		if _, err := c.Write(gbxMessage(handle, answer)); err != nil {
			return
		}
	}
}

// ExampleNadeo is a TrackMania Forever-like server: colour codes in the
// server's, the map's and the players' names, a player and spectator
// password, the Time Attack mode, a player known by NickName only.
func ExampleNadeo() *NadeoServer {
	i := func(n int) string { return fmt.Sprintf("<i4>%d</i4>", n) }
	return &NadeoServer{Login: "User", Password: "u$er-pa55",
		ServerOptions: map[string]string{"Name": XMLRPCString("$o$f80Gâte $iTM"), "Comment": XMLRPCString("hello & welcome"),
			"Password": XMLRPCString("race-pa55"), "PasswordForSpectator": XMLRPCString("spec-pa55"),
			"CurrentMaxPlayers": i(24), "NextMaxPlayers": i(24), "CurrentMaxSpectators": i(8),
			"IsP2PUpload": "<boolean>0</boolean>", "CurrentLadderMode": i(1)},
		ChallengeInfo: map[string]string{"Name": XMLRPCString("$fffA01-$0f0Race"), "UId": XMLRPCString("uid01"),
			"Environnement": XMLRPCString("Stadium"), "GoldTime": i(23500), "LapRace": "<boolean>0</boolean>"},
		GameInfo: map[string]string{"GameMode": i(1), "NbChallenge": i(12), "TimeAttackLimit": i(300000)},
		Version:  map[string]string{"Name": XMLRPCString("TmForever"), "Version": XMLRPCString("2.11.26"), "Build": XMLRPCString("2011-02-21_18_00")},
		Players: []map[string]string{
			{"Login": XMLRPCString("zoe"), "NickName": XMLRPCString("$f00Zoë"), "PlayerId": i(236), "TeamId": i(-1), "LadderRanking": i(4521)},
			{"Login": XMLRPCString("bob"), "NickName": XMLRPCString("$i$00fBob"), "PlayerId": i(237), "TeamId": i(-1), "LadderRanking": i(-1)},
		},
	}
}
