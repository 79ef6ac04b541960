package gqp

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/gamegate/gamegate/wire"
)

// Control codes. Only SOH, STX, EOT, ACK, DC1-DC4, GS, RS and US occur in the
// grammar; the others are named so that the decoder can refuse them.
const (
	SOH byte = 0x01 // starts the encoding header
	STX byte = 0x02 // starts a reply's text
	ETX byte = 0x03 // named by the draft, used by none of its rules
	EOT byte = 0x04 // ends a query or a response
	ACK byte = 0x06 // ends the encoding header; as data, an empty reply
	DLE byte = 0x10 // proposed in the draft for type tags, not adopted
	DC1 byte = 0x11 // starts a string record
	DC2 byte = 0x12 // starts a name/value record
	DC3 byte = 0x13 // starts a list record
	DC4 byte = 0x14 // starts a labeled list record
	ETB byte = 0x17 // proposed in the draft for blocks, not adopted
	GS  byte = 0x1D // separates commands, and replies
	RS  byte = 0x1E // precedes a command's arguments and each of a reply's records
	US  byte = 0x1F // separates arguments, and a record's units
	DEL byte = 0x7F // an ASCII control code, refused inside strings
)

// Identity is the one encoding this package reads and writes: the body as is.
const Identity = "identity"

// Bounds on what the codec reads and writes.
const (
	// MaxQuery is the longest query in bytes. A query travels in one
	// datagram and must fit an Ethernet-sized one.
	MaxQuery = 1500
	// MaxResponse is the longest response in bytes, all of its datagrams
	// together.
	MaxResponse = 64 << 10
	// MaxCommands is the most commands in a query. It also bounds how much
	// work, and how large an answer, one small query can ask of a server.
	MaxCommands = 16
	// MaxArgs is the most arguments of one command.
	MaxArgs = 32
	// MaxReplies is the most replies in a response: one per command.
	MaxReplies = MaxCommands
	// MaxRecords is the most records in one reply.
	MaxRecords = 1024
	// MaxItems is the most items in one list or labeled list record.
	MaxItems = 256
)

// Errors of this format, beyond the wire sentinels. Decoders return them
// wrapped in a [*wire.DecodeError]; encoders wrap them in an error naming
// what they refused.
var (
	// ErrUnsupportedEncoding reports an encoding header naming anything but
	// identity. The name is in the decoded struct's Encoding; a server
	// answers it with status 40.
	ErrUnsupportedEncoding = errors.New("unsupported encoding")
	// ErrSyntax reports a control code of the grammar where the grammar does
	// not allow it, or a printable byte where it wants a control code: a
	// missing or misplaced separator, an RS with no record after it, a
	// record that does not start with DC1-DC4.
	ErrSyntax = errors.New("syntax error")
	// ErrControlByte reports a byte that no rule allows: a control code
	// outside the grammar (NUL, ETX, DLE, ETB, …) or DEL. From an encoder it
	// reports a string holding any control byte, which would break framing.
	ErrControlByte = errors.New("control byte not allowed")
)

// Encoder errors are fixed values: refusing costs no allocation.
var (
	errEncodingName = fmt.Errorf("gqp: encoding: %w", ErrUnsupportedEncoding)
	errNoCommands   = fmt.Errorf("gqp: query without commands: %w", wire.ErrRange)
	errManyCommands = fmt.Errorf("gqp: more than %d commands: %w", MaxCommands, wire.ErrTooLong)
	errEmptyName    = fmt.Errorf("gqp: empty command name: %w", wire.ErrRange)
	errCommandName  = fmt.Errorf("gqp: command name: %w", ErrControlByte)
	errManyArgs     = fmt.Errorf("gqp: more than %d arguments: %w", MaxArgs, wire.ErrTooLong)
	errArg          = fmt.Errorf("gqp: argument: %w", ErrControlByte)
	errEncQueryLong = fmt.Errorf("gqp: query longer than %d bytes: %w", MaxQuery, wire.ErrTooLong)
	errNoReplies    = fmt.Errorf("gqp: response without replies: %w", wire.ErrRange)
	errManyReplies  = fmt.Errorf("gqp: more than %d replies: %w", MaxReplies, wire.ErrTooLong)
	errStatus       = fmt.Errorf("gqp: status above 99: %w", wire.ErrRange)
	errReplyName    = fmt.Errorf("gqp: reply name: %w", ErrControlByte)
	errReplyKind    = fmt.Errorf("gqp: reply kind does not match its fields: %w", wire.ErrRange)
	errText         = fmt.Errorf("gqp: text: %w", ErrControlByte)
	errNoRecords    = fmt.Errorf("gqp: records reply without records: %w", wire.ErrRange)
	errManyRecords  = fmt.Errorf("gqp: more than %d records: %w", MaxRecords, wire.ErrTooLong)
	errRecordKind   = fmt.Errorf("gqp: record kind: %w", wire.ErrRange)
	errRecordLabel  = fmt.Errorf("gqp: label on a string or list record: %w", wire.ErrRange)
	errRecordItems  = fmt.Errorf("gqp: wrong number of items for the record kind: %w", wire.ErrRange)
	errManyItems    = fmt.Errorf("gqp: more than %d items: %w", MaxItems, wire.ErrTooLong)
	errLabel        = fmt.Errorf("gqp: record label: %w", ErrControlByte)
	errItem         = fmt.Errorf("gqp: record item: %w", ErrControlByte)
	errEncRespLong  = fmt.Errorf("gqp: response longer than %d bytes: %w", MaxResponse, wire.ErrTooLong)
)

// The length checks come before any parsing, at a fixed offset, so their
// errors are fixed values too: an oversized flood costs no allocation.
var (
	errQueryTooLong = &wire.DecodeError{Field: "query", Offset: MaxQuery, Err: wire.ErrTooLong}
	errRespTooLong  = &wire.DecodeError{Field: "response", Offset: MaxResponse, Err: wire.ErrTooLong}
)

// Status is a reply's two-digit status code. Codes the draft does not define
// are kept as their number.
type Status uint8

// The status codes the draft defines.
const (
	StatusOK                  Status = 10 // the command succeeded
	StatusUnknownCommand      Status = 20
	StatusUnsupportedFeature  Status = 21 // e.g. an encoding or authentication
	StatusWrongArgCount       Status = 22 // too many or too few arguments
	StatusInvalidArgument     Status = 23 // an argument is malformed
	StatusDisabled            Status = 30 // disabled by the server's admin
	StatusUnavailable         Status = 31 // temporarily unavailable
	StatusUnauthorised        Status = 32 // not authorised, or bad credentials
	StatusUnsupportedEncoding Status = 40 // the query's encoding is not supported
	StatusDecodeError         Status = 41 // the query could not be decoded
)

// MaxStatus is the largest status two digits can carry.
const MaxStatus Status = 99

var statusText = [...]string{
	StatusOK:                  "OK",
	StatusUnknownCommand:      "unknown command",
	StatusUnsupportedFeature:  "unsupported feature",
	StatusWrongArgCount:       "wrong number of arguments",
	StatusInvalidArgument:     "invalid argument",
	StatusDisabled:            "disabled",
	StatusUnavailable:         "temporarily unavailable",
	StatusUnauthorised:        "unauthorised",
	StatusUnsupportedEncoding: "unsupported encoding",
	StatusDecodeError:         "decode error",
}

// Known reports whether the draft defines s.
func (s Status) Known() bool { return int(s) < len(statusText) && statusText[s] != "" }

func (s Status) String() string {
	if s.Known() {
		return statusText[s]
	}
	return "status " + strconv.Itoa(int(s))
}

// Query is a client's request: an optional encoding header and the commands.
type Query struct {
	// Encoding is the header's encoding name, nil when there is no header.
	// Only Identity can be encoded.
	Encoding []byte
	// Commands holds between 1 and MaxCommands commands.
	Commands []Command
}

// Command is one command of a query.
type Command struct {
	Name []byte   // non-empty
	Args [][]byte // at most MaxArgs; nil or empty for "no arguments"
}

// Reset empties q, keeping its capacity for Add or Decode.
func (q *Query) Reset() {
	q.Encoding = nil
	q.Commands = q.Commands[:0]
}

// Add appends a command, reusing the capacity left by earlier use of q. The
// command aliases name and args.
func (q *Query) Add(name []byte, args ...[]byte) {
	var c *Command
	q.Commands, c = grow(q.Commands)
	c.Name = name
	c.Args = append(c.Args[:0], args...)
}

// QueryOf returns a query of one command, name with args, for callers that
// hold them as strings. It checks nothing: AppendTo refuses what cannot be
// encoded.
func QueryOf(name string, args ...string) *Query {
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	q := new(Query)
	q.Add([]byte(name), a...)
	return q
}

// ReplyKind says which of the three forms a reply's data takes.
type ReplyKind uint8

// The forms of a reply's data.
const (
	ReplyEmpty   ReplyKind = iota // ACK: nothing to say
	ReplyText                     // STX and a string
	ReplyRecords                  // one or more records
)

func (k ReplyKind) String() string {
	switch k {
	case ReplyEmpty:
		return "empty"
	case ReplyText:
		return "text"
	case ReplyRecords:
		return "records"
	}
	return "ReplyKind(" + strconv.Itoa(int(k)) + ")"
}

// RecordKind is the control code that starts a record.
type RecordKind uint8

// The record kinds; each is its marker byte.
const (
	RecordString  = RecordKind(DC1) // one string, in Items[0]
	RecordPair    = RecordKind(DC2) // Label = Items[0], e.g. gamename = ut
	RecordList    = RecordKind(DC3) // one or more items
	RecordLabeled = RecordKind(DC4) // a label and zero or more items
)

func (k RecordKind) String() string {
	switch k {
	case RecordString:
		return "string"
	case RecordPair:
		return "pair"
	case RecordList:
		return "list"
	case RecordLabeled:
		return "labeled"
	}
	return "RecordKind(" + strconv.Itoa(int(k)) + ")"
}

// Response is a server's answer: one reply per command, in the query's order.
type Response struct {
	// Encoding is the header's encoding name, nil when there is no header.
	// Only Identity can be encoded.
	Encoding []byte
	// Replies holds between 1 and MaxReplies replies.
	Replies []Reply
}

// Reply answers one command.
type Reply struct {
	Status Status
	// Name is the command's name; empty when the server could not tell
	// which command it answers (statuses 40 and 41).
	Name []byte
	Kind ReplyKind
	// Text is the string of a ReplyText reply (an error message, or what
	// echo returns) and empty otherwise.
	Text []byte
	// Records holds 1 to MaxRecords records for a ReplyRecords reply and is
	// empty otherwise.
	Records []Record
}

// Record is one record of a reply.
type Record struct {
	Kind RecordKind
	// Label is a pair's name or a labeled list's label; empty for the
	// other kinds.
	Label []byte
	// Items holds a string record's string, a pair's value (one item each),
	// a list's 1 to MaxItems items, or a labeled list's 0 to MaxItems.
	Items [][]byte
}

// Value returns the string of a string record or the value of a pair, and
// nil for the other kinds.
func (r *Record) Value() []byte {
	if (r.Kind == RecordString || r.Kind == RecordPair) && len(r.Items) == 1 {
		return r.Items[0]
	}
	return nil
}

// Reset empties r, keeping its capacity for Add or Decode.
func (r *Response) Reset() {
	r.Encoding = nil
	r.Replies = r.Replies[:0]
}

// Add appends an empty reply, reusing the capacity left by earlier use of r,
// and returns it for filling. The pointer is valid until the next Add.
func (r *Response) Add(status Status, name []byte) *Reply {
	var p *Reply
	r.Replies, p = grow(r.Replies)
	p.Status = status
	p.Name = name
	p.Kind = ReplyEmpty
	p.Text = nil
	p.Records = p.Records[:0]
	return p
}

// SetText makes p a text reply. It aliases text.
func (p *Reply) SetText(text []byte) {
	p.Kind = ReplyText
	p.Text = text
	p.Records = p.Records[:0]
}

// AddString appends a string record, making p a records reply.
func (p *Reply) AddString(s []byte) { p.addRecord(RecordString, nil, s) }

// AddPair appends a name/value record, making p a records reply.
func (p *Reply) AddPair(name, value []byte) { p.addRecord(RecordPair, name, value) }

// AddList appends a list record, making p a records reply.
func (p *Reply) AddList(items ...[]byte) { p.addRecord(RecordList, nil, items...) }

// AddLabeled appends a labeled list record, making p a records reply.
func (p *Reply) AddLabeled(label []byte, items ...[]byte) {
	p.addRecord(RecordLabeled, label, items...)
}

// addRecord appends a record, reusing the Items capacity of a record left
// from earlier use of p. The record aliases label and items.
func (p *Reply) addRecord(kind RecordKind, label []byte, items ...[]byte) {
	if p.Kind != ReplyRecords {
		p.Kind = ReplyRecords
		p.Text = nil
		p.Records = p.Records[:0]
	}
	var rec *Record
	p.Records, rec = grow(p.Records)
	rec.Kind = kind
	rec.Label = label
	rec.Items = append(rec.Items[:0], items...)
}

// grow lengthens s by one element and returns it. An element within s's
// capacity keeps what it held, so the caller resets its fields but keeps the
// capacity of the slices inside it: that is how a reused struct stops
// allocating.
func grow[S ~[]E, E any](s S) (S, *E) {
	if n := len(s); n < cap(s) {
		s = s[:n+1]
	} else {
		var zero E
		s = append(s, zero)
	}
	return s, &s[len(s)-1]
}
