package gqp

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
	wiremaster "github.com/gamegate/gamegate/wire/master"
	wireqos "github.com/gamegate/gamegate/wire/qos"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// reasons maps the REASON of a bad-query:REASON or bad-response:REASON
// vector to the sentinel the decoder must return.
var reasons = map[string]error{
	"truncated": wire.ErrTruncated,
	"too-long":  wire.ErrTooLong,
	"range":     wire.ErrRange,
	"syntax":    ErrSyntax,
	"control":   ErrControlByte,
	"encoding":  ErrUnsupportedEncoding,
}

// dumpQuery and dumpResponse render a decoded message field by field, so
// two messages compare structurally: a nil and an empty slice look alike.
func dumpQuery(q *Query) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "encoding=%q", q.Encoding)
	for _, c := range q.Commands {
		fmt.Fprintf(&sb, " | name=%q args(%d)=%q", c.Name, len(c.Args), c.Args)
	}
	return sb.String()
}

func dumpResponse(r *Response) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "encoding=%q", r.Encoding)
	for _, p := range r.Replies {
		fmt.Fprintf(&sb, " | status=%d name=%q kind=%v text=%q", p.Status, p.Name, p.Kind, p.Text)
		for _, rec := range p.Records {
			fmt.Fprintf(&sb, " [%v label=%q items(%d)=%q]", rec.Kind, rec.Label, len(rec.Items), rec.Items)
		}
	}
	return sb.String()
}

func decodeQuery(t testing.TB, b []byte) *Query {
	t.Helper()
	var q Query
	if err := q.Decode(b); err != nil {
		t.Fatalf("Decode(%x): got %v, want nil", b, err)
	}
	return &q
}

func decodeResponse(t testing.TB, b []byte) *Response {
	t.Helper()
	var r Response
	if err := r.Decode(b); err != nil {
		t.Fatalf("Decode(%x): got %v, want nil", b, err)
	}
	return &r
}

func TestVectors(t *testing.T) {
	for _, v := range testutil.ReadVectors(t, testutil.VectorFile) {
		t.Run(v.Name, func(t *testing.T) {
			kind, reason, bad := strings.Cut(v.Kind, ":")
			var (
				err error
				out []byte
				n   int
			)
			switch kind {
			case "query", "bad-query":
				var q Query
				if err = q.Decode(v.Bytes); err == nil {
					out, err = q.AppendTo(nil)
					n = q.Len()
				} else if errors.Is(err, ErrUnsupportedEncoding) && (len(q.Encoding) == 0 || len(q.Commands) != 0) {
					t.Fatalf("after ErrUnsupportedEncoding: got encoding %q and %d commands, want the name and none", q.Encoding, len(q.Commands))
				}
			case "response", "bad-response":
				var r Response
				if err = r.Decode(v.Bytes); err == nil {
					out, err = r.AppendTo(nil)
					n = r.Len()
				} else if errors.Is(err, ErrUnsupportedEncoding) && (len(r.Encoding) == 0 || len(r.Replies) != 0) {
					t.Fatalf("after ErrUnsupportedEncoding: got encoding %q and %d replies, want the name and none", r.Encoding, len(r.Replies))
				}
			default:
				t.Fatalf("unknown vector kind %q", v.Kind)
			}
			if bad {
				want, ok := reasons[reason]
				if !ok {
					t.Fatalf("unknown reason %q", reason)
				}
				var de *wire.DecodeError
				if !errors.Is(err, want) || !errors.As(err, &de) {
					t.Fatalf("Decode: got %v, want a *wire.DecodeError wrapping %v", err, want)
				}
				if de.Offset < 0 || de.Offset > len(v.Bytes) {
					t.Fatalf("offset: got %d, want within [0, %d]", de.Offset, len(v.Bytes))
				}
				return
			}
			if err != nil || !bytes.Equal(out, v.Bytes) {
				t.Fatalf("decode → encode: got %x (%v), want %x", out, err, v.Bytes)
			}
			if n != len(v.Bytes) {
				t.Fatalf("Len: got %d, want %d", n, len(v.Bytes))
			}
		})
	}
}

// TestDraftExamples checks what the draft's examples mean, not just that
// they round-trip.
func TestDraftExamples(t *testing.T) {
	vs := testutil.Vectors(t)
	t.Run("identify query", func(t *testing.T) {
		q := decodeQuery(t, vs["draft-identify-query"].Bytes)
		if got, want := dumpQuery(q), `encoding="" | name="identify" args(0)=[]`; got != want {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
	t.Run("identify response", func(t *testing.T) {
		r := decodeResponse(t, vs["draft-identify-response"].Bytes)
		if len(r.Replies) != 1 {
			t.Fatalf("replies: got %d, want 1", len(r.Replies))
		}
		p := r.Replies[0]
		if p.Status != StatusOK || string(p.Name) != "identify" || p.Kind != ReplyRecords {
			t.Fatalf("reply: got %v %q %v, want OK \"identify\" records", p.Status, p.Name, p.Kind)
		}
		want := [][2]string{{"gamename", "ut"}, {"gamever", "432"}, {"netver", "432"}}
		if len(p.Records) != len(want) {
			t.Fatalf("records: got %d, want %d", len(p.Records), len(want))
		}
		for i, w := range want {
			rec := &p.Records[i]
			if rec.Kind != RecordPair || string(rec.Label) != w[0] || string(rec.Value()) != w[1] {
				t.Fatalf("record %d: got %v %q=%q, want pair %q=%q", i, rec.Kind, rec.Label, rec.Value(), w[0], w[1])
			}
		}
	})
	t.Run("unknown command response", func(t *testing.T) {
		r := decodeResponse(t, vs["draft-unknown-response"].Bytes)
		p := r.Replies[0]
		if p.Status != StatusUnknownCommand || string(p.Name) != "unknown command" || p.Kind != ReplyText || string(p.Text) != "error: unknown command" {
			t.Fatalf("got %v %q %v %q, want unknown command with its error text", p.Status, p.Name, p.Kind, p.Text)
		}
	})
	t.Run("nameless response", func(t *testing.T) {
		r := decodeResponse(t, vs["draft-nameless-response"].Bytes)
		p := r.Replies[0]
		if p.Status != StatusUnknownCommand || len(p.Name) != 0 || p.Kind != ReplyEmpty {
			t.Fatalf("got %v %q %v, want status 20, no name, empty reply", p.Status, p.Name, p.Kind)
		}
	})
	t.Run("echo", func(t *testing.T) {
		q := decodeQuery(t, vs["draft-echo-query"].Bytes)
		if got, want := dumpQuery(q), `encoding="" | name="echo" args(1)=["this text"] | name="echo" args(1)=["more text"]`; got != want {
			t.Fatalf("query: got %v, want %v", got, want)
		}
		r := decodeResponse(t, vs["draft-echo-response"].Bytes)
		if got, want := dumpResponse(r), `encoding="" | status=10 name="echo" kind=text text="this text" | status=10 name="echo" kind=text text="more text"`; got != want {
			t.Fatalf("response: got %v, want %v", got, want)
		}
	})
}

// TestDecisions pins down each decision the package doc lists.
func TestDecisions(t *testing.T) {
	vs := testutil.Vectors(t)
	queries := []struct {
		name, vector, want string
	}{
		{"name RS is one empty argument", "echo-one-empty-arg", `encoding="" | name="echo" args(1)=[""]`},
		{"name RS US is two empty arguments", "echo-two-empty-args", `encoding="" | name="echo" args(2)=["" ""]`},
		{"an empty argument before GS", "echo-empty-arg-then-command", `encoding="" | name="echo" args(1)=[""] | name="identify" args(0)=[]`},
		{"repeated commands are kept", "repeated-commands", `encoding="" | name="identify" args(0)=[] | name="identify" args(0)=[]`},
		{"identity header", "encoding-identity-query", `encoding="identity" | name="identify" args(0)=[]`},
		{"identity in upper case", "encoding-identity-upper-query", `encoding="IDENTITY" | name="identify" args(0)=[]`},
		{"UTF-8 passes through", "command-utf8", `encoding="" | name="echo" args(1)=["ワオ"]`},
		{"a space in a name", "draft-unknown-query", `encoding="" | name="unknown command" args(0)=[]`},
	}
	for _, tt := range queries {
		t.Run(tt.name, func(t *testing.T) {
			if got := dumpQuery(decodeQuery(t, vs[tt.vector].Bytes)); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	responses := []struct {
		name, vector, want string
	}{
		{"DC3 alone is one empty item", "record-list-one-empty-item", `encoding="" | status=10 name="extensions" kind=records text="" [list label="" items(1)=[""]]`},
		{"DC4 and a label alone has no items", "record-labeled-no-items", `encoding="" | status=10 name="players" kind=records text="" [labeled label="team" items(0)=[]]`},
		{"an empty pair", "record-pair-empty", `encoding="" | status=10 name="identify" kind=records text="" [pair label="" items(1)=[""]]`},
		{"an empty string record", "record-string-empty", `encoding="" | status=10 name="challenge" kind=records text="" [string label="" items(1)=[""]]`},
		{"empty text", "reply-text-empty", `encoding="" | status=10 name="echo" kind=text text=""`},
		{"an undefined status is kept", "status-undefined", `encoding="" | status=55 name="identify" kind=empty text=""`},
		{"status 00", "status-zero", `encoding="" | status=0 name="identify" kind=empty text=""`},
		{"a space after the status belongs to the name", "status-then-space", `encoding="" | status=10 name=" identify" kind=empty text=""`},
		{"a third digit belongs to the name", "status-then-digit", `encoding="" | status=10 name="0x" kind=empty text=""`},
		{"Latin-1 passes through", "record-latin1", `encoding="" | status=10 name="identify" kind=records text="" [pair label="hostname" items(1)=["Caf\xe9"]]`},
		{"identity header on a response", "encoding-identity-response", `encoding="identity" | status=10 name="validate" kind=empty text=""`},
		{"the answer to an unsupported encoding", "encoding-refused-response", `encoding="" | status=40 name="" kind=text text="unsupported encoding: gzip"`},
	}
	for _, tt := range responses {
		t.Run(tt.name, func(t *testing.T) {
			if got := dumpResponse(decodeResponse(t, vs[tt.vector].Bytes)); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("the unsupported encoding's name is available", func(t *testing.T) {
		var q Query
		err := q.Decode(vs["encoding-gzip-query"].Bytes)
		if !errors.Is(err, ErrUnsupportedEncoding) || string(q.Encoding) != "application/gzip" {
			t.Fatalf("got %v with encoding %q, want ErrUnsupportedEncoding with %q", err, q.Encoding, "application/gzip")
		}
		var r Response
		err = r.Decode(vs["encoding-gzip-response"].Bytes)
		if !errors.Is(err, ErrUnsupportedEncoding) || string(r.Encoding) != "gzip" {
			t.Fatalf("got %v with encoding %q, want ErrUnsupportedEncoding with %q", err, r.Encoding, "gzip")
		}
	})
}

func TestDecodeErrors(t *testing.T) {
	queries := []struct {
		name   string
		in     string
		want   error
		field  string
		offset int
	}{
		{"empty input", "", wire.ErrTruncated, "command name", 0},
		{"lone EOT", "\x04", wire.ErrRange, "command name", 0},
		{"empty name after GS", "identify\x1d\x04", wire.ErrRange, "command name", 9},
		{"no EOT", "identify", wire.ErrTruncated, "command name", 8},
		{"argument without EOT", "echo\x1ea", wire.ErrTruncated, "argument", 6},
		{"byte after EOT", "identify\x04x", wire.ErrTooLong, "trailer", 9},
		{"DEL in a name", "iden\x7ftify\x04", ErrControlByte, "command end", 4},
		{"STX in a query", "echo\x1ea\x02\x04", ErrSyntax, "command end", 6},
		{"empty encoding", "\x01\x06identify\x04", wire.ErrRange, "encoding", 1},
		{"encoding without ACK", "\x01identity\x04", ErrSyntax, "encoding", 9},
		{"unsupported encoding", "\x01gzip\x06\xff\x04", ErrUnsupportedEncoding, "encoding", 1},
	}
	for _, tt := range queries {
		t.Run("query/"+tt.name, func(t *testing.T) {
			var q Query
			err := q.Decode([]byte(tt.in))
			var de *wire.DecodeError
			if !errors.Is(err, tt.want) || !errors.As(err, &de) || de.Field != tt.field || de.Offset != tt.offset {
				t.Fatalf("got %v, want %v on field %q at offset %d", err, tt.want, tt.field, tt.offset)
			}
		})
	}
	responses := []struct {
		name   string
		in     string
		want   error
		field  string
		offset int
	}{
		{"empty input", "", wire.ErrTruncated, "status", 0},
		{"one digit", "1x\x1e\x06\x04", wire.ErrRange, "status", 1},
		{"no RS after the name", "10x\x04", ErrSyntax, "reply name end", 3},
		{"no data", "10x\x1e\x04", ErrSyntax, "record kind", 4},
		{"RS without record", "10x\x1e\x11a\x1e\x04", ErrSyntax, "record kind", 7},
		{"RS at the end of input", "10x\x1e\x11a\x1e", wire.ErrTruncated, "record kind", 7},
		{"unknown record kind", "10x\x1e\x15a\x04", ErrControlByte, "record kind", 4},
		{"pair without US", "10x\x1e\x12a\x04", ErrSyntax, "pair separator", 6},
		{"second reply truncated", "10x\x1e\x06\x1d1", wire.ErrTruncated, "status", 7},
		{"byte after EOT", "10x\x1e\x06\x04\x04", wire.ErrTooLong, "trailer", 6},
	}
	for _, tt := range responses {
		t.Run("response/"+tt.name, func(t *testing.T) {
			var r Response
			err := r.Decode([]byte(tt.in))
			var de *wire.DecodeError
			if !errors.Is(err, tt.want) || !errors.As(err, &de) || de.Field != tt.field || de.Offset != tt.offset {
				t.Fatalf("got %v, want %v on field %q at offset %d", err, tt.want, tt.field, tt.offset)
			}
		})
	}
}

// Every proper prefix of a valid message lacks its EOT, so it must fail, and
// with ErrTruncated: everything before the cut was valid.
func TestTruncation(t *testing.T) {
	for _, v := range testutil.ReadVectors(t, testutil.VectorFile) {
		if v.Kind != "query" && v.Kind != "response" {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			for n := range len(v.Bytes) {
				var err error
				if v.Kind == "query" {
					var q Query
					err = q.Decode(v.Bytes[:n])
				} else {
					var r Response
					err = r.Decode(v.Bytes[:n])
				}
				if !errors.Is(err, wire.ErrTruncated) {
					t.Fatalf("prefix of %d bytes: got %v, want ErrTruncated", n, err)
				}
			}
		})
	}
}

// controlBytes are the bytes no string may hold.
func controlBytes() []byte {
	var out []byte
	for c := range 0x20 {
		out = append(out, byte(c))
	}
	return append(out, DEL)
}

func TestEncoderRefusesControlBytes(t *testing.T) {
	for _, c := range controlBytes() {
		s := []byte{'a', c, 'b'}
		ok := []byte("ok")
		queries := map[string]Query{
			"command name": {Commands: []Command{{Name: s}}},
			"first arg":    {Commands: []Command{{Name: ok, Args: [][]byte{s}}}},
			"later arg":    {Commands: []Command{{Name: ok, Args: [][]byte{ok, s}}}},
		}
		for where, q := range queries {
			t.Run(fmt.Sprintf("%s/%#02x", where, c), func(t *testing.T) {
				prefix := []byte("keep")
				out, err := q.AppendTo(prefix)
				if !errors.Is(err, ErrControlByte) || string(out) != "keep" {
					t.Fatalf("got %q, %v, want %q, ErrControlByte", out, err, "keep")
				}
			})
		}
		responses := map[string]Reply{
			"reply name":    {Name: s},
			"text":          {Name: ok, Kind: ReplyText, Text: s},
			"string":        {Name: ok, Kind: ReplyRecords, Records: []Record{{Kind: RecordString, Items: [][]byte{s}}}},
			"pair name":     {Name: ok, Kind: ReplyRecords, Records: []Record{{Kind: RecordPair, Label: s, Items: [][]byte{ok}}}},
			"pair value":    {Name: ok, Kind: ReplyRecords, Records: []Record{{Kind: RecordPair, Label: ok, Items: [][]byte{s}}}},
			"list item":     {Name: ok, Kind: ReplyRecords, Records: []Record{{Kind: RecordList, Items: [][]byte{ok, s}}}},
			"label":         {Name: ok, Kind: ReplyRecords, Records: []Record{{Kind: RecordLabeled, Label: s}}},
			"labeled item":  {Name: ok, Kind: ReplyRecords, Records: []Record{{Kind: RecordLabeled, Label: ok, Items: [][]byte{s}}}},
			"second record": {Name: ok, Kind: ReplyRecords, Records: []Record{{Kind: RecordString, Items: [][]byte{ok}}, {Kind: RecordString, Items: [][]byte{s}}}},
		}
		for where, p := range responses {
			t.Run(fmt.Sprintf("%s/%#02x", where, c), func(t *testing.T) {
				r := Response{Replies: []Reply{{Name: ok}, p}}
				out, err := r.AppendTo([]byte("keep"))
				if !errors.Is(err, ErrControlByte) || string(out) != "keep" {
					t.Fatalf("got %q, %v, want %q, ErrControlByte", out, err, "keep")
				}
			})
		}
	}
}

func TestEncoderRefusals(t *testing.T) {
	ok := []byte("ok")
	item := func(n int) [][]byte { return make([][]byte, n) }
	queries := []struct {
		name string
		q    Query
		want error
	}{
		{"no commands", Query{}, wire.ErrRange},
		{"empty name", Query{Commands: []Command{{Name: nil}}}, wire.ErrRange},
		{"too many commands", Query{Commands: make([]Command, MaxCommands+1)}, wire.ErrTooLong},
		{"too many args", Query{Commands: []Command{{Name: ok, Args: item(MaxArgs + 1)}}}, wire.ErrTooLong},
		{"too long", Query{Commands: []Command{{Name: bytes.Repeat([]byte("a"), MaxQuery)}}}, wire.ErrTooLong},
		{"another encoding", Query{Encoding: []byte("gzip"), Commands: []Command{{Name: ok}}}, ErrUnsupportedEncoding},
		{"an encoding with a control byte", Query{Encoding: []byte("ident\x06ty"), Commands: []Command{{Name: ok}}}, ErrUnsupportedEncoding},
	}
	for _, tt := range queries {
		t.Run("query/"+tt.name, func(t *testing.T) {
			out, err := tt.q.AppendTo(make([]byte, 0, 16))
			if !errors.Is(err, tt.want) || len(out) != 0 {
				t.Fatalf("got %q, %v, want nothing, %v", out, err, tt.want)
			}
		})
	}
	records := func(recs ...Record) Response {
		return Response{Replies: []Reply{{Name: ok, Kind: ReplyRecords, Records: recs}}}
	}
	responses := []struct {
		name string
		r    Response
		want error
	}{
		{"no replies", Response{}, wire.ErrRange},
		{"too many replies", Response{Replies: make([]Reply, MaxReplies+1)}, wire.ErrTooLong},
		{"status 100", Response{Replies: []Reply{{Status: 100}}}, wire.ErrRange},
		{"empty with text", Response{Replies: []Reply{{Kind: ReplyEmpty, Text: ok}}}, wire.ErrRange},
		{"empty with records", Response{Replies: []Reply{{Kind: ReplyEmpty, Records: []Record{{Kind: RecordString, Items: [][]byte{ok}}}}}}, wire.ErrRange},
		{"text with records", Response{Replies: []Reply{{Kind: ReplyText, Records: []Record{{Kind: RecordString, Items: [][]byte{ok}}}}}}, wire.ErrRange},
		{"records with text", Response{Replies: []Reply{{Kind: ReplyRecords, Text: ok, Records: []Record{{Kind: RecordString, Items: [][]byte{ok}}}}}}, wire.ErrRange},
		{"unknown reply kind", Response{Replies: []Reply{{Kind: 3}}}, wire.ErrRange},
		{"records without records", records(), wire.ErrRange},
		{"too many records", records(make([]Record, MaxRecords+1)...), wire.ErrTooLong},
		{"record kind zero", records(Record{Items: [][]byte{ok}}), wire.ErrRange},
		{"record kind DC4+1", records(Record{Kind: RecordLabeled + 1, Items: [][]byte{ok}}), wire.ErrRange},
		{"string with a label", records(Record{Kind: RecordString, Label: ok, Items: [][]byte{ok}}), wire.ErrRange},
		{"string without items", records(Record{Kind: RecordString}), wire.ErrRange},
		{"string with two items", records(Record{Kind: RecordString, Items: [][]byte{ok, ok}}), wire.ErrRange},
		{"pair without value", records(Record{Kind: RecordPair, Label: ok}), wire.ErrRange},
		{"pair with two values", records(Record{Kind: RecordPair, Label: ok, Items: [][]byte{ok, ok}}), wire.ErrRange},
		{"list without items", records(Record{Kind: RecordList}), wire.ErrRange},
		{"list with a label", records(Record{Kind: RecordList, Label: ok, Items: [][]byte{ok}}), wire.ErrRange},
		{"list with too many items", records(Record{Kind: RecordList, Items: item(MaxItems + 1)}), wire.ErrTooLong},
		{"labeled with too many items", records(Record{Kind: RecordLabeled, Items: item(MaxItems + 1)}), wire.ErrTooLong},
		{"too long", Response{Replies: []Reply{{Kind: ReplyText, Text: bytes.Repeat([]byte("a"), MaxResponse)}}}, wire.ErrTooLong},
		{"another encoding", Response{Encoding: []byte("gzip"), Replies: []Reply{{}}}, ErrUnsupportedEncoding},
	}
	for _, tt := range responses {
		t.Run("response/"+tt.name, func(t *testing.T) {
			out, err := tt.r.AppendTo(make([]byte, 0, 16))
			if !errors.Is(err, tt.want) || len(out) != 0 {
				t.Fatalf("got %q, %v, want nothing, %v", out, err, tt.want)
			}
		})
	}
}

// TestBounds checks each bound at its limit, accepted by both sides, and one
// past it, refused by the decoder.
func TestBounds(t *testing.T) {
	a := []byte("a")
	repeat := func(s string, n int) string { return strings.Repeat(s, n) }
	queries := []struct {
		name     string
		atLimit  string
		overIt   string
		overWant error
	}{
		{"commands", repeat("a\x1d", MaxCommands-1) + "a\x04", repeat("a\x1d", MaxCommands) + "a\x04", wire.ErrTooLong},
		{"args", "a\x1e" + repeat("x\x1f", MaxArgs-1) + "x\x04", "a\x1e" + repeat("x\x1f", MaxArgs) + "x\x04", wire.ErrTooLong},
		{"length", repeat("a", MaxQuery-1) + "\x04", repeat("a", MaxQuery) + "\x04", wire.ErrTooLong},
	}
	for _, tt := range queries {
		t.Run("query/"+tt.name, func(t *testing.T) {
			q := decodeQuery(t, []byte(tt.atLimit))
			if out, err := q.AppendTo(nil); err != nil || string(out) != tt.atLimit {
				t.Fatalf("at the limit, re-encoding: got %v, want the same bytes", err)
			}
			if err := q.Decode([]byte(tt.overIt)); !errors.Is(err, tt.overWant) {
				t.Fatalf("past the limit: got %v, want %v", err, tt.overWant)
			}
		})
	}
	responses := []struct {
		name     string
		atLimit  string
		overIt   string
		overWant error
	}{
		{"replies", repeat("10\x1e\x06\x1d", MaxReplies-1) + "10\x1e\x06\x04", repeat("10\x1e\x06\x1d", MaxReplies) + "10\x1e\x06\x04", wire.ErrTooLong},
		{"records", "10\x1e" + repeat("\x11\x1e", MaxRecords-1) + "\x11\x04", "10\x1e" + repeat("\x11\x1e", MaxRecords) + "\x11\x04", wire.ErrTooLong},
		{"list items", "10\x1e\x13" + repeat("\x1f", MaxItems-1) + "\x04", "10\x1e\x13" + repeat("\x1f", MaxItems) + "\x04", wire.ErrTooLong},
		{"labeled items", "10\x1e\x14" + repeat("\x1f", MaxItems) + "\x04", "10\x1e\x14" + repeat("\x1f", MaxItems+1) + "\x04", wire.ErrTooLong},
		{"length", "10\x1e\x02" + repeat("a", MaxResponse-5) + "\x04", "10\x1e\x02" + repeat("a", MaxResponse-4) + "\x04", wire.ErrTooLong},
	}
	for _, tt := range responses {
		t.Run("response/"+tt.name, func(t *testing.T) {
			r := decodeResponse(t, []byte(tt.atLimit))
			if out, err := r.AppendTo(nil); err != nil || string(out) != tt.atLimit {
				t.Fatalf("at the limit, re-encoding: got %v, want the same bytes", err)
			}
			if err := r.Decode([]byte(tt.overIt)); !errors.Is(err, tt.overWant) {
				t.Fatalf("past the limit: got %v, want %v", err, tt.overWant)
			}
		})
	}
	t.Run("encoders accept what the decoders do", func(t *testing.T) {
		var q Query
		for range MaxCommands {
			q.Add(a, make([][]byte, MaxArgs)...)
		}
		if _, err := q.AppendTo(nil); err != nil {
			t.Fatalf("MaxCommands commands of MaxArgs args: got %v, want nil", err)
		}
	})
}

func TestReassembler(t *testing.T) {
	for _, v := range testutil.ReadVectors(t, testutil.VectorFile) {
		if v.Kind != "response" {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			var ra Reassembler
			// Every way to cut the response in three datagrams, the
			// first and middle ones possibly empty.
			for i := 0; i <= len(v.Bytes); i++ {
				for j := i; j < len(v.Bytes); j++ {
					ra.Reset()
					for k, d := range [][]byte{v.Bytes[:i], v.Bytes[i:j], v.Bytes[j:]} {
						done, err := ra.Add(d)
						if err != nil || done != (k == 2) {
							t.Fatalf("cut at %d and %d, datagram %d: got %v, %v, want %v, nil", i, j, k, done, err, k == 2)
						}
					}
					if !bytes.Equal(ra.Bytes(), v.Bytes) {
						t.Fatalf("cut at %d and %d: got %x, want %x", i, j, ra.Bytes(), v.Bytes)
					}
				}
			}
		})
	}
	errTests := []struct {
		name      string
		limit     int
		datagrams []string
		field     string
		offset    int
	}{
		{"a byte after EOT in the datagram", 0, []string{"10x\x1e", "\x06\x04x"}, "trailer", 6},
		{"a datagram after EOT", 0, []string{"10x\x1e\x06\x04", "10"}, "trailer", 6},
		{"over the limit", 8, []string{"10xyz\x1e", "\x06\x04x"}, "response", 8},
		{"over MaxResponse", MaxResponse + 1, []string{strings.Repeat("a", MaxResponse), "\x04"}, "response", MaxResponse},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			ra := Reassembler{Limit: tt.limit}
			var err error
			for _, d := range tt.datagrams {
				if _, err = ra.Add([]byte(d)); err != nil {
					break
				}
			}
			var de *wire.DecodeError
			if !errors.Is(err, wire.ErrTooLong) || !errors.As(err, &de) || de.Field != tt.field || de.Offset != tt.offset {
				t.Fatalf("got %v, want ErrTooLong on field %q at offset %d", err, tt.field, tt.offset)
			}
			if done, again := ra.Add([]byte("\x04")); done || again != err {
				t.Fatalf("after an error: got %v, %v, want false and the same error", done, again)
			}
			ra.Reset()
			if done, err := ra.Add([]byte("10\x1e\x06\x04")); !done || err != nil {
				t.Fatalf("after Reset: got %v, %v, want true, nil", done, err)
			}
		})
	}
	t.Run("exactly the limit", func(t *testing.T) {
		ra := Reassembler{Limit: 5}
		if done, err := ra.Add([]byte("10\x1e\x06\x04")); !done || err != nil {
			t.Fatalf("got %v, %v, want true, nil", done, err)
		}
	})
	t.Run("copies its input", func(t *testing.T) {
		var ra Reassembler
		buf := []byte("10x\x1e")
		if _, err := ra.Add(buf); err != nil {
			t.Fatal(err)
		}
		copy(buf, "zzzz")
		if got, want := string(ra.Bytes()), "10x\x1e"; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

// TestBuilders builds the draft's vectors with Add and the record helpers.
func TestBuilders(t *testing.T) {
	vs := testutil.Vectors(t)
	var r Response
	// A first use leaves records and items behind that the second must
	// not show.
	p := r.Add(StatusOK, []byte("junk"))
	p.AddLabeled([]byte("l"), []byte("1"), []byte("2"), []byte("3"))
	p.AddString([]byte("s"))
	p.AddList([]byte("x"), []byte("y"))
	r.Add(StatusOK, []byte("more")).SetText([]byte("t"))

	r.Reset()
	p = r.Add(StatusOK, []byte("identify"))
	p.AddPair([]byte("gamename"), []byte("ut"))
	p.AddPair([]byte("gamever"), []byte("432"))
	p.AddPair([]byte("netver"), []byte("432"))
	out, err := r.AppendTo(nil)
	if want := vs["draft-identify-response"].Bytes; err != nil || !bytes.Equal(out, want) {
		t.Fatalf("identify: got %x (%v), want %x", out, err, want)
	}

	r.Reset()
	r.Add(StatusOK, []byte("echo")).SetText([]byte("this text"))
	r.Add(StatusOK, []byte("echo")).SetText([]byte("more text"))
	out, err = r.AppendTo(out[:0])
	if want := vs["draft-echo-response"].Bytes; err != nil || !bytes.Equal(out, want) {
		t.Fatalf("echo: got %x (%v), want %x", out, err, want)
	}

	r.Reset()
	p = r.Add(StatusOK, []byte("status"))
	p.SetText([]byte("replaced by the records"))
	p.AddString([]byte("ok"))
	p.AddPair([]byte("map"), []byte("DM-Deck16"))
	p.AddList([]byte("a"), []byte("b"))
	p.AddLabeled([]byte("team"), []byte("red"), []byte("blue"))
	out, err = r.AppendTo(out[:0])
	if want := vs["record-all-kinds"].Bytes; err != nil || !bytes.Equal(out, want) {
		t.Fatalf("all kinds: got %x (%v), want %x", out, err, want)
	}

	var q Query
	q.Add([]byte("junk"), []byte("1"), []byte("2"))
	q.Reset()
	q.Add([]byte("echo"), []byte("this text"))
	q.Add([]byte("echo"), []byte("more text"))
	out, err = q.AppendTo(out[:0])
	if want := vs["draft-echo-query"].Bytes; err != nil || !bytes.Equal(out, want) {
		t.Fatalf("echo query: got %x (%v), want %x", out, err, want)
	}

	for _, tc := range []struct {
		vector string
		q      *Query
	}{
		{"draft-identify-query", QueryOf("identify")},
		{"echo-one-empty-arg", QueryOf("echo", "")},
		{"echo-two-empty-args", QueryOf("echo", "", "")},
		{"command-utf8", QueryOf("echo", "ワオ")},
	} {
		out, err = tc.q.AppendTo(out[:0])
		if want := vs[tc.vector].Bytes; err != nil || !bytes.Equal(out, want) {
			t.Errorf("QueryOf for %s: got %x (%v), want %x", tc.vector, out, err, want)
		}
	}
}

// TestReuse decodes every vector into structs that held every other one:
// nothing of the earlier message may show through.
func TestReuse(t *testing.T) {
	vs := testutil.ReadVectors(t, testutil.VectorFile)
	var q Query
	var r Response
	for _, first := range vs {
		for _, second := range vs {
			switch {
			case first.Kind == "query" && second.Kind == "query":
				_ = q.Decode(first.Bytes)
				if err := q.Decode(second.Bytes); err != nil {
					t.Fatalf("%s after %s: got %v, want nil", second.Name, first.Name, err)
				}
				if got, want := dumpQuery(&q), dumpQuery(decodeQuery(t, second.Bytes)); got != want {
					t.Fatalf("%s after %s: got %v, want %v", second.Name, first.Name, got, want)
				}
			case first.Kind == "response" && second.Kind == "response":
				_ = r.Decode(first.Bytes)
				if err := r.Decode(second.Bytes); err != nil {
					t.Fatalf("%s after %s: got %v, want nil", second.Name, first.Name, err)
				}
				if got, want := dumpResponse(&r), dumpResponse(decodeResponse(t, second.Bytes)); got != want {
					t.Fatalf("%s after %s: got %v, want %v", second.Name, first.Name, got, want)
				}
			}
		}
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		s     Status
		known bool
		str   string
	}{
		{StatusOK, true, "OK"},
		{StatusUnknownCommand, true, "unknown command"},
		{StatusUnsupportedFeature, true, "unsupported feature"},
		{StatusWrongArgCount, true, "wrong number of arguments"},
		{StatusInvalidArgument, true, "invalid argument"},
		{StatusDisabled, true, "disabled"},
		{StatusUnavailable, true, "temporarily unavailable"},
		{StatusUnauthorised, true, "unauthorised"},
		{StatusUnsupportedEncoding, true, "unsupported encoding"},
		{StatusDecodeError, true, "decode error"},
		{0, false, "status 0"},
		{11, false, "status 11"},
		{55, false, "status 55"},
		{99, false, "status 99"},
		{200, false, "status 200"},
	}
	for _, tt := range tests {
		t.Run(tt.str, func(t *testing.T) {
			if got := tt.s.Known(); got != tt.known {
				t.Fatalf("Known: got %v, want %v", got, tt.known)
			}
			if got := tt.s.String(); got != tt.str {
				t.Fatalf("String: got %v, want %v", got, tt.str)
			}
		})
	}
}

func TestKinds(t *testing.T) {
	tests := []struct {
		name string
		got  fmt.Stringer
		want string
	}{
		{"empty", ReplyEmpty, "empty"},
		{"text", ReplyText, "text"},
		{"records", ReplyRecords, "records"},
		{"reply kind 3", ReplyKind(3), "ReplyKind(3)"},
		{"string", RecordString, "string"},
		{"pair", RecordPair, "pair"},
		{"list", RecordList, "list"},
		{"labeled", RecordLabeled, "labeled"},
		{"record kind 0", RecordKind(0), "RecordKind(0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got.String(); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	values := []struct {
		name string
		rec  Record
		want []byte
	}{
		{"string", Record{Kind: RecordString, Items: [][]byte{[]byte("s")}}, []byte("s")},
		{"pair", Record{Kind: RecordPair, Label: []byte("n"), Items: [][]byte{[]byte("v")}}, []byte("v")},
		{"list", Record{Kind: RecordList, Items: [][]byte{[]byte("a")}}, nil},
		{"labeled", Record{Kind: RecordLabeled, Label: []byte("l"), Items: [][]byte{[]byte("a")}}, nil},
		{"malformed pair", Record{Kind: RecordPair}, nil},
	}
	for _, tt := range values {
		t.Run("value of "+tt.name, func(t *testing.T) {
			if got := tt.rec.Value(); !bytes.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestZeroAllocs(t *testing.T) {
	vs := testutil.Vectors(t)
	query := vs["multi-query"].Bytes
	response := vs["multi-response"].Bytes
	all := vs["record-all-kinds"].Bytes
	var q Query
	var r Response
	var ra Reassembler
	identify, echo := []byte("identify"), []byte("echo")
	out := make([]byte, 0, MaxQuery)
	step := func() {
		if err := q.Decode(query); err != nil {
			panic(err)
		}
		if err := r.Decode(all); err != nil {
			panic(err)
		}
		if err := r.Decode(response); err != nil {
			panic(err)
		}
		var err error
		if out, err = q.AppendTo(out[:0]); err != nil {
			panic(err)
		}
		if out, err = r.AppendTo(out[:0]); err != nil {
			panic(err)
		}
		ra.Reset()
		if _, err := ra.Add(response[:10]); err != nil {
			panic(err)
		}
		if _, err := ra.Add(response[10:]); err != nil {
			panic(err)
		}
		r.Reset()
		p := r.Add(StatusOK, identify)
		p.AddPair(q.Commands[0].Name, q.Commands[1].Args[0])
		p.AddList(q.Commands[1].Args...)
		p.AddLabeled(q.Commands[0].Name, q.Commands[1].Args[0], q.Commands[1].Args[1])
		r.Add(StatusOK, echo).SetText(q.Commands[1].Args[0])
	}
	step() // grow the reused slices
	if allocs := testing.AllocsPerRun(1000, step); allocs != 0 {
		t.Fatalf("got %v allocations per decode/encode round, want 0", allocs)
	}
}

func FuzzQuery(f *testing.F) {
	vs := testutil.SeedVectors(f)
	var reused Query
	f.Fuzz(func(t *testing.T, in []byte) {
		q, err := testutil.RoundTrip(t, in, &reused, vs["multi-query"].Bytes, dumpQuery)
		if (err == nil || errors.Is(err, ErrUnsupportedEncoding)) && !LooksLikeQuery(in) {
			t.Fatalf("LooksLikeQuery refuses %x, which decodes", in)
		}
		if LooksLikeQuery(in) && (wireqos.LooksLikeRequest(in) || wirerelay.LooksLikeMessage(in) ||
			wirea2s.LooksLikeRequest(in) || wiremaster.Peek(in) != wiremaster.KindNone) {
			t.Fatalf("LooksLikeQuery and another protocol's peek both claim %x", in)
		}
		if errors.Is(err, ErrUnsupportedEncoding) && (len(q.Encoding) == 0 || len(q.Commands) != 0) {
			t.Fatalf("after ErrUnsupportedEncoding: got encoding %q and %d commands", q.Encoding, len(q.Commands))
		}
	})
}

func FuzzResponse(f *testing.F) {
	vs := testutil.SeedVectors(f)
	var reused Response
	var ra Reassembler
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := testutil.RoundTrip(t, in, &reused, vs["record-all-kinds"].Bytes, dumpResponse)
		if errors.Is(err, ErrUnsupportedEncoding) && (len(r.Encoding) == 0 || len(r.Replies) != 0) {
			t.Fatalf("after ErrUnsupportedEncoding: got encoding %q and %d replies", r.Encoding, len(r.Replies))
		}
		if err != nil {
			return
		}
		// A valid response cut in two datagrams completes at the second.
		ra.Reset()
		cut := len(in) / 2
		if done, err := ra.Add(in[:cut]); done || err != nil {
			t.Fatalf("first half: got %v, %v, want false, nil", done, err)
		}
		if done, err := ra.Add(in[cut:]); !done || err != nil || !bytes.Equal(ra.Bytes(), in) {
			t.Fatalf("second half: got %v, %v, want true, nil and the whole response", done, err)
		}
	})
}

func BenchmarkQueryDecode(b *testing.B) {
	var q Query
	testutil.BenchDecode(b, testutil.Vectors(b)["multi-query"].Bytes, q.Decode)
}

func BenchmarkQueryEncode(b *testing.B) {
	var q Query
	if err := q.Decode(testutil.Vectors(b)["multi-query"].Bytes); err != nil {
		b.Fatal(err)
	}
	testutil.BenchEncode(b, &q)
}

func BenchmarkResponseDecode(b *testing.B) {
	var r Response
	testutil.BenchDecode(b, testutil.Vectors(b)["draft-identify-response"].Bytes, r.Decode)
}

func BenchmarkResponseEncode(b *testing.B) {
	var r Response
	if err := r.Decode(testutil.Vectors(b)["draft-identify-response"].Bytes); err != nil {
		b.Fatal(err)
	}
	testutil.BenchEncode(b, &r)
}

func TestLooksLikeQuery(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want bool
	}{
		{"command", []byte("ping\x04"), true},
		{"encoding header", []byte("\x01identity\x06ping\x04"), true},
		{"unsupported encoding", []byte("\x01gzip\x06\x1f\x8b"), true},
		{"command with arguments", []byte("players\x1e1\x04"), true},
		{"EOT only", []byte{EOT}, false},
		{"no EOT", []byte("ping"), false},
		{"control byte first", []byte("\x02ping\x04"), false},
		{"DEL first", []byte("\x7fping\x04"), false},
		{"0xFF first", []byte("\xff\xff\xff\xffU\x41\x42\x43\x04"), false},
		{"non-ASCII name", []byte("\xc3\xa9cho\x04"), false},
		{"NUL inside", []byte("Y\x00\x02A\x04"), false},
		{"control byte inside", []byte("pi\x02ng\x04"), false},
		{"identity header then NUL", []byte("\x01identity\x06p\x00\x04"), false},
		{"header without ACK", []byte("\x01identity"), false},
		{"empty encoding", []byte("\x01\x06ping\x04"), false},
		{"separators", []byte("a\x1eb\x1fc\x1dd\x04"), true},
		{"longer than MaxQuery", append(bytes.Repeat([]byte("a"), MaxQuery), EOT), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LooksLikeQuery(tc.in); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
