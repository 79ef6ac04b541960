package cache

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// ETag returns an entity tag for body: a quoted base64url digest of its
// SHA-256, prefixed W/ when weak. It depends on the content only.
func ETag(body []byte, weak bool) string {
	sum := sha256.Sum256(body)
	tag := `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
	if weak {
		return "W/" + tag
	}
	return tag
}

// maxIfNoneMatch bounds the work spent on one If-None-Match header.
const maxIfNoneMatch = 8192

// IfNoneMatch reports whether an If-None-Match header value matches etag
// under the weak comparison that RFC 9110 prescribes for If-None-Match: two
// tags match when their opaque parts are equal, whatever their W/ prefixes.
//
// Beyond the RFC grammar it accepts what real clients send: "*", a
// comma-separated list, tags with or without quotes (a shipped game client
// sends the bare value it read from a weak ETag), and optional whitespace.
// Values over 8 KiB never match. It allocates nothing.
func IfNoneMatch(header, etag string) bool {
	if header == "" || len(header) > maxIfNoneMatch {
		return false
	}
	want := opaque(etag)
	for len(header) > 0 {
		var item string
		// A quoted tag may contain commas: take up to its closing quote.
		h := strings.TrimLeft(header, " \t")
		body := strings.TrimPrefix(h, "W/")
		if strings.HasPrefix(body, `"`) {
			end := strings.IndexByte(body[1:], '"')
			if end < 0 {
				item, header = h, ""
			} else {
				cut := len(h) - len(body) + 1 + end + 1
				item, header = h[:cut], h[cut:]
				// Skip to the next comma.
				if i := strings.IndexByte(header, ','); i >= 0 {
					header = header[i+1:]
				} else {
					header = ""
				}
			}
		} else if i := strings.IndexByte(h, ','); i >= 0 {
			item, header = h[:i], h[i+1:]
		} else {
			item, header = h, ""
		}
		item = strings.TrimSpace(item)
		if item == "*" {
			return true
		}
		if item != "" && opaque(item) == want {
			return true
		}
	}
	return false
}

// opaque strips an entity tag to its opaque part: no W/ prefix, no quotes.
func opaque(tag string) string {
	tag = strings.TrimSpace(tag)
	tag = strings.TrimPrefix(tag, "W/")
	if len(tag) >= 2 && tag[0] == '"' && tag[len(tag)-1] == '"' {
		return tag[1 : len(tag)-1]
	}
	return tag
}
