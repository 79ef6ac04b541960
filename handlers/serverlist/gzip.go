package serverlist

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"strings"
)

// minGzip is the smallest answer also held gzipped: below it the bytes
// saved do not pay for a second encoding.
const minGzip = 1 << 10

// gzipped is body compressed with gzip, or nil when that saves nothing.
func gzipped(body []byte) []byte {
	if len(body) < minGzip {
		return nil
	}
	var b bytes.Buffer
	b.Grow(len(body) / 4)
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil
	}
	if _, err := zw.Write(body); err != nil || zw.Close() != nil || b.Len() >= len(body) {
		return nil
	}
	return bytes.Clone(b.Bytes())
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip:
// a gzip (or x-gzip) coding with a quality above 0, or * above 0 where
// gzip is not named (RFC 9110, 12.5.3).
func acceptsGzip(header string) bool {
	star, named := false, false
	for len(header) > 0 {
		var item string
		item, header, _ = strings.Cut(header, ",")
		coding, params, _ := strings.Cut(item, ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "x-gzip" && coding != "*" {
			continue
		}
		ok := quality(params) > 0
		if coding == "*" {
			star = ok
			continue
		}
		if !ok {
			return false
		}
		named = true
	}
	return named || star
}

// quality is the q parameter of an Accept-Encoding item's parameters, 1
// when absent, 0 when malformed.
func quality(params string) float64 {
	for len(params) > 0 {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, v, _ := strings.Cut(p, "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || q < 0 || q > 1 {
				return 0
			}
			return q
		}
	}
	return 1
}
