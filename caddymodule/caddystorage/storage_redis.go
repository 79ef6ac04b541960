package caddystorage

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/certmagic"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/store/redisstore"
)

func init() {
	caddy.RegisterModule(new(RedisStorage))
}

// RedisStorage is Caddy's storage in Redis (or Valkey, a Redis cluster, or
// Redis behind Sentinel), so that several gamegate nodes share one: Caddy's
// certificates and locks, and gamegate's join codes, allocation counts,
// API limits and discovery's admin changes. Locks expire when their holder
// dies and are renewed while it lives. Set it with the global option:
//
//	{
//		storage redis {
//			address 127.0.0.1:6379
//		}
//	}
//
// Every operation is bounded by timeout: when the server cannot be
// reached, requests that need it fail within it (the relay API and
// discovery answer 503 with Retry-After), and the store is used again as
// soon as it answers. At start the storage tries the server with its
// credentials: credentials or ACL rights the server refuses are a startup
// error naming the address; a server that cannot be reached is logged,
// and the node starts without it.
type RedisStorage struct {
	// The server's host:port; several are a cluster's seed nodes, or
	// Sentinels when master_name is set. Placeholders such as
	// {env.REDIS_ADDRESS} are replaced. Default: 127.0.0.1:6379.
	Address []string `json:"address,omitempty"`
	// The ACL user to authenticate as (needs password). Placeholders are
	// replaced. Default: none (the default user).
	Username string `json:"username,omitempty"`
	// The password (AUTH), best given as a placeholder such as
	// {env.REDIS_PASSWORD} so that it stays out of the configuration.
	// Default: none.
	Password string `json:"password,omitempty"`
	// The database number, in [0, 1048576] (the server's `databases`
	// setting bounds it further); a cluster has only 0. Default: 0.
	DB int `json:"db,omitempty"`
	// Connect with TLS, verifying the server's certificate against the
	// system's roots. Default: false.
	TLS bool `json:"tls,omitempty"`
	// The name the server's certificate is checked against; needs tls.
	// Default: the address's host.
	TLSServerName string `json:"tls_server_name,omitempty"`
	// Do not verify the server's certificate (testing only: anyone on the
	// path can then read and change the storage); needs tls.
	// Default: false.
	TLSInsecureSkipVerify bool `json:"tls_insecure_skip_verify,omitempty"`
	// PEM files of the certificate authorities the server's certificate
	// is verified against, instead of the system's roots (a private CA);
	// needs tls. Placeholders are replaced. Default: none (the system's
	// roots).
	TLSTrustedCACerts []string `json:"tls_trusted_ca_certs,omitempty"`
	// Starts every key, so that several services or fleets share one
	// server; at most 64 characters, no braces or spaces. Nodes that
	// share state must use the same one. Default: gamegate.
	KeyPrefix string `json:"key_prefix,omitempty"`
	// The Sentinel master's name: address then lists Sentinels, and the
	// storage follows the master they name. Placeholders are replaced.
	// Default: none (no Sentinel).
	MasterName string `json:"master_name,omitempty"`
	// How long connecting may take, at most 1m. Default: 1s.
	DialTimeout caddy.Duration `json:"dial_timeout,omitempty"`
	// How long one network read may take, at most 1m. Default: 1s.
	ReadTimeout caddy.Duration `json:"read_timeout,omitempty"`
	// How long one network write may take, at most 1m. Default: 1s.
	WriteTimeout caddy.Duration `json:"write_timeout,omitempty"`
	// How long one storage operation may take, reconnection and retry
	// included, at most 1m: past it the operation fails, and operations
	// on that server fail at once for the next second, so that an API
	// request needing the store gets 503 within this however many
	// operations it makes. Default: 1s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// How long a lock outlives its holder's last renewal, in [1s, 1h];
	// the holder renews it every third of it, and a holder that died
	// leaves it to others after at most this. Default: 10s.
	LockExpiry caddy.Duration `json:"lock_expiry,omitempty"`

	cfg     redisstore.Config
	poolKey string
	store   *redisstore.Store
}

// redisStores holds the open stores by configuration, so that a reload
// keeps the connections and the locks held.
var redisStores = caddy.NewUsagePool()

// storeRange is the range the store's Config holds option opt to, by its
// JSON name.
func storeRange(opt string) caddyglue.IntRange {
	return caddyglue.ConfigRange[redisstore.Config](opt)
}

// storeDurationRange is storeRange for a duration option.
func storeDurationRange(opt string) caddyglue.DurationRange {
	return caddyglue.ConfigDurationRange[redisstore.Config](opt)
}

// CaddyModule returns the Caddy module information.
func (*RedisStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "caddy.storage.redis",
		New: func() caddy.Module { return new(RedisStorage) },
	}
}

// Provision replaces placeholders and opens (or adopts) the store; it does
// not connect.
func (s *RedisStorage) Provision(ctx caddy.Context) error {
	repl := caddy.NewReplacer()
	addrs := make([]string, len(s.Address))
	for i, a := range s.Address {
		addrs[i] = repl.ReplaceKnown(a, "")
	}
	s.cfg = redisstore.Config{
		Addresses:             addrs,
		Username:              repl.ReplaceKnown(s.Username, ""),
		Password:              repl.ReplaceKnown(s.Password, ""),
		DB:                    s.DB,
		TLS:                   s.TLS,
		TLSServerName:         s.TLSServerName,
		TLSInsecureSkipVerify: s.TLSInsecureSkipVerify,
		KeyPrefix:             s.KeyPrefix,
		MasterName:            repl.ReplaceKnown(s.MasterName, ""),
		DialTimeout:           time.Duration(s.DialTimeout),
		ReadTimeout:           time.Duration(s.ReadTimeout),
		WriteTimeout:          time.Duration(s.WriteTimeout),
		Timeout:               time.Duration(s.Timeout),
		LockExpiry:            time.Duration(s.LockExpiry),
	}
	var cas []string
	for _, f := range s.TLSTrustedCACerts {
		cas = append(cas, repl.ReplaceKnown(f, ""))
	}
	if len(cas) > 0 {
		pool := x509.NewCertPool()
		for _, f := range cas {
			b, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("tls_trusted_ca_certs: %w", err)
			}
			if !pool.AppendCertsFromPEM(b) {
				return fmt.Errorf("tls_trusted_ca_certs: %s holds no PEM certificate", f)
			}
		}
		s.cfg.TLSRootCAs = pool
	}
	// The pool key names the CA files rather than the pool (which does
	// not marshal): a changed file takes effect with a new store.
	key, err := json.Marshal(struct {
		redisstore.Config
		CAs []string
	}{s.cfg, cas})
	if err != nil {
		return err
	}
	s.poolKey = string(key)
	cfg := s.cfg
	cfg.Logger = ctx.Logger()
	v, loaded, err := redisStores.LoadOrNew(s.poolKey, func() (caddy.Destructor, error) {
		return redisStoreDestructor{redisstore.New(cfg)}, nil
	})
	if err != nil {
		return err
	}
	s.store = v.(redisStoreDestructor).Store
	if !loaded && s.cfg.Validate() == nil {
		return s.check(ctx)
	}
	return nil
}

// check tries a new store's server with its credentials: refused
// credentials or rights fail the configuration; a server that cannot be
// reached is logged, and the node starts without it (its operations fail
// until it answers).
func (s *RedisStorage) check(ctx caddy.Context) error {
	err := s.store.Check(ctx)
	addrs := strings.Join(s.store.Addresses(), " ")
	if s.cfg.MasterName != "" {
		addrs = "master " + s.cfg.MasterName + " via " + addrs
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redisstore.ErrDenied):
		return fmt.Errorf("redis at %s refuses the configured credentials or rights, or its certificate does not verify (check username, password, the ACL user's commands and keys, and the tls options): %w", addrs, err)
	default:
		// The store logged it, once.
		return nil
	}
}

type redisStoreDestructor struct{ *redisstore.Store }

func (d redisStoreDestructor) Destruct() error { return d.Close() }

// Validate checks every option: the store's (redisstore.Config.Validate,
// with placeholders replaced by Provision), and the pairing of username
// and password as configured (a password given as a placeholder that is
// empty where the configuration is validated is still a password).
func (s *RedisStorage) Validate() error {
	if s.Username != "" && s.Password == "" {
		return errors.New("username needs a password")
	}
	if len(s.TLSTrustedCACerts) > 0 && !s.TLS {
		return errors.New("tls_trusted_ca_certs needs tls")
	}
	return s.cfg.Validate()
}

// Cleanup releases the store; the last configuration using it closes it.
func (s *RedisStorage) Cleanup() error {
	if s.poolKey == "" {
		return nil
	}
	_, err := redisStores.Delete(s.poolKey)
	return err
}

// CertMagicStorage returns the store.
func (s *RedisStorage) CertMagicStorage() (certmagic.Storage, error) {
	return s.store, nil
}

// UnmarshalCaddyfile reads the storage's block.
//
// Syntax:
//
//	storage redis {
//		address <host:port>...
//		username <user>
//		password <password>
//		db <n>
//		tls
//		tls_server_name <name>
//		tls_insecure_skip_verify
//		tls_trusted_ca_certs <pem_file>...
//		key_prefix <prefix>
//		master_name <name>
//		dial_timeout <duration>
//		read_timeout <duration>
//		write_timeout <duration>
//		timeout <duration>
//		lock_expiry <duration>
//	}
func (s *RedisStorage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseModuleBlock(d, "storage redis", nil, func(name string) error {
		var err error
		switch name {
		case "address":
			s.Address, err = caddyglue.ParseArgs(d)
		case "username":
			s.Username, err = caddyglue.ParseSingleArg(d)
		case "password":
			s.Password, err = caddyglue.ParseSingleArg(d)
		case "db":
			s.DB, err = caddyglue.ParseIntIn(d, storeRange(name))
		case "tls":
			err = caddyglue.ParseFlag(d, &s.TLS)
		case "tls_server_name":
			s.TLSServerName, err = caddyglue.ParseSingleArg(d)
		case "tls_insecure_skip_verify":
			err = caddyglue.ParseFlag(d, &s.TLSInsecureSkipVerify)
		case "tls_trusted_ca_certs":
			s.TLSTrustedCACerts, err = caddyglue.ParseArgs(d)
		case "key_prefix":
			s.KeyPrefix, err = caddyglue.ParseSingleArg(d)
		case "master_name":
			s.MasterName, err = caddyglue.ParseSingleArg(d)
		case "dial_timeout":
			s.DialTimeout, err = caddyglue.ParseDurationIn(d, storeDurationRange(name))
		case "read_timeout":
			s.ReadTimeout, err = caddyglue.ParseDurationIn(d, storeDurationRange(name))
		case "write_timeout":
			s.WriteTimeout, err = caddyglue.ParseDurationIn(d, storeDurationRange(name))
		case "timeout":
			s.Timeout, err = caddyglue.ParseDurationIn(d, storeDurationRange(name))
		case "lock_expiry":
			s.LockExpiry, err = caddyglue.ParseDurationIn(d, storeDurationRange(name))
		default:
			return caddyglue.UnknownOption(d, "storage redis", name)
		}
		return err
	})
}

// Interface guards
var (
	_ caddy.Provisioner      = (*RedisStorage)(nil)
	_ caddy.Validator        = (*RedisStorage)(nil)
	_ caddy.CleanerUpper     = (*RedisStorage)(nil)
	_ caddy.StorageConverter = (*RedisStorage)(nil)
	_ caddyfile.Unmarshaler  = (*RedisStorage)(nil)
)
