package gqp

// Len is the encoded size of q, assuming AppendTo accepts it.
func (q *Query) Len() int {
	n := headerLen(q.Encoding)
	for i := range q.Commands {
		c := &q.Commands[i]
		n += len(c.Name) + 1 // the GS or EOT after it
		for _, a := range c.Args {
			n += 1 + len(a) // the RS or US before it
		}
	}
	return n
}

// AppendTo appends the encoded query to b. It refuses, leaving b's length as
// it was, a query with no commands or more than MaxCommands, an empty command
// name, more than MaxArgs arguments, a control byte or DEL in any string, an
// encoding other than Identity, and a result longer than MaxQuery.
func (q *Query) AppendTo(b []byte) ([]byte, error) {
	start := len(b)
	switch {
	case len(q.Commands) == 0:
		return b, errNoCommands
	case len(q.Commands) > MaxCommands:
		return b, errManyCommands
	case len(q.Encoding) > 0 && !isIdentity(q.Encoding):
		return b, errEncodingName
	}
	b = appendHeader(b, q.Encoding)
	for i := range q.Commands {
		c := &q.Commands[i]
		switch {
		case len(c.Name) == 0:
			return b[:start], errEmptyName
		case !isText(c.Name):
			return b[:start], errCommandName
		case len(c.Args) > MaxArgs:
			return b[:start], errManyArgs
		}
		if i > 0 {
			b = append(b, GS)
		}
		b = append(b, c.Name...)
		sep := RS
		for _, a := range c.Args {
			if !isText(a) {
				return b[:start], errArg
			}
			b = append(b, sep)
			b = append(b, a...)
			sep = US
		}
	}
	b = append(b, EOT)
	if len(b)-start > MaxQuery {
		return b[:start], errEncQueryLong
	}
	return b, nil
}

// Len is the encoded size of r, assuming AppendTo accepts it.
func (r *Response) Len() int {
	n := headerLen(r.Encoding)
	for i := range r.Replies {
		p := &r.Replies[i]
		n += 2 + len(p.Name) + 1 + 1 // status, name, RS, and the GS or EOT after it
		switch p.Kind {
		case ReplyEmpty:
			n++
		case ReplyText:
			n += 1 + len(p.Text)
		default:
			for j := range p.Records {
				n += p.Records[j].len()
			}
			if len(p.Records) > 1 {
				n += len(p.Records) - 1 // the RS between records
			}
		}
	}
	return n
}

// len is the encoded size of rec, assuming appendTo accepts it.
func (rec *Record) len() int {
	n := 1 + len(rec.Label) // the marker
	for _, it := range rec.Items {
		n += 1 + len(it) // the US before it
	}
	if (rec.Kind == RecordString || rec.Kind == RecordList) && len(rec.Items) > 0 {
		n-- // the first item follows the marker, not a US
	}
	return n
}

// AppendTo appends the encoded response to b. It refuses, leaving b's length
// as it was, a response with no replies or more than MaxReplies, a status
// above 99, a reply whose Kind does not match its fields, a records reply
// with no records or more than MaxRecords, a record whose kind, label or
// number of items its kind does not allow, more than MaxItems items, a
// control byte or DEL in any string, an encoding other than Identity, and a
// result longer than MaxResponse.
func (r *Response) AppendTo(b []byte) ([]byte, error) {
	start := len(b)
	switch {
	case len(r.Replies) == 0:
		return b, errNoReplies
	case len(r.Replies) > MaxReplies:
		return b, errManyReplies
	case len(r.Encoding) > 0 && !isIdentity(r.Encoding):
		return b, errEncodingName
	}
	b = appendHeader(b, r.Encoding)
	for i := range r.Replies {
		if i > 0 {
			b = append(b, GS)
		}
		var err error
		if b, err = r.Replies[i].appendTo(b); err != nil {
			return b[:start], err
		}
	}
	b = append(b, EOT)
	if len(b)-start > MaxResponse {
		return b[:start], errEncRespLong
	}
	return b, nil
}

// appendTo appends p; on error the caller discards what it appended.
func (p *Reply) appendTo(b []byte) ([]byte, error) {
	switch {
	case p.Status > MaxStatus:
		return b, errStatus
	case !isText(p.Name):
		return b, errReplyName
	}
	b = append(b, '0'+byte(p.Status/10), '0'+byte(p.Status%10))
	b = append(b, p.Name...)
	b = append(b, RS)
	switch p.Kind {
	case ReplyEmpty:
		if len(p.Text) != 0 || len(p.Records) != 0 {
			return b, errReplyKind
		}
		return append(b, ACK), nil
	case ReplyText:
		switch {
		case len(p.Records) != 0:
			return b, errReplyKind
		case !isText(p.Text):
			return b, errText
		}
		b = append(b, STX)
		return append(b, p.Text...), nil
	case ReplyRecords:
		switch {
		case len(p.Text) != 0:
			return b, errReplyKind
		case len(p.Records) == 0:
			return b, errNoRecords
		case len(p.Records) > MaxRecords:
			return b, errManyRecords
		}
		for i := range p.Records {
			if i > 0 {
				b = append(b, RS)
			}
			var err error
			if b, err = p.Records[i].appendTo(b); err != nil {
				return b, err
			}
		}
		return b, nil
	}
	return b, errReplyKind
}

// appendTo appends rec; on error the caller discards what it appended.
func (rec *Record) appendTo(b []byte) ([]byte, error) {
	n := len(rec.Items)
	switch rec.Kind {
	case RecordString, RecordList:
		if len(rec.Label) != 0 {
			return b, errRecordLabel
		}
		if n == 0 || (rec.Kind == RecordString && n != 1) {
			return b, errRecordItems
		}
	case RecordPair:
		if n != 1 {
			return b, errRecordItems
		}
	case RecordLabeled:
	default:
		return b, errRecordKind
	}
	switch {
	case n > MaxItems:
		return b, errManyItems
	case !isText(rec.Label):
		return b, errLabel
	}
	b = append(b, byte(rec.Kind))
	b = append(b, rec.Label...)
	for i, it := range rec.Items {
		if !isText(it) {
			return b, errItem
		}
		// A string record and a list start their first item right after the
		// marker; every other item follows a US.
		if i > 0 || rec.Kind == RecordPair || rec.Kind == RecordLabeled {
			b = append(b, US)
		}
		b = append(b, it...)
	}
	return b, nil
}

func headerLen(enc []byte) int {
	if len(enc) == 0 {
		return 0
	}
	return 2 + len(enc)
}

func appendHeader(b, enc []byte) []byte {
	if len(enc) == 0 {
		return b
	}
	b = append(b, SOH)
	b = append(b, enc...)
	return append(b, ACK)
}
