package relay

import (
	"errors"
	"io"
	"strings"

	"github.com/google/uuid"

	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// Join codes are JoinCodeLen characters drawn uniformly from
// JoinCodeAlphabet, which leaves out characters that look alike (0/O, 1/I,
// 5/S, ...). Unity documents join codes as case-insensitive, six to twelve
// characters from this alphabet.
const (
	JoinCodeAlphabet = "6789BCDFGHJKLMNPQRTW"
	JoinCodeLen      = 6

	joinCodeMaxLen = 12 // the longest join code Unity documents
	// A joinCode longer than this is refused with 400 rather than looked up.
	joinCodeMaxInput = 64
	// How many fresh codes are drawn before giving up on finding one that
	// no live code holds: with 20^6 codes this only fails when storage does.
	joinCodeAttempts = 10
)

// NewJoinCode draws a join code from r: each character uniformly from
// JoinCodeAlphabet (bytes at or above the largest multiple of the alphabet's
// size are drawn again, so there is no modulo bias).
func NewJoinCode(r io.Reader) (string, error) {
	const n = len(JoinCodeAlphabet)
	const limit = 256 - 256%n
	var code, buf [JoinCodeLen]byte
	for i := 0; i < JoinCodeLen; {
		// Read only what is missing, so no randomness is thrown away.
		chunk := buf[:JoinCodeLen-i]
		if _, err := io.ReadFull(r, chunk); err != nil {
			return "", err
		}
		for _, b := range chunk {
			if int(b) < limit {
				code[i] = JoinCodeAlphabet[int(b)%n]
				i++
			}
		}
	}
	return string(code[:]), nil
}

// NormalizeJoinCode upper-cases s and reports whether it has the form of a
// join code: 6 to 12 characters of JoinCodeAlphabet.
func NormalizeJoinCode(s string) (string, bool) {
	if len(s) < JoinCodeLen || len(s) > joinCodeMaxLen {
		return "", false
	}
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
			b[i] = c
		}
		if strings.IndexByte(JoinCodeAlphabet, c) < 0 {
			return "", false
		}
	}
	return string(b), true
}

// ParseAllocationID parses a UUID in its canonical text form
// (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, either case).
func ParseAllocationID(s string) (wirerelay.AllocationID, error) {
	if len(s) != 36 {
		return wirerelay.AllocationID{}, errors.New("not a UUID")
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return wirerelay.AllocationID{}, errors.New("not a UUID")
	}
	return wirerelay.AllocationID(id), nil
}

// newUUID returns a random (version 4) UUID for a request ID.
func newUUID() string { return uuid.NewString() }
