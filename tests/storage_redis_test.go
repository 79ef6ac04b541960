package tests

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	"github.com/gamegate/gamegate/store/redisstore"
)

// relayAPIOnRedis is a Caddyfile serving the relay allocations API at
// addr, with storage redis of the given options.
func relayAPIOnRedis(addr, storage string) string {
	return fmt.Sprintf(`{
	storage redis {%s
	}
}
http://%s {
	relay_allocations {
		secrets %s
		insecure_no_auth
		public_address 203.0.113.8:7777
	}
}
`, storage, addr, relayAPISecret)
}

// Join codes live in the configured storage: with storage redis, an
// allocation and its join code are records in Redis, and a join reads them
// back from there.
func TestRedisStorageHoldsJoinCodes(t *testing.T) {
	r := testutil.SharedRedis(t)
	prefix := testutil.RedisPrefix(t)
	addr := testutil.FreeTCPAddr(t)
	t.Setenv("GAMEGATE_TEST_REDIS_ADDRESS", r.Addr)
	testcaddy.Start(t, relayAPIOnRedis(addr, `
		address {env.GAMEGATE_TEST_REDIS_ADDRESS}
		key_prefix `+prefix))
	base := "http://" + addr
	host := allocateOK(t, base, "", `{"maxConnections": 2}`)
	code := joinCodeOK(t, base, "", host.AllocationID, http.StatusCreated)
	for _, key := range []string{"gamegate/relay/allocations/" + host.AllocationID, "gamegate/relay/joincodes/" + code} {
		if got := r.Do(t, "EXISTS", "{"+prefix+"}f:"+key); got != ":1" {
			t.Fatalf("EXISTS %s in Redis: got %s, want :1", key, got)
		}
	}
	if j := joinOK(t, base, "", code); !bytes.Equal(j.HostConnectionData, host.ConnectionData) {
		t.Fatal("hostConnectionData differs from the host's connectionData")
	}
}

// With tls and tls_trusted_ca_certs, the storage verifies a Redis whose
// certificate a private CA issued (the system's roots do not know it),
// and works through it.
func TestRedisStorageTLSWithPrivateCA(t *testing.T) {
	// redis-server may run as nobody: a directory it can read, unlike
	// t.TempDir's.
	dir, err := os.MkdirTemp("", "gamegate-redis-tls-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	caFile, certFile, keyFile := writePrivateCA(t, dir)
	tlsAddr := testutil.FreeTCPAddr(t)
	_, tlsPort, _ := strings.Cut(tlsAddr, ":")
	testutil.StartRedis(t, testutil.RedisOptions{Args: []string{"--tls-port", tlsPort,
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", caFile, "--tls-auth-clients", "no"}})
	prefix := testutil.RedisPrefix(t)
	addr := testutil.FreeTCPAddr(t)
	testcaddy.Start(t, relayAPIOnRedis(addr, `
		address `+tlsAddr+`
		tls
		tls_trusted_ca_certs `+caFile+`
		key_prefix `+prefix))
	base := "http://" + addr
	host := allocateOK(t, base, "", `{"maxConnections": 2}`)
	joinCodeOK(t, base, "", host.AllocationID, http.StatusCreated)

	// Without the CA, the certificate does not verify: a
	// misconfiguration (a startup error), not an outage.
	s := redisstore.New(redisstore.Config{Addresses: []string{tlsAddr}, TLS: true, KeyPrefix: prefix})
	defer s.Close()
	if err := s.Check(context.Background()); !errors.Is(err, redisstore.ErrDenied) || errors.Is(err, redisstore.ErrUnavailable) {
		t.Fatalf("a server whose certificate the system's roots do not verify: got %v, want ErrDenied", err)
	}
}

// writePrivateCA writes a CA and a certificate it issued for 127.0.0.1,
// as PEM files in dir.
func writePrivateCA(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gamegate test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "redis"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	caCert, _ := x509.ParseCertificate(caDER)
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("redis.pem", "CERTIFICATE", leafDER), write("redis.key", "EC PRIVATE KEY", keyDER)
}
