package gqp

import "github.com/gamegate/gamegate/wire"

// LooksLikeQuery reports whether b has the shape of a query: 2 to MaxQuery
// bytes, then either an encoding header naming an encoding other than
// identity (such a query is answered with status 40 whatever follows), or
// an optional identity header, a command name starting with an ASCII
// printable byte, nothing but printable bytes and the separators GS, RS and
// US after it, and EOT last. It is the test that tells a query from another
// protocol's datagram on a shared port, and it claims none of theirs: A2S,
// Quake 3 and master-server messages start with 0xFF, QoS and relay
// messages carry a NUL in their first four bytes. It reads each byte at
// most once; Decode checks the grammar between.
func LooksLikeQuery(b []byte) bool {
	if len(b) < 2 || len(b) > MaxQuery || b[len(b)-1] != EOT && b[0] != SOH {
		return false
	}
	i := 0
	if b[0] == SOH {
		end := textEnd(b, 1)
		if end == 1 || end == len(b) || b[end] != ACK {
			return false
		}
		if !isIdentity(b[1:end]) {
			return true
		}
		i = end + 1
	}
	if i >= len(b) || !isNameStart(b[i]) {
		return false
	}
	for _, c := range b[i : len(b)-1] {
		if c < 0x20 && c != GS && c != RS && c != US || c == DEL {
			return false
		}
	}
	return b[len(b)-1] == EOT
}

// isNameStart reports whether c may start a command name: an ASCII
// printable byte. The draft's commands are ASCII words; a byte of 0x80 or
// more first is refused so that no other protocol's 0xFF-led datagram looks
// like a query.
func isNameStart(c byte) bool { return c >= 0x20 && c < DEL }

// Decode parses one whole query, EOT included, into q. Commands and their
// slices alias b, and q's slices are reused. On error q holds whatever was
// decoded before it, except that after [ErrUnsupportedEncoding] q.Encoding
// holds the header's name and q.Commands is empty.
func (q *Query) Decode(b []byte) error {
	q.Reset()
	if len(b) > MaxQuery {
		return errQueryTooLong
	}
	enc, off, err := decodeHeader(b)
	q.Encoding = enc
	if err != nil {
		return err
	}
	for {
		if len(q.Commands) == MaxCommands {
			return wire.NewDecodeError("commands", off, wire.ErrTooLong)
		}
		var c *Command
		q.Commands, c = grow(q.Commands)
		c.Name = nil
		c.Args = c.Args[:0]
		end := textEnd(b, off)
		switch {
		case end == len(b):
			return truncated("command name", end)
		case end == off:
			if b[end] == RS || b[end] == GS || b[end] == EOT {
				return wire.NewDecodeError("command name", off, wire.ErrRange)
			}
			return unexpected("command name", b, end)
		case !isNameStart(b[off]):
			return wire.NewDecodeError("command name", off, wire.ErrRange)
		}
		c.Name = b[off:end:end]
		off = end
		if b[off] == RS {
			for {
				off++
				if len(c.Args) == MaxArgs {
					return wire.NewDecodeError("arguments", off, wire.ErrTooLong)
				}
				end = textEnd(b, off)
				if end == len(b) {
					return truncated("argument", end)
				}
				c.Args = append(c.Args, b[off:end:end])
				off = end
				if b[off] != US {
					break
				}
			}
		}
		switch b[off] {
		case GS:
			off++
		case EOT:
			return trailer(b, off+1)
		default:
			return unexpected("command end", b, off)
		}
	}
}

// Decode parses one whole response, EOT included, into r: a single datagram,
// or the datagrams of one response joined by a [Reassembler]. Replies and
// their slices alias b, and r's slices are reused. On error r holds whatever
// was decoded before it, except that after [ErrUnsupportedEncoding]
// r.Encoding holds the header's name and r.Replies is empty.
func (r *Response) Decode(b []byte) error {
	r.Reset()
	if len(b) > MaxResponse {
		return errRespTooLong
	}
	enc, off, err := decodeHeader(b)
	r.Encoding = enc
	if err != nil {
		return err
	}
	for {
		if len(r.Replies) == MaxReplies {
			return wire.NewDecodeError("replies", off, wire.ErrTooLong)
		}
		var p *Reply
		r.Replies, p = grow(r.Replies)
		p.Status = 0
		p.Name = nil
		p.Text = nil
		p.Records = p.Records[:0]
		if off, err = p.decode(b, off); err != nil {
			return err
		}
		switch b[off] {
		case GS:
			off++
		case EOT:
			return trailer(b, off+1)
		default:
			return unexpected("reply end", b, off)
		}
	}
}

// decode parses the reply at b[off:] up to the GS or EOT after it, and
// returns that separator's offset, which is within b.
func (p *Reply) decode(b []byte, off int) (int, error) {
	var status Status
	for range 2 {
		switch {
		case off == len(b):
			return 0, truncated("status", off)
		case b[off] < '0' || b[off] > '9':
			if b[off] < 0x20 || b[off] == DEL {
				return 0, unexpected("status", b, off)
			}
			return 0, wire.NewDecodeError("status", off, wire.ErrRange)
		}
		status = status*10 + Status(b[off]-'0')
		off++
	}
	p.Status = status
	end := textEnd(b, off)
	if end == len(b) {
		return 0, truncated("reply name", end)
	}
	p.Name = b[off:end:end]
	if b[end] != RS {
		return 0, unexpected("reply name end", b, end)
	}
	off = end + 1
	if off == len(b) {
		return 0, truncated("data", off)
	}
	switch b[off] {
	case ACK:
		p.Kind = ReplyEmpty
		off++
		if off == len(b) {
			return 0, truncated("reply end", off)
		}
		return off, nil
	case STX:
		p.Kind = ReplyText
		off++
		end = textEnd(b, off)
		if end == len(b) {
			return 0, truncated("text", end)
		}
		p.Text = b[off:end:end]
		return end, nil
	}
	p.Kind = ReplyRecords
	for {
		if len(p.Records) == MaxRecords {
			return 0, wire.NewDecodeError("records", off, wire.ErrTooLong)
		}
		kind := RecordKind(b[off])
		if kind < RecordString || kind > RecordLabeled {
			return 0, unexpected("record kind", b, off)
		}
		var rec *Record
		p.Records, rec = grow(p.Records)
		rec.Kind = kind
		rec.Label = nil
		rec.Items = rec.Items[:0]
		var err error
		if off, err = rec.decode(b, off+1); err != nil {
			return 0, err
		}
		if b[off] != RS {
			return off, nil
		}
		off++
		if off == len(b) {
			return 0, truncated("record kind", off)
		}
	}
}

// decode parses the body of a record of kind rec.Kind, starting after its
// marker, and returns the offset of the byte after it, which is within b.
func (rec *Record) decode(b []byte, off int) (int, error) {
	end := textEnd(b, off)
	if end == len(b) {
		return 0, truncated("record", end)
	}
	first := b[off:end:end]
	off = end
	switch rec.Kind {
	case RecordString:
		rec.Items = append(rec.Items, first)
	case RecordPair:
		rec.Label = first
		if b[off] != US {
			return 0, unexpected("pair separator", b, off)
		}
		off++
		end = textEnd(b, off)
		if end == len(b) {
			return 0, truncated("pair value", end)
		}
		rec.Items = append(rec.Items, b[off:end:end])
		off = end
	case RecordList:
		rec.Items = append(rec.Items, first)
		return rec.decodeItems(b, off)
	case RecordLabeled:
		rec.Label = first
		return rec.decodeItems(b, off)
	}
	return off, nil
}

// decodeItems appends the items of a list, each after a US, and returns the
// offset of the first byte that is not a US, which is within b.
func (rec *Record) decodeItems(b []byte, off int) (int, error) {
	for b[off] == US {
		off++
		if len(rec.Items) == MaxItems {
			return 0, wire.NewDecodeError("items", off, wire.ErrTooLong)
		}
		end := textEnd(b, off)
		if end == len(b) {
			return 0, truncated("item", end)
		}
		rec.Items = append(rec.Items, b[off:end:end])
		off = end
	}
	return off, nil
}

// decodeHeader parses the optional encoding header. It returns the name
// (even when it is not supported), and the offset after the header.
func decodeHeader(b []byte) (enc []byte, off int, err error) {
	if len(b) == 0 || b[0] != SOH {
		return nil, 0, nil
	}
	end := textEnd(b, 1)
	switch {
	case end == len(b):
		return nil, 0, truncated("encoding", end)
	case b[end] != ACK:
		return nil, 0, unexpected("encoding", b, end)
	case end == 1:
		return nil, 0, wire.NewDecodeError("encoding", 1, wire.ErrRange)
	}
	enc = b[1:end:end]
	if !isIdentity(enc) {
		return enc, 0, wire.NewDecodeError("encoding", 1, ErrUnsupportedEncoding)
	}
	return enc, end + 1, nil
}

// textEnd returns the offset of the first byte at or after i that cannot be
// part of a string, or len(b).
func textEnd(b []byte, i int) int {
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == DEL {
			break
		}
	}
	return i
}

// isText reports whether s can be sent as a string.
func isText(s []byte) bool { return textEnd(s, 0) == len(s) }

// isIdentity reports whether name is Identity in any ASCII case. Identity is
// all lower-case letters, so c|0x20 equals its letter only for that letter
// and its upper-case form.
func isIdentity(name []byte) bool {
	if len(name) != len(Identity) {
		return false
	}
	for i, c := range name {
		if c|0x20 != Identity[i] {
			return false
		}
	}
	return true
}

// grammar marks the control codes the grammar uses somewhere.
var grammar = [256]bool{
	SOH: true, STX: true, EOT: true, ACK: true,
	DC1: true, DC2: true, DC3: true, DC4: true,
	GS: true, RS: true, US: true,
}

// unexpected reports the byte at b[off], which does not belong there: a
// control code of the grammar out of place, a printable byte where a control
// code must be, or a byte that no rule allows. off must be within b: callers
// report the end of input as truncated themselves.
func unexpected(field string, b []byte, off int) error {
	if c := b[off]; (c >= 0x20 && c != DEL) || grammar[c] {
		return wire.NewDecodeError(field, off, ErrSyntax)
	}
	return wire.NewDecodeError(field, off, ErrControlByte)
}

func truncated(field string, off int) error {
	return wire.NewDecodeError(field, off, wire.ErrTruncated)
}

// trailer checks that the EOT before off ended b.
func trailer(b []byte, off int) error {
	if off != len(b) {
		return wire.NewDecodeError("trailer", off, wire.ErrTooLong)
	}
	return nil
}
