package relay

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/google/uuid"

	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// Allocation is what a client is given to use the relay: an ID, the key that
// signs its BINDs, the most peers it may accept, and its connection data,
// the sealed form of all this that the client hands back in BIND and that
// peers send in CONNECT_REQUEST.
type Allocation struct {
	ID             wirerelay.AllocationID
	Key            [wirerelay.KeySize]byte
	MaxConnections int
	Region         string
	// Expires bounds when the allocation may first be bound; a binding
	// lives on while it has traffic.
	Expires time.Time
	// BindNetwork, when valid, is the only network the allocation may be
	// bound from: BINDs from other addresses are dropped.
	BindNetwork netip.Prefix
}

// Connection data layout (sealed with AES-256-GCM under a key derived from a
// server secret):
//
//	version (1) = 2 | nonce (12) | seal(allocation ID (16), key (64),
//	max connections u16 BE, expiry u64 BE unix ms) with a 16-byte tag
//
// 119 bytes in all, under the 255 the protocol allows. The length is fixed,
// so the zero padding the shipped client adds after it is ignored. Any relay
// holding the secret can open it: no shared database is needed to validate
// a BIND. The version byte is authenticated as additional data.
//
// Version 3 is version 2 with the allocation's BindNetwork after the
// expiry: its address (16 bytes; an IPv4 network as IPv4-mapped IPv6) and
// prefix length (1 byte, in the bits of its own family), 136 bytes in all.
// Only allocations with a BindNetwork are sealed with it, so relays of
// earlier versions open every other allocation.
//
// Version 2 and 3 keys are HKDF-SHA256(secret, info sealKeyInfo). Version 1 (keys
// were one SHA-256 of a context string and the secret) is still opened, so
// that allocations made before an upgrade keep binding until they expire
// (allocation_ttl); nothing is sealed with it.
const (
	sealVersion       = 2
	boundSealVersion  = 3
	legacySealVersion = 1
	sealKeyInfo       = "gamegate relay connection data v2"
	sealNonceLen      = 12
	sealPlainLen      = 16 + wirerelay.KeySize + 2 + 8
	ConnectionDataLen = 1 + sealNonceLen + sealPlainLen + 16

	sealNetworkLen         = 16 + 1
	ConnectionDataBoundLen = ConnectionDataLen + sealNetworkLen
)

// Errors from opening connection data.
var (
	ErrConnectionData = errors.New("connection data cannot be opened")
)

// Sealer seals and opens connection data. The first secret seals; every
// secret opens, so secrets can be rotated by adding a new one in front and
// removing the old one once its allocations have expired.
type Sealer struct {
	aeads  []cipher.AEAD // version 2, one per secret
	legacy []cipher.AEAD // version 1, one per secret, for opening only
}

// MinSecretLen is the fewest bytes of a secret NewSealer accepts. Secrets
// should carry at least 256 bits of entropy.
const MinSecretLen = 16

// NewSealer derives an AES-256-GCM key from each secret with HKDF-SHA256.
// Each secret must be at least MinSecretLen bytes; an error names the
// first that is not, counting from 1.
func NewSealer(secrets ...[]byte) (*Sealer, error) {
	if len(secrets) == 0 {
		return nil, errors.New("at least one secret is required")
	}
	s := &Sealer{}
	for i, secret := range secrets {
		if len(secret) < MinSecretLen {
			return nil, fmt.Errorf("secret %d is %d bytes, want at least %d", i+1, len(secret), MinSecretLen)
		}
		k, err := hkdf.Key(sha256.New, secret, nil, sealKeyInfo, 32)
		if err != nil {
			return nil, err
		}
		aead, err := newGCM(k)
		if err != nil {
			return nil, err
		}
		old := sha256.Sum256(append([]byte("gamegate relay connection data\x00"), secret...))
		legacy, err := newGCM(old[:])
		if err != nil {
			return nil, err
		}
		s.aeads = append(s.aeads, aead)
		s.legacy = append(s.legacy, legacy)
	}
	return s, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Seal returns the connection data of a.
func (s *Sealer) Seal(a *Allocation) ([]byte, error) {
	if a.MaxConnections < 0 || a.MaxConnections > 0xFFFF {
		return nil, errors.New("relay: max connections out of range")
	}
	out := make([]byte, 1+sealNonceLen, ConnectionDataBoundLen)
	out[0] = sealVersion
	if _, err := rand.Read(out[1 : 1+sealNonceLen]); err != nil {
		return nil, err
	}
	var plain [sealPlainLen + sealNetworkLen]byte
	copy(plain[0:16], a.ID[:])
	copy(plain[16:16+wirerelay.KeySize], a.Key[:])
	binary.BigEndian.PutUint16(plain[80:82], uint16(a.MaxConnections))
	binary.BigEndian.PutUint64(plain[82:90], uint64(a.Expires.UnixMilli()))
	n := sealPlainLen
	if p := a.BindNetwork; p.IsValid() {
		out[0] = boundSealVersion
		addr := p.Masked().Addr().As16()
		copy(plain[sealPlainLen:], addr[:])
		plain[sealPlainLen+16] = byte(p.Bits())
		n += sealNetworkLen
	}
	return s.aeads[0].Seal(out, out[1:1+sealNonceLen], plain[:n], out[:1]), nil
}

// Open authenticates and decrypts connection data (trailing bytes, such as
// the shipped client's zero padding, are ignored) into a. Region is not
// carried and is left unchanged.
func (s *Sealer) Open(data []byte, a *Allocation) error {
	if len(data) < ConnectionDataLen {
		return ErrConnectionData
	}
	aeads, n := s.aeads, ConnectionDataLen
	switch data[0] {
	case sealVersion:
	case boundSealVersion:
		n = ConnectionDataBoundLen
	case legacySealVersion:
		aeads = s.legacy
	default:
		return ErrConnectionData
	}
	if len(data) < n {
		return ErrConnectionData
	}
	data = data[:n]
	var plain [sealPlainLen + sealNetworkLen]byte
	for _, aead := range aeads {
		p, err := aead.Open(plain[:0], data[1:1+sealNonceLen], data[1+sealNonceLen:], data[:1])
		if err != nil {
			continue
		}
		var network netip.Prefix
		if len(p) == sealPlainLen+sealNetworkLen {
			addr := netip.AddrFrom16([16]byte(p[sealPlainLen : sealPlainLen+16]))
			bits := int(p[sealPlainLen+16])
			if addr.Is4In6() {
				addr = addr.Unmap()
			}
			if network = netip.PrefixFrom(addr, bits); !network.IsValid() {
				return ErrConnectionData // sealed by us, so never; but never trust a length
			}
		}
		copy(a.ID[:], p[0:16])
		copy(a.Key[:], p[16:16+wirerelay.KeySize])
		a.MaxConnections = int(binary.BigEndian.Uint16(p[80:82]))
		a.Expires = time.UnixMilli(int64(binary.BigEndian.Uint64(p[82:90])))
		a.BindNetwork = network
		return nil
	}
	return ErrConnectionData
}

// NewAllocation returns an allocation with a random ID (a version 4 UUID) and
// key.
func NewAllocation(maxConnections int, region string, expires time.Time) (*Allocation, error) {
	id, err := uuid.NewRandom()
	if err != nil {
		return nil, err
	}
	a := &Allocation{ID: wirerelay.AllocationID(id), MaxConnections: maxConnections, Region: region, Expires: expires}
	if _, err := rand.Read(a.Key[:]); err != nil {
		return nil, err
	}
	return a, nil
}
