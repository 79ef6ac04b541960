package nadeo

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gamegate/gamegate/wire"
)

// Bounds of a decoded XML-RPC value.
const (
	// MaxDepth bounds the nesting of arrays and structs.
	MaxDepth = 16
	// MaxValues bounds the values of one answer, nested ones included.
	MaxValues = 1 << 16
)

// Fault is an XML-RPC fault answer: the server refused the call.
type Fault struct {
	Code    int
	Message string
}

func (f *Fault) Error() string { return fmt.Sprintf("fault %d: %s", f.Code, f.Message) }

// ErrXML reports XML that is not a well-formed XML-RPC answer.
var ErrXML = errors.New("not an XML-RPC answer")

// AppendCall appends the XML of a methodCall of method with params, each
// a string, an int or a bool.
func AppendCall(b []byte, method string, params ...any) ([]byte, error) {
	b = append(b, `<?xml version="1.0" encoding="UTF-8"?><methodCall><methodName>`...)
	b = appendText(b, method)
	b = append(b, "</methodName><params>"...)
	for _, p := range params {
		b = append(b, "<param>"...)
		var err error
		if b, err = AppendValue(b, p); err != nil {
			return b, err
		}
		b = append(b, "</param>"...)
	}
	return append(b, "</params></methodCall>"...), nil
}

// AppendResponse appends the XML of a methodResponse carrying v.
func AppendResponse(b []byte, v any) ([]byte, error) {
	b = append(b, `<?xml version="1.0" encoding="UTF-8"?><methodResponse><params><param>`...)
	b, err := AppendValue(b, v)
	return append(b, "</param></params></methodResponse>"...), err
}

// AppendValue appends v as an XML-RPC value: a string, int, bool,
// float64, []any or map[string]any (members in name order), or nil.
func AppendValue(b []byte, v any) ([]byte, error) {
	b = append(b, "<value>"...)
	switch v := v.(type) {
	case nil:
		b = append(b, "<nil/>"...)
	case string:
		b = append(appendText(append(b, "<string>"...), v), "</string>"...)
	case int:
		if v < math.MinInt32 || v > math.MaxInt32 {
			return b, wire.ErrRange
		}
		b = append(strconv.AppendInt(append(b, "<i4>"...), int64(v), 10), "</i4>"...)
	case bool:
		n := "0"
		if v {
			n = "1"
		}
		b = append(append(append(b, "<boolean>"...), n...), "</boolean>"...)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return b, wire.ErrRange
		}
		b = append(strconv.AppendFloat(append(b, "<double>"...), v, 'g', -1, 64), "</double>"...)
	case []any:
		b = append(b, "<array><data>"...)
		for _, e := range v {
			var err error
			if b, err = AppendValue(b, e); err != nil {
				return b, err
			}
		}
		b = append(b, "</data></array>"...)
	case map[string]any:
		b = append(b, "<struct>"...)
		names := make([]string, 0, len(v))
		for k := range v {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			b = append(appendText(append(b, "<member><name>"...), k), "</name>"...)
			var err error
			if b, err = AppendValue(b, v[k]); err != nil {
				return b, err
			}
			b = append(b, "</member>"...)
		}
		b = append(b, "</struct>"...)
	default:
		return b, wire.ErrRange
	}
	return append(b, "</value>"...), nil
}

func appendText(b []byte, s string) []byte {
	var w bytes.Buffer
	_ = xml.EscapeText(&w, []byte(s))
	return append(b, w.Bytes()...)
}

// DecodeResponse decodes the XML of a methodResponse: its one value
// (a string, int, bool, float64, []any, map[string]any or nil; a
// dateTime.iso8601 or base64 value as its text), or a *Fault. Bad XML
// is a *wire.DecodeError wrapping ErrXML or the bound it passes.
func DecodeResponse(b []byte) (any, error) {
	d := decoder{dec: xml.NewDecoder(bytes.NewReader(b)), n: len(b)}
	d.dec.Strict = true
	d.dec.CharsetReader = nil
	v, err := d.response()
	if err != nil {
		var de *wire.DecodeError
		var f *Fault
		if errors.As(err, &de) || errors.As(err, &f) {
			return nil, err
		}
		return nil, wire.NewDecodeError("xml", d.offset(), fmt.Errorf("%w: %v", ErrXML, err))
	}
	return v, nil
}

type decoder struct {
	dec    *xml.Decoder
	n      int // the input's length
	values int
}

func (d *decoder) offset() int { return int(min(max(d.dec.InputOffset(), 0), int64(d.n))) }

func (d *decoder) fail(field string, err error) error {
	return wire.NewDecodeError(field, d.offset(), err)
}

// next returns the next start or end element, skipping white space,
// comments, processing instructions and directives; other text is an
// error where only elements may be.
func (d *decoder) next() (xml.Token, error) {
	for {
		t, err := d.dec.Token()
		if err != nil {
			if err == io.EOF {
				return nil, d.fail("xml", wire.ErrTruncated)
			}
			return nil, err
		}
		switch t := t.(type) {
		case xml.StartElement, xml.EndElement:
			return t, nil
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				return nil, d.fail("xml", ErrXML)
			}
		}
	}
}

// expect reads the start (or, with end, the end) element name.
func (d *decoder) expect(name string, end bool) error {
	t, err := d.next()
	if err != nil {
		return err
	}
	switch t := t.(type) {
	case xml.StartElement:
		if !end && t.Name.Local == name {
			return nil
		}
	case xml.EndElement:
		if end && t.Name.Local == name {
			return nil
		}
	}
	return d.fail(name, ErrXML)
}

func (d *decoder) response() (any, error) {
	if err := d.expect("methodResponse", false); err != nil {
		return nil, err
	}
	t, err := d.next()
	if err != nil {
		return nil, err
	}
	start, ok := t.(xml.StartElement)
	if !ok {
		return nil, d.fail("methodResponse", ErrXML)
	}
	var v any
	switch start.Name.Local {
	case "params":
		if err := d.expect("param", false); err != nil {
			return nil, err
		}
		if v, err = d.value(0); err != nil {
			return nil, err
		}
		if err := d.expectEnds("param", "params"); err != nil {
			return nil, err
		}
	case "fault":
		fv, err := d.value(0)
		if err != nil {
			return nil, err
		}
		if err := d.expectEnds("fault"); err != nil {
			return nil, err
		}
		m, _ := fv.(map[string]any)
		code, _ := m["faultCode"].(int)
		msg, _ := m["faultString"].(string)
		v = &Fault{Code: code, Message: msg}
	default:
		return nil, d.fail("methodResponse", ErrXML)
	}
	if err := d.expectEnds("methodResponse"); err != nil {
		return nil, err
	}
	for {
		t, err := d.dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if cd, ok := t.(xml.CharData); ok && len(bytes.TrimSpace(cd)) != 0 {
			return nil, d.fail("xml", ErrXML)
		}
		if _, ok := t.(xml.StartElement); ok {
			return nil, d.fail("xml", ErrXML)
		}
	}
	if f, ok := v.(*Fault); ok {
		return nil, f
	}
	return v, nil
}

func (d *decoder) expectEnds(names ...string) error {
	for _, n := range names {
		if err := d.expect(n, true); err != nil {
			return err
		}
	}
	return nil
}

// value reads a <value> element, its start included.
func (d *decoder) value(depth int) (any, error) {
	if err := d.expect("value", false); err != nil {
		return nil, err
	}
	return d.valueBody(depth)
}

// valueBody reads a value after its start element, through its end.
func (d *decoder) valueBody(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, d.fail("value", wire.ErrTooLong)
	}
	if d.values++; d.values > MaxValues {
		return nil, d.fail("value", wire.ErrTooLong)
	}
	// Text before a type element is white space; text alone is a string.
	var text []byte
	for {
		t, err := d.dec.Token()
		if err != nil {
			if err == io.EOF {
				return nil, d.fail("value", wire.ErrTruncated)
			}
			return nil, err
		}
		switch t := t.(type) {
		case xml.CharData:
			text = append(text, t...)
		case xml.EndElement:
			return string(text), nil // an untyped value is a string
		case xml.StartElement:
			if len(bytes.TrimSpace(text)) != 0 {
				return nil, d.fail("value", ErrXML)
			}
			v, err := d.typed(t.Name.Local, depth)
			if err != nil {
				return nil, err
			}
			return v, d.expect("value", true)
		}
	}
}

// typed reads a type element's content after its start, through its end.
func (d *decoder) typed(kind string, depth int) (any, error) {
	switch kind {
	case "array":
		if err := d.expect("data", false); err != nil {
			return nil, err
		}
		out := []any{}
		for {
			t, err := d.next()
			if err != nil {
				return nil, err
			}
			if e, ok := t.(xml.EndElement); ok && e.Name.Local == "data" {
				return out, d.expect("array", true)
			}
			if s, ok := t.(xml.StartElement); !ok || s.Name.Local != "value" {
				return nil, d.fail("array", ErrXML)
			}
			v, err := d.valueBody(depth + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	case "struct":
		out := map[string]any{}
		for {
			t, err := d.next()
			if err != nil {
				return nil, err
			}
			if e, ok := t.(xml.EndElement); ok && e.Name.Local == "struct" {
				return out, nil
			}
			if s, ok := t.(xml.StartElement); !ok || s.Name.Local != "member" {
				return nil, d.fail("struct", ErrXML)
			}
			if err := d.expect("name", false); err != nil {
				return nil, err
			}
			name, err := d.text("name")
			if err != nil {
				return nil, err
			}
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			if err := d.expect("member", true); err != nil {
				return nil, err
			}
			out[name] = v
		}
	case "nil":
		return nil, d.expect("nil", true)
	}
	s, err := d.text(kind)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "string", "dateTime.iso8601", "base64":
		return s, nil
	case "i4", "int":
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return nil, d.fail(kind, wire.ErrRange)
		}
		return int(n), nil
	case "boolean":
		switch strings.TrimSpace(s) {
		case "1":
			return true, nil
		case "0":
			return false, nil
		}
		return nil, d.fail(kind, wire.ErrRange)
	case "double":
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, d.fail(kind, wire.ErrRange)
		}
		return f, nil
	}
	return nil, d.fail(kind, ErrXML)
}

// text reads character data through the end of element name.
func (d *decoder) text(name string) (string, error) {
	var s []byte
	for {
		t, err := d.dec.Token()
		if err != nil {
			if err == io.EOF {
				return "", d.fail(name, wire.ErrTruncated)
			}
			return "", err
		}
		switch t := t.(type) {
		case xml.CharData:
			s = append(s, t...)
		case xml.EndElement:
			if t.Name.Local != name {
				return "", d.fail(name, ErrXML)
			}
			return string(s), nil
		case xml.StartElement:
			return "", d.fail(name, ErrXML)
		}
	}
}
